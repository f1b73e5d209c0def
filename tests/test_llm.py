"""L1/L2 on real HTTP against a fake OpenAI/Anthropic server on 127.0.0.1."""
import json
import os
import time

import pytest

from compaction_guard import operations, run_chain
from compaction_guard.llm import AnthropicSummarizer, OpenAISummarizer
from compaction_guard.providers import ProviderChoice, resolve
from compaction_guard.settings import DEFAULT
from compaction_guard.state import StateStore, state_path
from conftest import run_guard
from modelkit.behaviours import GOOD, B, FakeLLM, ok

FAST = DEFAULT.with_overrides(llm_backoff_seconds=0.05)
TEXT = "\n".join(
    f"user: step {i}: check service-{i} on web-{i:02d} and report latency\n"
    f"assistant: service-{i} answers in {100 + i * 7} ms; config /etc/svc/{i}.yaml; owner team-{i % 4}."
    for i in range(40))


def openai(fake, key="sk-test-123", settings=FAST, timeout=5.0):
    return OpenAISummarizer(fake.url + "/v1", "gpt-test", key, timeout, settings)


def anthropic(fake, key="ak-test-456", settings=FAST, timeout=5.0):
    return AnthropicSummarizer(fake.url, "claude-test", key, timeout, settings)


def test_openai_l1_request_and_success():
    with FakeLLM([ok()]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    assert r.level_used == 1 and r.summary == GOOD and r.attempts[0].valid
    req = fake.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-test-123"
    body = req["body"]
    assert body["model"] == "gpt-test" and body["temperature"] == 0.3 and body["max_tokens"] > 0
    assert body["messages"][0]["role"] == "system" and "identifiers" in body["messages"][0]["content"]
    user = body["messages"][1]["content"]
    assert "<<<CONVERSATION" in user and TEXT in user     # the input is fenced as data
    assert "reasoning_effort" not in body


def test_l2_is_aggressive_on_the_wire():
    with FakeLLM([B("empty"), ok()]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    assert r.level_used == 2
    l1, l2 = (q["body"] for q in fake.requests)
    assert l2["temperature"] <= 0.2 and l2["temperature"] < l1["temperature"]
    assert l2["max_tokens"] < l1["max_tokens"]
    assert l2["reasoning_effort"] == "low" and l2["chat_template_kwargs"] == {"enable_thinking": False}
    assert "durable facts" in l2["messages"][0]["content"]


@pytest.mark.parametrize("behaviour,kind", [
    (B("empty"), "empty"), (B("loop"), "repetition"), (B("inflation"), "inflation"), (B("garbage"), "garbled"),
    (B("reasoning_only"), "reasoning_only"), (B("refusal"), "refusal"), (B("cut_off"), "cut_off"),
])
def test_openai_failures_escalate_at_once(behaviour, kind):
    with FakeLLM([behaviour, ok()]) as fake:
        r = run_chain(TEXT if kind != "inflation" else TEXT[:3000], openai(fake), FAST)
    assert r.level_used == 2, r.attempts[0].reasons
    assert r.attempts[0].failures == [kind] and not r.attempts[0].valid
    assert len(fake.requests) == 2


@pytest.mark.parametrize("behaviour,kind", [
    (B("empty"), "empty"), (B("loop"), "repetition"), (B("garbage"), "garbled"),
    (B("reasoning_only"), "reasoning_only"), (B("refusal"), "refusal"), (B("cut_off"), "cut_off"),
])
def test_anthropic_failures_escalate_at_once(behaviour, kind):
    with FakeLLM([behaviour, ok()]) as fake:
        r = run_chain(TEXT, anthropic(fake), FAST)
    assert r.level_used == 2 and r.attempts[0].failures == [kind]
    l1, l2 = fake.requests
    assert l1["path"] == "/v1/messages" and l1["headers"]["x-api-key"] == "ak-test-456"
    assert l1["headers"]["anthropic-version"] == "2023-06-01"
    assert "thinking" not in l1["body"] and l2["body"]["thinking"] == {"type": "disabled"}
    if kind == "repetition":     # a colder model loops more: L1's temperature is kept (Anthropic has no penalty)
        assert l2["body"]["temperature"] == l1["body"]["temperature"]
        assert r.attempts[1].request["penalties"] == "none: this API has no repetition penalty"
    else:
        assert l2["body"]["temperature"] < l1["body"]["temperature"]
    assert l2["body"]["max_tokens"] < l1["body"]["max_tokens"]
    assert "durable facts" in l2["body"]["system"]


@pytest.mark.parametrize("behaviour,why", [
    (B("loop"), "L1 looped"), (B("garbage"), "L1 was garbled"), (B("cut_off"), "L1 was cut off"), (B("empty"), None),
])
def test_l2_answers_the_way_l1_failed(behaviour, why):
    """Failure-aware L2 (one decision for the chain and the proxy): a loop gets repetition
    penalties and keeps L1's temperature, garbage a colder model, a cut-off a smaller target."""
    with FakeLLM([behaviour, ok()]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    l1, l2 = (q["body"] for q in fake.requests)
    assert (why is None) == ("adjustment" not in r.attempts[1].request)
    if why:
        assert r.attempts[1].request["adjustment"].startswith(why)
    if why == "L1 looped":
        assert l2["frequency_penalty"] == 0.8 and l2["presence_penalty"] == 0.4 and l2["repeat_penalty"] == 1.3
        assert l2["temperature"] == l1["temperature"]
    else:
        assert "frequency_penalty" not in l2 and "repeat_penalty" not in l2
    if why == "L1 was garbled":
        assert l2["temperature"] <= 0.05
    if why == "L1 was cut off":
        with FakeLLM([B("empty")]) as other:        # L2 after a failure that changes nothing
            plain = run_chain(TEXT, openai(other), FAST).attempts[1].request
        assert l2["max_tokens"] < plain["max_tokens"]


def test_closed_reasoning_is_stripped_with_a_warning():
    with FakeLLM([B("think_then_ok")]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    assert r.level_used == 1 and r.summary == GOOD
    assert any(w.startswith("reasoning_stripped") for w in r.attempts[0].warnings)


def test_429_honours_retry_after_then_succeeds():
    with FakeLLM([B("status", code=429, retry_after=1), ok()]) as fake:
        t0 = time.monotonic()
        r = run_chain(TEXT, openai(fake), FAST)
        waited = time.monotonic() - t0
    assert r.level_used == 1 and r.attempts[0].retries == 1
    assert waited >= 1.0 and len(fake.requests) == 2


def test_500_is_retried_a_bounded_number_of_times():
    with FakeLLM([B("status", code=500)]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    assert r.level_used == 3
    assert [a.failures for a in r.attempts] == [["error"], ["error"], []]
    assert r.attempts[0].retries == FAST.llm_max_retries
    assert len(fake.requests) == 2 * (FAST.llm_max_retries + 1)


def test_400_is_not_retried():
    with FakeLLM([B("status", code=400, message="bad request")]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    assert r.attempts[0].failures == ["error"] and r.attempts[0].retries == 0
    assert len(fake.requests) == 2


def test_retry_after_past_the_deadline_fails_the_level_without_waiting():
    with FakeLLM([B("status", code=429, retry_after=3600)]) as fake:
        t0 = time.monotonic()
        r = run_chain(TEXT, openai(fake), FAST)
    assert time.monotonic() - t0 < 2 and r.level_used == 3
    assert "past the chain's deadline" in r.attempts[0].reasons["error"]


def test_slower_than_the_timeout_escalates():
    with FakeLLM([B("slow", seconds=3)]) as fake:
        t0 = time.monotonic()
        r = run_chain(TEXT, openai(fake, timeout=0.5), FAST)
    assert time.monotonic() - t0 < 2.5
    assert [a.failures for a in r.attempts] == [["timeout"], ["timeout"], []]


def test_the_whole_chain_has_a_deadline():
    with FakeLLM([B("slow", seconds=5)]) as fake:
        t0 = time.monotonic()
        r = run_chain(TEXT, openai(fake, timeout=30), FAST, deadline_seconds=1.0)
    assert time.monotonic() - t0 < 2.0 and r.level_used == 3
    assert r.attempts[1].failures == ["timeout"]


def test_dropped_connection_escalates_cleanly():
    with FakeLLM([B("drop")]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    assert r.level_used == 3 and r.attempts[0].failures == ["error"]


def test_api_key_echoed_by_a_server_is_scrubbed():
    with FakeLLM([B("status", code=401, message="Incorrect API key provided: sk-test-123")]) as fake:
        r = run_chain(TEXT, openai(fake), FAST)
    assert "sk-test-123" not in json.dumps(r.to_dict())


def test_cli_simulate_on_openai_keeps_the_key_secret(home):
    secret = "sk-live-SECRET-0123456789abcdef"
    with FakeLLM([B("status", code=401, message=f"bad key {secret}"), ok()]) as fake:
        env_key = {"MY_KEY": secret}
        os.environ.update(env_key)
        try:
            p = run_guard("--simulate", "-", "--provider", "openai", "--base-url", fake.url + "/v1", "--model", "m1",
                          "--api-key-env", "MY_KEY", "--format", "json", home=home, stdin=TEXT)
            rep = run_guard("--report", home=home)
        finally:
            os.environ.pop("MY_KEY")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["provider"] == "openai" and doc["model"] == "m1" and doc["level_used"] == 2
    assert fake.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    state_text = state_path(home).read_text()
    for out in (p.stdout, p.stderr, rep.stdout, rep.stderr, state_text):
        assert secret not in out


def test_circuit_breaker_opens_after_three_l3_chains_and_skips_the_llm(home):
    with FakeLLM([B("status", code=500)]) as fake:
        choice = ProviderChoice("openai", "m1", fake.url + "/v1", None, 5.0)
        for _ in range(3):
            r = operations.compact(TEXT, home, settings=FAST, choice=choice)
            assert r.level_used == 3 and not r.breaker_open
        sent = len(fake.requests)
        r = operations.compact(TEXT, home, settings=FAST, choice=choice)
    assert r.breaker_open and r.level_used == 3 and len(fake.requests) == sent   # nothing sent
    assert [a.skipped for a in r.attempts] == [True, True, False]
    rep = operations.report(home, FAST)
    cb = rep["circuit_breaker"]
    assert cb["open_until"] and cb["opened"] == 1 and cb["skipped_chains"] == 1
    assert rep["level_usage"]["l3_deterministic"] == 4
    text = run_guard("--report", home=home).stdout
    assert "Circuit breaker: OPEN until" in text


def test_breaker_closes_after_cooldown_when_the_llm_recovers(home):
    quick = FAST.with_overrides(breaker_cooldown_seconds=0.2)
    per_chain = 2 * (FAST.llm_max_retries + 1)      # two LLM levels, each tried 1 + retries times
    with FakeLLM([B("status", code=500)] * (3 * per_chain) + [ok()]) as fake:
        choice = ProviderChoice("openai", "m1", fake.url + "/v1", None, 5.0)
        for _ in range(3):
            operations.compact(TEXT, home, settings=quick, choice=choice)
        time.sleep(0.3)
        r = operations.compact(TEXT, home, settings=quick, choice=choice)
    assert r.level_used == 1 and not r.breaker_open
    st = StateStore(state_path(home), quick).read()
    assert st["circuit"]["consecutive_l3"] == 0 and st["circuit"]["events"][-1]["event"] == "closed"


def test_compact_prints_the_summary_and_json_matches_simulate(tmp_path, home):
    src = tmp_path / "history.txt"
    src.write_text(TEXT)
    with FakeLLM([ok()]) as fake:
        p = run_guard("--compact", "--input", src, "--provider", "openai", "--base-url", fake.url + "/v1",
                      "--model", "m1", home=home)
        assert p.returncode == 0 and p.stdout.strip() == GOOD
        j = run_guard("--compact", "--input", src, "--provider", "openai", "--base-url", fake.url + "/v1",
                      "--model", "m1", "--format", "json", home=home)
        s = run_guard("--simulate", "-", "--provider", "openai", "--base-url", fake.url + "/v1", "--model", "m1",
                      "--format", "json", home=home, stdin=TEXT)
    a, b = json.loads(j.stdout), json.loads(s.stdout)
    assert set(a) == set(b) and a["result"] == b["result"] == GOOD
    rep = operations.report(home)
    assert rep["level_usage"]["l1_normal"] == 3


def test_compact_reads_stdin_and_a_dead_provider_still_yields_a_summary(home):
    p = run_guard("--compact", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m1",
                  "--timeout", "2", home=home, stdin=TEXT)
    assert p.returncode == 0 and "[TRUNCATED:" in p.stdout


def test_fault_injection_from_the_cli(home):
    p = run_guard("--simulate", TEXT, "--fault", "L1=empty,L2=garbled", "--format", "json", home=home)
    doc = json.loads(p.stdout)
    assert [a["failures"] for a in doc["attempts"]] == [["empty"], ["garbled"], []] and doc["level_used"] == 3
    p = run_guard("--simulate", TEXT, "--fault", "L1=timeout,L2=repetition", "--format", "json", home=home)
    doc = json.loads(p.stdout)
    assert [a["failures"] for a in doc["attempts"]][:2] == [["timeout"], ["repetition"]]
    bad = run_guard("--simulate", TEXT, "--fault", "L3=empty", home=home)
    assert bad.returncode == 2 and "LEVEL=KIND" in bad.stderr


def test_openclaw_json_compaction_model_is_used(home, monkeypatch):
    with FakeLLM([ok()]) as fake:
        (home / "openclaw.json").write_text(
            "// OpenClaw config (JSON5)\n{\n  agents: { defaults: { compaction: { model: 'myproxy/summarizer-1' } } },\n"
            f"  models: {{ providers: {{ myproxy: {{ baseUrl: '{fake.url}/v1', api: 'openai-completions', "
            "apiKey: '${PROXY_KEY}', }, }, },\n}\n")
        monkeypatch.setenv("PROXY_KEY", "pk-123")
        choice = resolve({}, home)
        assert (choice.provider, choice.model, choice.api_key_env) == ("openai", "summarizer-1", "PROXY_KEY")
        r = operations.compact(TEXT, home, settings=FAST)
    assert r.level_used == 1 and fake.requests[0]["body"]["model"] == "summarizer-1"
    assert fake.requests[0]["headers"]["authorization"] == "Bearer pk-123"


def test_openclaw_json_without_a_key_falls_back_to_extractive(home, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (home / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"compaction": {"model": "openai/gpt-4o-mini"}}}}))
    choice = resolve({}, home)
    assert choice.provider == "extractive" and "OPENAI_API_KEY is not set" in choice.note


def test_flags_beat_environment_beat_openclaw(home, monkeypatch):
    monkeypatch.setenv("GUARD_PROVIDER", "anthropic")
    monkeypatch.setenv("GUARD_MODEL", "claude-x")
    monkeypatch.setenv("GUARD_TIMEOUT", "7")
    c = resolve({}, home)
    assert (c.provider, c.model, c.base_url, c.api_key_env, c.timeout) == \
        ("anthropic", "claude-x", "https://api.anthropic.com", "ANTHROPIC_API_KEY", 7.0)
    assert c.origin["provider"] == "environment"
    c = resolve({"provider": "openai", "model": "gpt-y", "base_url": "http://h/v1"}, home)
    assert (c.provider, c.model, c.base_url, c.origin["model"]) == ("openai", "gpt-y", "http://h/v1", "flag")
