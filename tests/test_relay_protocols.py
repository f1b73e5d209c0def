"""serve as a relay for Codex (the Responses API) and Gemini CLI (generateContent), issue #57:
their real compaction requests (recorded from Codex 0.171.0 and Gemini CLI 0.61.0) through a real
uvicorn relay to the recordings' scripted servers on 127.0.0.1; ordinary requests relayed byte for
byte; the guard's own answers read back by the OpenAI SDK (Responses) and by the stream format
Gemini CLI's SDK reads; what is not a checkable compaction left alone."""
import dataclasses
import http.client
import json
import random
import re
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from compaction_guard import agents  # noqa: E402
from compaction_guard.contract import of_request  # noqa: E402
from compaction_guard.serve import gemini, responses  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402
from compaction_guard.structured import NOTE  # noqa: E402

from modelkit import gemini as gemini_srv, responses as codex_srv  # noqa: E402
from modelkit.anthropic import ScriptedAnthropic  # noqa: E402
from modelkit.base import HTTP_500  # noqa: E402
from test_serve import Running  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CODEX = ROOT / "tests" / "recordings" / "codex"
GEMINI = ROOT / "tests" / "recordings" / "gemini"
QUICK = dataclasses.replace(DEFAULT, serve_check_processes=0, breaker_threshold=100)
PREAMBLE = "Let me read the notes file first."
# what @google/genai (Gemini CLI's SDK) takes from a stream: `data: ...` then a blank line, nothing else
GENAI_LINE = re.compile(rb"^\s*data: (.*)(?:\n\n|\r\r|\r\n\r\n)")


def codex_request(case: str = "good-auto") -> dict:
    d = json.loads((CODEX / "data" / f"request-{case}.json").read_text())
    return d[0] if isinstance(d, list) else d


def gemini_requests(case: str = "good-long") -> list:
    return json.loads((GEMINI / "data" / f"request-{case}.json").read_text())


@pytest.fixture
def relay(tmp_path):
    started = []

    def start(name: str, upstream, settings=QUICK):
        up = upstream.__enter__()
        agent = agents.get(name)
        layout = agent.resolve(home=str(tmp_path / name))
        srv = Running(layout, None, settings, relay_to=(agent, up.url)).__enter__()
        started.append((up, srv))
        return up, srv
    yield start
    for up, srv in started:
        srv.__exit__(None, None, None)
        up.__exit__(None, None, None)


def post(srv, path: str, body, headers: dict, timeout: float = 60):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    c.request("POST", path, body=body if isinstance(body, bytes) else json.dumps(body).encode(), headers=headers)
    r = c.getresponse()
    return r, r.read()


CODEX_HEADERS = {"authorization": "Bearer sk-codex-test-0000", "content-type": "application/json",
                 "accept": "text/event-stream", "originator": "codex_exec"}
GEMINI_HEADERS = {"x-goog-api-key": "sk-gemini-test-0000", "content-type": "application/json"}


def codex_headers(body: dict) -> dict:
    """Codex's headers on a request (its turn metadata is a header too: the scripted server reads it)."""
    return dict(CODEX_HEADERS, **{"x-codex-turn-metadata": body["client_metadata"]["x-codex-turn-metadata"]})


def gemini_main() -> dict:
    """A real main-turn body of Gemini CLI (recorded slim: its path kept beside it)."""
    main = json.loads((GEMINI / "data" / "request-hook-inject-main.json").read_text())[0]
    return {k: v for k, v in main.items() if k != "path"}


# ----------------------------------------------------------------- what a request is
def test_codex_compaction_requests_are_read_as_codex_marks_them():
    from compaction_guard.agents.codex.requests import MARKER, read
    for path in sorted((CODEX / "data").glob("request-*.json")):
        d = json.loads(path.read_text())
        for req in d if isinstance(d, list) else [d]:
            raw = json.dumps(req["body"], separators=(",", ":")).encode()
            assert MARKER in raw, path.name
            shape = read(req["body"])
            assert shape is not None and "CONTEXT CHECKPOINT COMPACTION" in shape.instructions, path.name
            assert "OPS-4411" in shape.history and "You are Codex" not in shape.history
            assert "<environment_context>" not in shape.history
    body = codex_request()["body"]
    meta = json.loads(body["client_metadata"]["x-codex-turn-metadata"])
    turn = dict(body, client_metadata=dict(body["client_metadata"], **{
        "x-codex-turn-metadata": json.dumps(dict(meta, request_kind="turn"))}))
    remote = dict(body, client_metadata=dict(body["client_metadata"], **{
        "x-codex-turn-metadata": json.dumps(dict(meta, compaction=dict(meta["compaction"], implementation="remote")))}))
    trigger = dict(body, input=body["input"] + [{"type": "compaction_trigger"}])
    assert read(turn) is None and read(remote) is None and read(trigger) is None
    # the structure its prompt asks for: the handoff's four parts, L3's headings
    shape = read(body)
    assert of_request(shape.history, shape.instructions).outline == (
        "## Current progress and key decisions made", "## Important context, constraints, or user preferences",
        "## What remains to be done (clear next steps)", "## Any critical data, examples, or references needed to "
        "continue")


