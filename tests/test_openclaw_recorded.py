"""The guard on what a live OpenClaw 2026.9.6 gateway wrote and sent (tests/data/openclaw-live,
recorded by tests/test_openclaw_live.py): runs anywhere, without Node or OpenClaw."""
from __future__ import annotations

import json
import shutil

from compaction_guard import operations
from conftest import ROOT

DATA = ROOT / "tests" / "data" / "openclaw-live"


def test_the_recorded_store_is_read_with_openclaws_ids_counters_and_verdicts(tmp_path):
    state = tmp_path / ".openclaw"
    agent = state / "agents" / "main" / "agent"
    agent.mkdir(parents=True)
    shutil.copyfile(DATA / "openclaw-agent.sqlite", agent / "openclaw-agent.sqlite")
    before = (agent / "openclaw-agent.sqlite").read_bytes()
    rep = operations.check(state)
    assert [s["name"] for s in rep.sources] == ["openclaw-agent-db"]
    first, second = rep.results
    assert first.valid and second.failures == ["repetition"] and first.session == second.session
    # OpenClaw's own figures: the context it measured around each compaction
    assert first.input_tokens > 10000 and second.input_tokens > 10000
    assert (agent / "openclaw-agent.sqlite").read_bytes() == before         # read-only
    # an incremental check finds nothing new
    assert operations.check(state).checked == 0


def test_the_recorded_compaction_requests_have_openclaws_shape():
    """What OpenClaw sends a compaction model (the shape `serve` must speak)."""
    reqs = [json.loads(line) for line in (DATA / "requests.jsonl").read_text().splitlines()]
    assert reqs and all(q["path"] == "/v1/chat/completions" for q in reqs)
    for q in reqs:
        b = q["body"]
        assert b["stream"] is True and b["stream_options"] == {"include_usage": True}
        assert isinstance(b["max_completion_tokens"], int) and "temperature" not in b and "tools" not in b
        assert [m["role"] for m in b["messages"]] == ["system", "user"]
        assert b["messages"][0]["content"].startswith("You are a context summarization assistant")
        text = b["messages"][1]["content"][0]["text"] if isinstance(b["messages"][1]["content"], list) \
            else b["messages"][1]["content"]
        assert text.startswith("<conversation>")
