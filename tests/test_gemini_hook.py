"""The guard's hook behind Gemini CLI and its install, on what Gemini CLI 0.61.0 really wrote and
sent (tests/recordings/gemini/data: session files; `hook-live-preamble-*.json` are BeforeModel
events byte for byte as Gemini CLI wrote them on the hook's stdin, kept by the user's own hook in
tests/gemini_live_run.py): no binary needed."""
import io
import json
import subprocess
import sys
import time
from pathlib import Path

from compaction_guard import operations
from compaction_guard.agents.gemini import hook, store
from compaction_guard.agents.gemini.layout import resolve

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "recordings" / "gemini" / "data"
RECORDED_AT = "/tmp/glive/pa/home/.gemini/tmp/work/chats/session-2026-12-06T02-44-74be1b42.jsonl"
SESSION = "74be1b42-5725-4b39-840b-7f69094b83e0"
GUARD_LINE = "compaction-resilience-guard: the last compaction of this session failed its check"


def home_with(tmp_path: Path, case: str = "live-preamble"):
    """A Gemini CLI home holding the recorded session file; its lines, and the file."""
    home = tmp_path / "home"
    chats = home / ".gemini" / "tmp" / "work" / "chats"
    chats.mkdir(parents=True)
    lines = (DATA / f"session-{case}.jsonl").read_bytes().splitlines(keepends=True)
    return home, lines, chats / "session-2026-12-06T02-44-74be1b42.jsonl"


def event(name: str, transcript: Path) -> str:
    return (DATA / f"hook-{name}.json").read_text(encoding="utf-8").replace(RECORDED_AT, str(transcript))


def run_hook(home: Path, payload: str) -> str:
    out = io.StringIO()
    assert hook.hook_main(io.StringIO(payload), out, env={"HOME": str(home)}) == 0
    return out.getvalue()


def compression_line(lines: list) -> int:
    return next(i for i, x in enumerate(lines) if b'"$set"' in x and store.ACK.encode() in x)


def test_a_failed_compression_is_judged_once_and_the_model_warned_beside_the_summary(tmp_path):
    home, lines, transcript = home_with(tmp_path)
    at = compression_line(lines)
    layout = resolve({"HOME": str(home)})
    transcript.write_bytes(b"".join(lines[:at]))
    # the ordinary path before the compression: nothing said, nothing judged
    assert run_hook(home, event("live-preamble-BeforeModel-first", transcript)) == ""
    assert hook.seen_mark(layout, SESSION).exists() and not (layout.guard_dir / "state.yaml").exists()
    transcript.write_bytes(b"".join(lines[:at + 3]))            # Gemini CLI compressed: the $set is written
    said = json.loads(run_hook(home, event("live-preamble-BeforeModel", transcript)))["hookSpecificOutput"]
    assert said["hookEventName"] == "BeforeModel"
    messages = said["llm_request"]["messages"]
    assert len(messages) == 1 and messages[0]["role"] == "user"     # the summary message, nothing after it
    text = messages[0]["content"]
    assert text.index("Let me read the notes file first.") < text.index(GUARD_LINE)
    assert "(empty)" in text and "OPS-4411" in text and "src/deploy/retry.ts" in text and str(transcript) in text
    st = operations.status(layout)
    assert st["status"] == "DEGRADED" and st["failed_since_check"][0]["failures"] == ["empty"]
    assert "Let me read" not in (layout.guard_dir / "state.yaml").read_text()  # no text of the conversation kept
    # later requests carrying that summary: the short note, not the whole warning again
    later = json.loads(run_hook(home, event("live-preamble-BeforeModel", transcript)))
    note = later["hookSpecificOutput"]["llm_request"]["messages"][0]["content"]
    assert "the summary above failed its check (empty)" in note and GUARD_LINE not in note
    # Gemini CLI's --resume rewrites the history with the acknowledgement in it: no new compression
    transcript.write_bytes(b"".join(lines))
    before = (layout.guard_dir / "state.yaml").read_text()
    assert "the summary above failed" in run_hook(home, event("live-preamble-BeforeModel", transcript))
    assert (layout.guard_dir / "state.yaml").read_text() == before
    assert not (layout.guard_dir / "hook.log").exists()


def test_a_good_compression_passes_and_nothing_is_said(tmp_path):
    home, _lines, transcript = home_with(tmp_path)
    lines = (DATA / "session-good-long.jsonl").read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines))
    sid = json.loads(lines[0])["sessionId"]
    payload = event("live-preamble-BeforeModel", transcript).replace(SESSION, sid)
    assert run_hook(home, payload) == ""
    layout = resolve({"HOME": str(home)})
    st = operations.status(layout)
    assert st["status"] != "DEGRADED" and not hook.warn_mark(layout, sid).exists()