def test_gemini_compression_and_verify_calls_are_read_with_the_first_answer_as_fallback():
    from compaction_guard.agents.gemini.requests import MARKER, read
    first, verify = gemini_requests()
    for req in (first, verify):
        assert MARKER in json.dumps(req["body"], ensure_ascii=False).encode()
    a, b = read(first["body"]), read(verify["body"])
    assert a.fallback is None and "Generate a new <state_snapshot>" in a.instructions
    assert b.fallback.startswith("<scratchpad>") and "<state_snapshot>" in b.fallback
    assert a.history == b.history and "OPS-4411" in a.history and "<session_context>" not in a.history
    contract = of_request(a.history, a.instructions)
    assert contract.wrapper == "state_snapshot" and not contract.sections
    assert contract.outline[0] == "<overall_goal>" and contract.outline[-1] == "<task_state>"
    assert read(gemini_main()) is None


# ----------------------------------------------------------------- Codex through the relay
def test_a_codex_turn_crosses_byte_for_byte_with_its_credentials(relay):
    up, srv = relay("codex", codex_srv.ScriptedResponses(["unused"]))
    body = codex_request()["body"]
    meta = json.loads(body["client_metadata"]["x-codex-turn-metadata"])
    turn = dict(body, client_metadata=dict(body["client_metadata"], **{
        "x-codex-turn-metadata": json.dumps(dict(meta, request_kind="turn"))}))
    raw = json.dumps(turn, separators=(",", ":")).encode()
    r, data = post(srv, "/responses", raw, codex_headers(turn))
    assert r.status == 200 and r.getheader("x-compaction-guard-level") is None
    assert up.requests[-1]["path"] == "/v1/responses" and up.keys[-1] == CODEX_HEADERS["authorization"]
    assert up.requests[-1]["body"] == turn
    text, _, finish, error = responses.read_stream(data)
    assert error is None and text.startswith("Noted. I will keep that in mind.")


def zstd(data: bytes) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor(level=3).compress(data)


def test_a_zstd_codex_turn_crosses_as_it_came(relay):
    """Codex compresses its requests with zstd (the OpenAI provider, signed in with ChatGPT):
    an ordinary turn goes upstream compressed, as it came."""
    up, srv = relay("codex", codex_srv.ScriptedResponses(["unused"]))
    body = codex_request()["body"]
    meta = json.loads(body["client_metadata"]["x-codex-turn-metadata"])
    turn = dict(body, client_metadata=dict(body["client_metadata"], **{
        "x-codex-turn-metadata": json.dumps(dict(meta, request_kind="turn"))}))
    r, data = post(srv, "/responses", zstd(json.dumps(turn).encode()), dict(codex_headers(turn),
                                                                          **{"content-encoding": "zstd"}))
    assert r.status == 200 and r.getheader("x-compaction-guard-level") is None
    assert up.requests[-1]["body"] == turn and up.requests[-1]["headers"].get("content-encoding") == "zstd"


@pytest.mark.parametrize("pieces", [False, True])
def test_a_zstd_codex_compaction_is_read_and_checked_not_waved_through(relay, pieces):
    """A compressed compaction is found and read as the upstream reads it (a byte search of the
    compressed bytes would miss it: a broken summary waved through): L1 goes upstream as it came,
    compressed; L2, written anew, as plain JSON without the coding; the answer at L3."""
    up, srv = relay("codex", codex_srv.ScriptedResponses([PREAMBLE]))
    body = dict(codex_request()["body"], stream=False)
    if pieces:      # compressed, still large enough to arrive in several pieces (the path such a body takes)
        rng = random.Random(7)
        body["input"] = body["input"][:-1] + [{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"checksum {i}: " + "%x" % rng.getrandbits(4000)}]}
            for i in range(600)] + body["input"][-1:]      # the history longer; the prompt still last
    packed = zstd(json.dumps(body).encode())
    if pieces:
        assert len(packed) > 256 * 1024
    r, data = post(srv, "/responses", packed, dict(codex_headers(body), **{"content-encoding": "zstd"}))
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "3", data[:300]
    text, _, finish = responses.parse_answer(json.loads(data))
    assert text.startswith("## Current progress and key decisions made") and "OPS-4411" in text
    asked = [q for q in up.requests if q["method"] == "POST"]
    assert len(asked) == 2 and asked[0]["body"] == body
    assert asked[0]["headers"].get("content-encoding") == "zstd" and "content-encoding" not in asked[1]["headers"]
    assert "Be brief" in json.dumps(asked[1]["body"]["input"][-1])


