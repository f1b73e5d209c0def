"""`compaction-guard serve`: the validating proxy, tested with the official OpenAI and
Anthropic SDKs as clients of a real uvicorn server on 127.0.0.1, and the fake
OpenAI/Anthropic server (real HTTP) as the upstream."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

from compaction_guard.errors import GuardError  # noqa: E402
from compaction_guard.providers import ProviderChoice  # noqa: E402
from compaction_guard.serve import serve  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402
from compaction_guard.state import StateStore, state_path  # noqa: E402

from modelkit.behaviours import GOOD, B, FakeLLM, ok  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ("user: the deploy of v2.3.1 to staging failed on web-3 with exit 137 (OOM); "
           "assistant: raised the memory limit to 2 GiB in deploy/values.yaml and re-ran it; it passed. ") * 12
SYSTEM = "You summarize conversations for an agent's memory."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Running:
    """serve() in a thread; stopped like SIGTERM does (should_exit)."""

    def __init__(self, home, choice, settings=DEFAULT, **kw):
        self.port = free_port()
        self.box = {}
        self.thread = threading.Thread(target=self._run, args=(home, choice, settings), kwargs=kw, daemon=True)

    def _run(self, home, choice, settings, **kw):
        try:
            serve(home, choice, settings, port=self.port, ready=lambda s: self.box.setdefault("server", s), **kw)
        except BaseException as exc:        # noqa: BLE001 - surfaced to the test
            self.box["error"] = exc

    def __enter__(self):
        self.thread.start()
        for _ in range(3000):           # up to 60 s: the worker processes start first (a busy machine)
            server = self.box.get("server")
            if "error" in self.box:
                raise self.box["error"]
            if server is not None and server.started:
                return self
            time.sleep(0.02)
        raise RuntimeError("serve did not start")

    def __exit__(self, *exc):
        self.box["server"].should_exit = True
        self.thread.join(15)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"


def upstream(fake, provider="openai"):
    base = fake.url + ("/v1" if provider == "openai" else "")
    return ProviderChoice(provider, model="up-model", base_url=base, api_key_env="UPSTREAM_KEY", timeout=10)


def oai(run):
    return openai.OpenAI(base_url=run.url + "/v1", api_key="unused", max_retries=0)


def ant(run):
    return anthropic.Anthropic(base_url=run.url, api_key="unused", max_retries=0)


def state(home):
    return StateStore(state_path(home), DEFAULT).read()


MSGS = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": HISTORY}]


# ------------------------------------------------------------------ OpenAI clients
def test_openai_a_loop_escalates_to_a_failure_aware_l2_on_the_clients_own_request(home, monkeypatch):
    monkeypatch.setenv("UPSTREAM_KEY", "sk-upstream-secret-1")
    with FakeLLM([B("loop"), ok()]) as fake, Running(home, upstream(fake)) as run:
        r = oai(run).chat.completions.with_raw_response.create(model="guard", messages=MSGS, max_tokens=600)
        reply = r.parse()
    assert r.headers["x-compaction-guard-level"] == "2" and r.headers["x-compaction-guard-failures"] == "repetition"
    assert reply.choices[0].message.content == GOOD and reply.choices[0].finish_reason == "stop"
    l1, l2 = (q["body"] for q in fake.requests)
    assert l1["messages"] == MSGS and l1["model"] == "up-model" and l1["max_tokens"] == 600
    assert l2["messages"][0]["content"].startswith(SYSTEM) and "Be brief" in l2["messages"][0]["content"]
    assert l2["messages"][1:] == MSGS[1:]                              # the client's prompt kept
    assert l2["frequency_penalty"] == 0.8 and l2["repeat_penalty"] == 1.3 and l2["max_tokens"] < 600
    assert fake.requests[0]["headers"]["authorization"] == "Bearer sk-upstream-secret-1"
    st = state(home)
    assert st["level_usage"]["l2_aggressive"] == 1 and st["chain_history"][0]["attempts"][0]["failures"] == ["repetition"]
    assert st["chain_history"][0]["attempts"][1]["adjustment"].startswith("L1 looped")
    assert "sk-upstream-secret-1" not in state_path(home).read_text()


def test_openai_stream_gets_keepalives_while_it_waits_and_then_the_summary(home):
    settings = DEFAULT.with_overrides(serve_keepalive_seconds=0.2)
    with FakeLLM([B("slow", seconds=1.0)]) as fake, Running(home, upstream(fake), settings) as run:
        chunks = list(oai(run).chat.completions.create(model="guard", messages=MSGS, stream=True))
        req = urllib.request.Request(run.url + "/v1/chat/completions", method="POST",
                                     data=json.dumps({"model": "g", "messages": MSGS, "stream": True}).encode(),
                                     headers={"Content-Type": "application/json"})
        raw = urllib.request.urlopen(req, timeout=30).read().decode()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == GOOD
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert raw.count(": keep-alive") >= 3 and ": compaction-guard level=1 failures=none" in raw
    assert raw.rstrip().endswith("data: [DONE]")


def test_a_fast_stream_carries_the_level_in_its_headers(home):
    with FakeLLM([B("garbage"), ok()]) as fake, Running(home, upstream(fake)) as run:
        with oai(run).chat.completions.with_streaming_response.create(model="g", messages=MSGS, stream=True) as r:
            assert r.headers["x-compaction-guard-level"] == "2"
            assert r.headers["x-compaction-guard-failures"] == "garbled"
            text = "".join(c.choices[0].delta.content or "" for c in r.parse() if c.choices)
    assert text == GOOD
    assert fake.requests[1]["body"]["temperature"] <= 0.05          # garbage: a colder L2


# ------------------------------------------------------------------ Anthropic clients
def test_anthropic_client_and_upstream_streamed_and_not(home, monkeypatch):
    monkeypatch.setenv("UPSTREAM_KEY", "ak-upstream-2")
    with FakeLLM([B("empty"), ok(), ok()]) as fake, Running(home, upstream(fake, "anthropic")) as run:
        r = ant(run).messages.with_raw_response.create(
            model="guard", max_tokens=700, system=SYSTEM, thinking={"type": "enabled", "budget_tokens": 1024},
            messages=[{"role": "user", "content": HISTORY}])
        msg = r.parse()
        with ant(run).messages.stream(model="guard", max_tokens=700, system=SYSTEM,
                                      messages=[{"role": "user", "content": HISTORY}]) as st:
            streamed = "".join(st.text_stream)
            final = st.get_final_message()
    assert r.headers["x-compaction-guard-level"] == "2" and msg.content[0].text == GOOD
    assert msg.stop_reason == "end_turn" and streamed == GOOD and final.stop_reason == "end_turn"
    l1, l2, l1b = fake.requests
    assert l1["path"] == "/v1/messages" and l1["headers"]["x-api-key"] == "ak-upstream-2"
    assert l1["body"]["thinking"]["type"] == "enabled" and l2["body"]["thinking"] == {"type": "disabled"}
    assert l2["body"]["system"].startswith(SYSTEM) and "Be brief" in l2["body"]["system"]
    assert l2["body"]["max_tokens"] < 700 and l1b["body"]["stream"] is False


def test_an_anthropic_client_through_an_openai_upstream_loop_says_it_has_no_penalty_to_add(home):
    with FakeLLM([B("loop"), ok()]) as fake, Running(home, upstream(fake, "anthropic")) as run:
        ant(run).messages.create(model="g", max_tokens=500, messages=[{"role": "user", "content": HISTORY}])
    st = state(home)
    l2 = st["chain_history"][0]["attempts"][1]
    assert l2["level"] == 2 and l2["valid"]
    assert "frequency_penalty" not in fake.requests[1]["body"]


# ------------------------------------------------------------------ failures of the path
def test_upstream_down_every_request_answered_at_l3_and_the_breaker_opens(home):
    dead = ProviderChoice("openai", model="m", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    settings = DEFAULT.with_overrides(llm_max_retries=0)
    with Running(home, dead, settings) as run:
        outs = [oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS) for _ in range(4)]
    assert [o.headers["x-compaction-guard-level"] for o in outs] == ["3"] * 4
    text = outs[0].parse().choices[0].message.content
    assert "web-3" in text and "TRUNCATED" in text                      # the conversation's own words
    st = state(home)
    assert st["level_usage"]["l3_deterministic"] == 4
    assert st["circuit"]["open_until"] and st["chain_history"][0]["breaker_open"] is True


def test_observe_returns_the_reply_unchanged_and_records_what_it_would_have_done(home):
    with FakeLLM([B("loop")]) as fake, Running(home, upstream(fake), observe=True) as run:
        r = oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS)
    assert r.headers["x-compaction-guard-observed"] == "would escalate: repetition"
    assert r.parse().choices[0].message.content == " ".join(["The user asked about CI."] * 60)
    assert len(fake.requests) == 1
    st = state(home)
    assert st["level_usage"]["l1_normal"] == 1 and st["failures"][-1]["failure_type"] == "repetition"


def test_a_body_over_the_limit_is_413_and_a_loop_through_the_guard_is_508(home):
    settings = DEFAULT.with_overrides(serve_max_body_bytes=2000)
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake), settings) as run:
        with pytest.raises(openai.APIStatusError) as e:
            oai(run).chat.completions.create(model="g", messages=MSGS)
        assert e.value.status_code == 413
        req = urllib.request.Request(run.url + "/v1/chat/completions", method="POST",
                                     data=json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(),
                                     headers={"Content-Type": "application/json", "X-Compaction-Guard-Hop": "1"})
        with pytest.raises(urllib.error.HTTPError) as e2:
            urllib.request.urlopen(req, timeout=10)
        assert e2.value.code == 508
    assert fake.requests == []


def test_binding_beyond_loopback_needs_a_token_and_the_token_is_checked(home, monkeypatch):
    fake_choice = ProviderChoice("openai", model="m", base_url="http://127.0.0.1:9/v1")
    monkeypatch.delenv("GUARD_SERVE_TOKEN", raising=False)
    with pytest.raises(GuardError, match="GUARD_SERVE_TOKEN"):
        serve(home, fake_choice, DEFAULT, host="0.0.0.0", port=free_port())
    with pytest.raises(GuardError, match="this proxy itself"):
        serve(home, ProviderChoice("openai", model="m", base_url="http://localhost:8742/v1"), DEFAULT, port=8742)
    monkeypatch.setenv("GUARD_SERVE_TOKEN", "tok-123")
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake)) as run:
        with pytest.raises(openai.AuthenticationError):
            oai(run).chat.completions.create(model="g", messages=MSGS)
        good = openai.OpenAI(base_url=run.url + "/v1", api_key="tok-123", max_retries=0)
        assert good.chat.completions.create(model="g", messages=MSGS).choices[0].message.content == GOOD
        assert ant(run).__class__(base_url=run.url, api_key="tok-123").messages.create(
            model="g", max_tokens=300, messages=[{"role": "user", "content": HISTORY}]).content[0].text == GOOD


def test_health_models_and_metrics(home):
    from prometheus_client.parser import text_string_to_metric_families
    with FakeLLM([B("loop"), ok()]) as fake, Running(home, upstream(fake)) as run:
        oai(run).chat.completions.create(model="g", messages=MSGS)
        health = json.loads(urllib.request.urlopen(run.url + "/healthz").read())
        models = oai(run).models.list()
        metrics = urllib.request.urlopen(run.url + "/metrics").read().decode()
    assert health["status"] == "ok" and health["in_flight"] == 0 and "up-model" in health["upstream"]
    assert [m.id for m in models.data] == ["up-model"]
    fams = {f.name: f for f in text_string_to_metric_families(metrics)}
    levels = {s.labels["level"]: s.value for s in fams["compaction_guard_compactions"].samples}
    assert levels["l2_aggressive"] == 1
    fails = {(s.labels["source"], s.labels["kind"]): s.value for s in fams["compaction_guard_failures"].samples}
    assert fails[("serve", "repetition")] == 1           # a request serve answered: the `serve` source


# ------------------------------------------------------------------ load and shutdown
def test_32_concurrent_compactions_against_a_slow_upstream_all_answered_and_counted(home):
    with FakeLLM([B("slow", seconds=1.0)]) as fake, Running(home, upstream(fake)) as run:
        client = oai(run)
        t = time.monotonic()
        with ThreadPoolExecutor(32) as pool:
            outs = list(pool.map(lambda i: client.chat.completions.create(
                model="g", messages=[{"role": "user", "content": f"{HISTORY} (session {i})"}]), range(32)))
        took = time.monotonic() - t
    assert all(o.choices[0].message.content == GOOD for o in outs)
    assert took < 8, took                                     # concurrent, not one after another (32 s)
    st = state(home)
    assert st["level_usage"]["l1_normal"] == 32 and st["totals"]["chain_runs"] == 32 and len(fake.requests) == 32


def test_sigterm_lets_requests_in_flight_finish_and_exits_0(home, tmp_path):
    with FakeLLM([B("slow", seconds=1.5)]) as fake:
        port = free_port()
        env = dict(os.environ, OPENCLAW_STATE_DIR=str(home))
        p = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--port", str(port), "--provider",
                              "openai", "--base-url", fake.url + "/v1", "--model", "m"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.05)
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
            with ThreadPoolExecutor(4) as pool:
                futs = [pool.submit(client.chat.completions.create, model="g", messages=MSGS) for _ in range(4)]
                time.sleep(0.5)
                p.send_signal(signal.SIGTERM)
                outs = [f.result(timeout=30) for f in futs]
            assert p.wait(timeout=30) == 0, p.stderr.read()
        finally:
            if p.poll() is None:
                p.kill()
    assert all(o.choices[0].message.content == GOOD for o in outs)
    assert state(home)["level_usage"]["l1_normal"] == 4


def test_a_reply_that_hands_back_the_previous_summary_is_stale_and_escalates(home):
    """pi's update prompt (OpenClaw compaction) carries the summary being replaced in
    <previous-summary> tags; giving it back unchanged is `stale`."""
    old = ("The user moved CI to GitHub Actions (.github/workflows/ci.yml, Python 3.10-3.13). Publish job pending; it "
           "must run only on tags v*. Latest request: add the coverage badge.")
    new_ = "The badge is added; the publish job now runs on tags v* and uploaded 2.4.0 to PyPI."
    prompt = f"{HISTORY}\n<previous-summary>\n{old}\n</previous-summary>\nUpdate the summary."
    with FakeLLM([ok(old), ok(new_)]) as fake, Running(home, upstream(fake)) as run:
        r = oai(run).chat.completions.with_raw_response.create(
            model="g", messages=[{"role": "user", "content": prompt}])
    assert r.headers["x-compaction-guard-level"] == "2" and r.headers["x-compaction-guard-failures"] == "stale"
    assert r.parse().choices[0].message.content == new_


def test_a_429_with_retry_after_is_retried_and_a_400_is_not(home):
    with FakeLLM([B("status", code=429, retry_after=0), ok()]) as fake, Running(home, upstream(fake)) as run:
        r = oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS)
        assert r.headers["x-compaction-guard-level"] == "1" and len(fake.requests) == 2
    with FakeLLM([B("status", code=400, message="bad model"), ok()]) as fake, Running(home, upstream(fake)) as run:
        r = oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS)
        assert r.headers["x-compaction-guard-level"] == "2" and r.headers["x-compaction-guard-failures"] == "error"
    reasons = state(home)["chain_history"][0]["attempts"][0]
    assert reasons["failures"] == ["error"] and len(fake.requests) == 2


def test_the_breaker_is_shared_across_requests_opens_and_recovers(home):
    """Three compactions in a row at L3 open the breaker for everyone: the next skips the
    upstream; after the cooldown one goes to the model again and closes it."""
    # a cooldown long enough that a busy machine's pause between two requests (a worker process
    # starting, CI's load) does not close the breaker before the 4th looks (1 s did once in CI)
    settings = DEFAULT.with_overrides(llm_max_retries=0, breaker_cooldown_seconds=3.0)
    with FakeLLM([B("status", code=500)] * 6 + [ok()]) as fake, Running(home, upstream(fake), settings) as run:
        client = oai(run)
        levels = [client.chat.completions.with_raw_response.create(model="g", messages=MSGS)
                  .headers["x-compaction-guard-level"] for _ in range(4)]
        assert levels == ["3"] * 4 and len(fake.requests) == 6          # the 4th skipped the upstream
        assert state(home)["chain_history"][0]["breaker_open"] is True
        time.sleep(3.2)
        r = client.chat.completions.with_raw_response.create(model="g", messages=MSGS)
    assert r.headers["x-compaction-guard-level"] == "1" and len(fake.requests) == 7
    st = state(home)
    assert not st["circuit"].get("open_until") and [e["event"] for e in st["circuit"]["events"]][-1] == "closed"


def test_a_pi_style_request_is_judged_on_its_fenced_conversation(home):
    """OpenClaw compacts through pi: the history fenced in <conversation>, the previous
    summary in <previous-summary>, then long English instructions. A Chinese history
    summarized in English is language drift even though the instructions are English."""
    zh = ("用户：我们的夜间备份任务又失败了，你能看看吗？\n助手：backup.sh 从 2026-11-02 开始报 AccessDenied。\n"
          "用户：那正是我们轮换 KMS 密钥的时候。\n助手：backup-writer 角色对新密钥没有授权。\n") * 4
    instructions = ("The messages above are a conversation to summarize. Create a structured context checkpoint "
                    "summary that another LLM will use to continue the work. Use this EXACT format: ## Goal, "
                    "## Constraints & Preferences, ## Progress, ## Key Decisions, ## Next Steps, ## Critical "
                    "Context. Keep each section concise. Preserve exact file paths, function names and errors. ") * 3
    prompt = f"<conversation>\n{zh}\n</conversation>\n\n{instructions}"
    english = ("The nightly backup fails with AccessDenied since the KMS key rotation on 2026-11-02; the "
               "backup-writer role needs a grant on the new key, then run backup.sh once by hand.")
    chinese = "夜间备份自 2026-11-02 起因 KMS 密钥轮换报 AccessDenied；需给 backup-writer 授权新密钥并手动运行 backup.sh。"
    with FakeLLM([ok(english), ok(chinese)]) as fake, Running(home, upstream(fake)) as run:
        r = oai(run).chat.completions.with_raw_response.create(model="g", messages=[
            {"role": "system", "content": "You are a context summarization assistant."},
            {"role": "user", "content": prompt}])
    assert r.headers["x-compaction-guard-level"] == "2" and r.headers["x-compaction-guard-failures"] == "language_drift"
    assert r.parse().choices[0].message.content == chinese


def test_an_off_topic_reply_escalates_through_the_proxy(home):
    """A real small model's reply about nothing in its (Italian) history: ungrounded, L2."""
    import json as _json
    from pathlib import Path
    real = Path(__file__).parent / "corpus" / "real"
    out = next(_json.loads(x) for x in open(real / "model_outputs.jsonl", encoding="utf-8")
               if '"h046-it-code-review-r1"' in x)
    hist = next(_json.loads(x) for x in open(real / "histories.jsonl", encoding="utf-8") if f'"{out["history"]}"' in x)
    grounded = hist["text"].splitlines()[0][:300]
    with FakeLLM([ok(out["output"]), ok(grounded)]) as fake, Running(home, upstream(fake)) as run:
        r = oai(run).chat.completions.with_raw_response.create(model="g", messages=[
            {"role": "user", "content": f"<conversation>\n{hist['text']}\n</conversation>\n\nSummarize the conversation."}])
    assert r.headers["x-compaction-guard-level"] == "2" and r.headers["x-compaction-guard-failures"] == "ungrounded"
    assert r.parse().choices[0].message.content == grounded


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_goes_away_cancels_its_compaction_and_is_counted_abandoned(home, stream):
    """OpenClaw drops a compaction when a foreground turn arrives ("Session maintenance yielded to a
    foreground turn"): the guard stops its upstream work (no L2, no L3) and counts it abandoned,
    not as a compaction."""
    import httpx
    with FakeLLM([B("slow", seconds=4.0), ok()]) as fake, Running(home, upstream(fake)) as run:
        try:
            httpx.post(run.url + "/v1/chat/completions", json={"model": "g", "messages": MSGS, "stream": stream},
                       timeout=0.8)
        except httpx.TimeoutException:
            pass
        for _ in range(50):
            if state(home)["totals"].get("abandoned"):
                break
            time.sleep(0.1)
        seen = len(fake.requests)
        time.sleep(1.0)
        assert len(fake.requests) == seen == 1                   # L1 only: nothing more was sent upstream
    st = state(home)
    assert st["totals"]["abandoned"] == 1 and st["totals"]["chain_runs"] == 0 and st["level_usage"]["l3_deterministic"] == 0