def test_the_ordinary_path_reads_only_the_events_first_bytes(tmp_path):
    """BeforeModel carries the whole conversation; the ordinary path reads its first 64 KiB."""
    home, lines, transcript = home_with(tmp_path)
    transcript.write_bytes(b"".join(lines[:compression_line(lines)]))
    big = event("live-preamble-BeforeModel-first", transcript)
    cut = big.index('"llm_request"')
    huge = big[:cut] + '"llm_request":{"messages":[{"role":"user","content":"' + "x" * (8 << 20) + '"}]}}'

    class Counting(io.StringIO):
        taken = 0

        def read(self, n=-1):
            got = super().read(n)
            Counting.taken += len(got)
            return got
    out = io.StringIO()
    t = time.perf_counter()
    assert hook.hook_main(Counting(huge), out, env={"HOME": str(home)}) == 0
    assert out.getvalue() == "" and Counting.taken <= hook.HEAD and time.perf_counter() - t < 1.0
    layout = resolve({"HOME": str(home)})
    assert not (layout.guard_dir / "hook.log").exists()
    # an event whose keys come in another order is read whole, and still understood
    other = json.dumps({"hook_event_name": "BeforeModel", "session_id": SESSION, "transcript_path": str(transcript)})
    assert run_hook(home, other) == ""


def test_bad_input_never_breaks_gemini_cli(tmp_path):
    home = tmp_path / "home"
    assert run_hook(home, "{not json") == ""
    assert run_hook(home, json.dumps({"session_id": "s", "transcript_path": str(tmp_path / "missing.jsonl"),
                                      "cwd": "/", "hook_event_name": "BeforeModel"})) == ""
    log = (home / ".gemini" / "compaction-guard" / "hook.log").read_text()
    assert log.count("\n") == 1 and "JSONDecodeError" in log


def test_install_keeps_the_users_settings_and_hooks_and_uninstall_takes_only_the_guards(tmp_path):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    mine = {"model": {"name": "gemini-2.5-flash", "compressionThreshold": 0.5},
            "hooks": {"BeforeModel": [{"hooks": [{"type": "command", "command": "log-it", "timeout": 5000}]}]}}
    settings = home / ".gemini" / "settings.json"
    settings.write_text(json.dumps(mine))
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def guard(*args):
        return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True,
                              text=True, timeout=60)
    p = guard("install", "gemini")
    assert p.returncode == 0 and "added on BeforeModel" in p.stdout, p.stderr
    data = json.loads(settings.read_text())
    assert data["model"] == mine["model"] and data["hooks"]["BeforeModel"][0] == mine["hooks"]["BeforeModel"][0]
    (ours,) = [h for g in data["hooks"]["BeforeModel"] for h in g["hooks"] if "hook gemini" in h["command"]]
    assert ours["timeout"] == hook.HOOK_TIMEOUT and "matcher" not in data["hooks"]["BeforeModel"][1]
    assert "already there" in guard("install", "gemini").stdout              # idempotent
    assert json.loads(settings.read_text()) == data
    p = guard("uninstall", "gemini")
    assert p.returncode == 0 and json.loads(settings.read_text()) == mine
    settings.write_text("{not json")
    p = guard("install", "gemini")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "settings.json" in p.stderr and "Traceback" not in p.stderr


def test_a_check_between_the_compression_and_the_next_model_call_does_not_silence_the_warning(tmp_path):
    """The check and the hook keep a session's verdict under one key: a check that read the failed
    compression first (a cron job) has told the model nothing, so the hook still warns it, once."""
    home, lines, transcript = home_with(tmp_path)
    at = compression_line(lines)
    layout = resolve({"HOME": str(home)})
    transcript.write_bytes(b"".join(lines[:at]))
    assert run_hook(home, event("live-preamble-BeforeModel-first", transcript)) == ""
    transcript.write_bytes(b"".join(lines[:at + 3]))
    rep = operations.check(layout)
    assert rep.status == "DEGRADED" and [a["session"] for a in rep.affected] == [f"gemini:{SESSION}"]
    said = json.loads(run_hook(home, event("live-preamble-BeforeModel", transcript)))["hookSpecificOutput"]
    assert GUARD_LINE in said["llm_request"]["messages"][0]["content"]
    later = json.loads(run_hook(home, event("live-preamble-BeforeModel", transcript)))
    assert GUARD_LINE not in later["hookSpecificOutput"]["llm_request"]["messages"][0]["content"]
    assert operations.status(layout)["sessions_affected"] == 1