def test_a_body_in_a_coding_the_guard_cannot_read_is_relayed_and_said_once(relay, capfd):
    """Not waved through in silence: relayed as it came, and serve's log says once that such
    bodies go unchecked."""
    up, srv = relay("codex", codex_srv.ScriptedResponses(["unused"]))
    body = codex_request()["body"]
    for _ in range(2):
        r, data = post(srv, "/responses", b"\x1b\x00 not readable here", dict(codex_headers(body),
                                                                            **{"content-encoding": "br"}))
        assert r.getheader("x-compaction-guard-level") is None and up.requests[-1]["headers"]["content-encoding"] == "br"
    said = [ln for ln in capfd.readouterr().err.splitlines() if "cannot decode" in ln]
    assert len(said) == 1 and "'br'" in said[0] and "relayed unchecked" in said[0]


@pytest.mark.parametrize("stream", [True, False])
def test_a_degenerate_codex_compaction_is_answered_in_its_mode_with_the_handoff_sections(relay, stream):
    up, srv = relay("codex", codex_srv.ScriptedResponses([PREAMBLE]))
    body = dict(codex_request()["body"], stream=stream)
    r, data = post(srv, "/responses", body, codex_headers(body))
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "3"
    if stream:
        assert r.getheader("content-type").startswith("text/event-stream")
        text, _, finish, error = responses.read_stream(data)
        assert error is None and finish is None
    else:
        text, _, finish = responses.parse_answer(json.loads(data))
    assert text.startswith("## Current progress and key decisions made") and NOTE in text and "OPS-4411" in text
    # L1 and L2 went to the same upstream with the client's own credentials; L2 asked for brevity
    asked = [q for q in up.requests if q["method"] == "POST"]
    assert len(asked) == 2 and all(k == CODEX_HEADERS["authorization"] for k in up.keys[-2:])
    assert "Be brief" in json.dumps(asked[1]["body"]["input"][-1]) and "Be brief" not in json.dumps(asked[0]["body"])


def test_the_openai_sdk_reads_the_guards_responses_stream(relay):
    openai = pytest.importorskip("openai")
    up, srv = relay("codex", codex_srv.ScriptedResponses([HTTP_500]))
    body = codex_request()["body"]
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}", api_key="sk-codex-test-0000", max_retries=0)
    extra = {k: body[k] for k in ("client_metadata", "tools", "parallel_tool_calls", "store", "include")}
    events = list(client.responses.create(model=body["model"], input=body["input"], stream=True, extra_body=extra,
                                          extra_headers={"x-codex-turn-metadata": codex_headers(body)[
                                              "x-codex-turn-metadata"]}))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    done = events[-1].response
    assert done.status == "completed" and done.output_text.startswith("## Current progress")
    assert done.usage.output_tokens > 0


def test_what_is_no_checkable_codex_compaction_is_relayed_untouched(relay):
    up, srv = relay("codex", codex_srv.ScriptedResponses(["unused"]))
    body = codex_request()["body"]
    # remote compaction (the built-in openai provider): its own path, and an input item Codex answers opaquely
    for path, b in (("/responses/compact", body), ("/responses", dict(body, input=body["input"] + [
            {"type": "compaction_trigger"}]))):
        n = len(up.requests)
        raw = json.dumps(b).encode()
        r, data = post(srv, path, raw, codex_headers(b))
        assert r.getheader("x-compaction-guard-level") is None
        assert len(up.requests) == n + 1 and up.requests[-1]["body"] == b
    # the marker in a body that is no JSON
    r, data = post(srv, "/responses", b'request_kind\\":\\"compaction\\" but no JSON', CODEX_HEADERS)
    assert r.status == 400 and r.getheader("x-compaction-guard-level") is None       # the upstream's answer


def test_a_codex_keepalive_is_an_event_codex_reads_past():
    # Codex restarts its idle timer on events only (a comment line is skipped without one)
    ka = responses.keepalive()
    assert ka.startswith(b"event: ") and json.loads(ka.split(b"data: ", 1)[1])["type"] == "keepalive"
    assert responses.read_stream(ka + b"".join(responses.stream(_Out("x"), "m")))[0] == "x"


class _Out:
    def __init__(self, summary):
        self.summary, self.input_tokens, self.output_tokens, self.level, self.failures = summary, 10, 2, 3, []


# ----------------------------------------------------------------- Gemini CLI through the relay
def test_a_gemini_stream_crosses_byte_for_byte(relay):
    up, srv = relay("gemini", gemini_srv.ScriptedGemini())
    body = gemini_main()
    raw = json.dumps(body).encode()
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    r, data = post(srv, path, raw, GEMINI_HEADERS)
    assert r.status == 200 and r.getheader("x-compaction-guard-level") is None
    assert up.requests[-1]["path"] == path and up.requests[-1]["body"] == body
    assert up.keys[-1] == GEMINI_HEADERS["x-goog-api-key"]
    assert GENAI_LINE.match(data)


def test_a_degenerate_gemini_compression_and_its_verify_call_agree(relay):
    up, srv = relay("gemini", gemini_srv.ScriptedGemini(summaries=[PREAMBLE], verifies=[PREAMBLE]))
    first, verify = gemini_requests()
    r, data = post(srv, first["path"], first["body"], GEMINI_HEADERS)
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "3"
    l3, _, _ = gemini.parse_answer(json.loads(data))
    assert l3.startswith("<state_snapshot>\n<overall_goal>") and l3.endswith("</state_snapshot>") and NOTE in l3
    for tag in ("active_constraints", "key_knowledge", "artifact_trail", "file_system_state", "recent_actions",
                "task_state"):
        assert f"<{tag}>" in l3 and f"</{tag}>" in l3
    # Gemini CLI's verify call quotes the guard's answer; the upstream fails it too: the same answer comes back
    vb = json.loads(json.dumps(verify["body"]))
    vb["contents"][-2]["parts"] = [{"text": l3}]
    r, data = post(srv, verify["path"], vb, GEMINI_HEADERS)
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "3"
    assert gemini.parse_answer(json.loads(data))[0] == l3
    assert [k for k, _ in up.compressions] == ["summary", "summary", "verify", "verify"]


def test_a_good_first_answer_survives_a_verify_call_the_upstream_spoils(relay):
    up, srv = relay("gemini", gemini_srv.ScriptedGemini(verifies=[PREAMBLE]))
    first, verify = gemini_requests()
    good = verify["body"]["contents"][-2]["parts"][0]["text"]
    r, data = post(srv, verify["path"], verify["body"], GEMINI_HEADERS)
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "3"
    assert gemini.parse_answer(json.loads(data))[0] == good.strip()


def test_a_streamed_gemini_compression_is_answered_as_chunks_gemini_cli_reads(relay):
    up, srv = relay("gemini", gemini_srv.ScriptedGemini(summaries=[HTTP_500]))
    first, _ = gemini_requests()
    path = first["path"].replace(":generateContent", ":streamGenerateContent") + "?alt=sse"
    r, data = post(srv, path, first["body"], GEMINI_HEADERS)
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "3"
    chunks, rest = [], data
    while rest:
        m = GENAI_LINE.match(rest)
        assert m, rest[:200]
        chunks.append(json.loads(m.group(1)))
        rest = rest[m.end():]
    text, _, finish, error = gemini.read_stream(data)
    assert error is None and text.startswith("<state_snapshot>") and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    # the keep-alive and the level note leave the stream as Gemini CLI's SDK reads it
    assert GENAI_LINE.match(gemini.keepalive()) and gemini.note("level=3") == b""


def test_a_gemini_utility_call_without_the_compression_prompt_is_relayed(relay):
    up, srv = relay("gemini", gemini_srv.ScriptedGemini())
    body = {"contents": [{"role": "user", "parts": [{"text": "Who speaks next?"}]}],
            "generationConfig": {"responseJsonSchema": {"type": "object", "properties": {
                "next_speaker": {"type": "string"}}}}}
    r, data = post(srv, "/v1beta/models/gemini-2.5-flash:generateContent", body, GEMINI_HEADERS)
    assert r.status == 200 and r.getheader("x-compaction-guard-level") is None
    assert json.loads(gemini.parse_answer(json.loads(data))[0]) == {"next_speaker": "user"}


# ----------------------------------------------------------------- Claude Code: the path matters too
def test_a_claude_code_compaction_body_sent_to_count_tokens_is_relayed(relay):
    up, srv = relay("claude-code", ScriptedAnthropic(summaries=["unused"], input_tokens=1234))
    body = json.loads((ROOT / "tests" / "data" / "claude-code" / "request-good.json").read_text())["body"]
    r, data = post(srv, "/v1/messages/count_tokens?beta=true", body, {"x-api-key": "sk-ant-test",
                                                                     "content-type": "application/json"})
    assert r.status == 200 and r.getheader("x-compaction-guard-level") is None
    assert json.loads(data) == {"input_tokens": 1234}
