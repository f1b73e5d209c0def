"""The guard behind opencode: `hook opencode`, which the guard's plugin runs, and installing that
plugin.

opencode runs no commands on its events; plugins (JavaScript modules in `<config>/plugin/`) are its
hooks. `install opencode` writes one, `compaction-guard.js` (plugin.js, with this Python and this
guard filled in): when opencode has stored a compaction summary it runs `compaction-guard hook
opencode` with `{"event": "compacted", "session_id", "message_id"}` on stdin, bounded in time.
The hook finds the summary in opencode's database (read-only, store.py), checks it against the
conversation it replaced and opencode's own counts, with the same detectors as every store, and
records the verdict for the session (`--agent opencode --status` turns DEGRADED at once; the summary
is counted by the next check). After a failed one it leaves a mark (`<guard dir>/failed/<session>`:
the summary's id, the failures and a one-line note; no text of the conversation) and answers the
warning for the model (the reason, the identifiers the summary dropped, the user's last request);
the plugin puts it before the session's next model call as a system message, and the note before
every later one while the mark is there. A process that did not see the compaction asks for the
warning with `{"event": "warning", "session_id"}`. A good summary takes the mark away.
The hook always exits 0 and answers JSON or nothing: it never breaks opencode.
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import hookkit
from .layout import OpencodeLayout, resolve

PLUGIN = "compaction-guard.js"
MARK = "compaction-resilience-guard: checks every compaction summary opencode stores"
BUDGET = 12.0                       # under the plugin's own limit (15 s)


def hook_main(stdin=None, stdout=None, env=None, settings=None) -> int:
    return hookkit.main(handle, resolve, BUDGET, stdin, stdout, env, settings)


def failed_mark(layout: OpencodeLayout, session: str) -> Path:
    return hookkit.mark(layout.guard_dir, "failed", session)


def handle(data: dict, env=None, settings=None) -> str:
    event = data.get("event")
    session = str(data.get("session_id") or "")
    if not session or event not in ("compacted", "warning"):
        return ""
    layout = resolve(env)
    settings = settings or hookkit.load_settings(layout, env)
    if event == "compacted":
        return _judge(layout, session, str(data.get("message_id") or ""), settings)
    return _warning(layout, session, settings)


def _find(layout, message: str, settings):
    """(source, record) of the summary message `message` in opencode's database(s)."""
    from . import store
    for path in store.databases(layout):
        src = store.OpencodeDbSource(path)
        src.input_chars = settings.max_input_chars
        try:
            rec = src.record_of(message)
        finally:
            src.close()
        if rec is not None:
            return src, rec
    return None, None


def note_text(failures: list, db) -> str:
    return (f"compaction-resilience-guard: the summary of this conversation failed its check ({', '.join(failures)}) "
            f"and does not carry the earlier conversation; the full history is in opencode's database {db} "
            "(`opencode export <session>` prints it).")


def _judge(layout, session: str, message: str, settings) -> str:
    from ...check import check_record
    from ...own_answers import NAME, Matcher
    from ...state import StateStore, now_iso, state_path
    from . import store
    src, rec = _find(layout, message, settings)
    if rec is None:
        hookkit.log_problem(layout.guard_dir, f"summary {message[:80]} not found in {layout.describe()}")
        return ""
    rec.key = src.count_key(rec)
    if NAME in (rec.content or ""):
        # the guard's own L3 answer (serve as opencode's compaction model): its note is no failure
        rec.own_answer = Matcher(StateStore(state_path(layout), settings).read())(rec.content)
    result = check_record(rec, settings)
    failures = list(result.failures)
    entry = {"id": rec.id, "failures": failures, "at": now_iso(), "transcript": str(src.path)}
    # the session's verdict, and the stored summary counted once (the next check does not again)
    hookkit.record_verdict(layout, settings, f"{store.KIND}:{session}", entry, rec, result)
    mark = failed_mark(layout, session)
    if not failures:
        mark.unlink(missing_ok=True)
        return json.dumps({"id": rec.id, "failures": []})
    hookkit.set_mark(mark, True, json.dumps({"id": rec.id, "failures": failures, "db": str(src.path),
                                             "told": False, "note": note_text(failures, src.path)}))
    return json.dumps({"id": rec.id, "failures": failures, "warning": _warning_text(rec, result, failures, src.path,
                                                                                     session)}, ensure_ascii=False)


def _warning_text(rec, result, failures: list, db, session: str) -> str:
    reason, lost, ask = hookkit.lost_in(rec, result)
    return hookkit.warning_text(failures, reason, lost, ask, f"opencode's database {db} (`opencode export {session}`)")


def _warning(layout, session: str, settings) -> str:
    from ...check import check_record
    try:
        info = json.loads(failed_mark(layout, session).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    _src, rec = _find(layout, str(info.get("id") or ""), settings)
    if rec is None:
        return ""
    warning = _warning_text(rec, check_record(rec, settings), list(info.get("failures") or []), info.get("db"), session)
    return json.dumps({"id": rec.id, "warning": warning}, ensure_ascii=False)


# ------------------------------------------------------------------ install
def plugin_text(layout: OpencodeLayout, argv: list | None = None) -> str:
    import shlex
    argv = argv or shlex.split(hookkit.command("hook opencode"))
    src = (Path(__file__).with_name("plugin.js")).read_text(encoding="utf-8")
    return src.replace("__GUARD__", json.dumps(argv)).replace("__STATE__", json.dumps(str(layout.guard_dir)))


def install(layout: OpencodeLayout, args=None, argv: list | None = None) -> dict:
    from ...errors import GuardError
    target = layout.plugin_dir / PLUGIN
    text = plugin_text(layout, argv)
    doc = {"plugin": str(target), "written": False, "state": str(layout.guard_dir / "state.yaml")}
    old = target.read_text(encoding="utf-8", errors="replace") if target.exists() else None
    if old is not None and MARK not in old:
        raise GuardError(f"{target}: a plugin of that name that is not the guard's is there; move it away, "
                         "then run this again")
    if old != text:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{PLUGIN}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)
        except OSError as exc:
            raise GuardError(f"{target}: cannot be written ({exc.strerror}); check its permissions") from None
        doc["written"] = True
    doc["sdk"] = _sdk_state(layout.config_dir, bool(getattr(args, "offline", False)))
    return doc


def uninstall(layout: OpencodeLayout, args=None) -> dict:
    target = layout.plugin_dir / PLUGIN
    removed = False
    if target.exists() and MARK in target.read_text(encoding="utf-8", errors="replace"):
        target.unlink()
        removed = True
    return {"plugin": str(target), "removed": removed, "offline_lock_removed": _unmark_offline(layout.config_dir)}


# ------------------------------------------------------------------ opencode's own npm install
# opencode 1.18, at every start, runs an npm install of its plugin SDK (@opencode-ai/plugin) into each
# configuration directory it loads, unless `node_modules` is there and package-lock.json's root lists
# every dependency package.json declares and the SDK; when any plugin is installed (the guard's is one)
# it waits for that install before it goes on. Without npm's registry the install fails after about
# 70 s, at every start (tests/recordings/opencode/FINDINGS.md, "Plugins"). The guard's plugin imports
# nothing, so it needs no SDK; a plugin or tool of the user's that imports it needs the real one.
SDK = "@opencode-ai/plugin"
OFFLINE_NOTE = ("written by `compaction-guard install opencode --offline`: opencode's start does not wait for an npm "
                "install of @opencode-ai/plugin; `npm install @opencode-ai/plugin` here installs the real one")


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _names(d: dict) -> set:
    return {k for field in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
            for k in (d.get(field) if isinstance(d.get(field), dict) else {})}


def sdk_ready(config_dir: Path) -> bool:
    """Whether opencode skips its npm install in `config_dir` at start (what opencode 1.18 checks)."""
    if not (config_dir / "node_modules").exists():
        return False
    root = (_json(config_dir / "package-lock.json").get("packages") or {}).get("") or {}
    return (_names(_json(config_dir / "package.json")) | {SDK}) <= _names(root if isinstance(root, dict) else {})


def _sdk_state(config_dir: Path, offline: bool) -> str:
    """"ready" (opencode installs nothing at start), "marked" (--offline wrote the lock that says so),
    "npm" (opencode will install the SDK at its next start), or "theirs" (--offline, but package.json,
    package-lock.json or node_modules of the user's are there: left alone)."""
    from ...errors import GuardError
    if sdk_ready(config_dir):
        return "ready"
    if not offline:
        return "npm"
    if any((config_dir / n).exists() for n in ("package.json", "package-lock.json", "node_modules")):
        return "theirs"
    lock = {"name": "opencode-config", "lockfileVersion": 3, "requires": True,
            "packages": {"": {"dependencies": {SDK: "*"}}}, "compaction-guard": OFFLINE_NOTE}
    try:
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")
        (config_dir / "node_modules").mkdir()
    except OSError as exc:
        raise GuardError(f"{config_dir}: cannot be written ({exc.strerror}); check its permissions") from None
    return "marked"


def _unmark_offline(config_dir: Path) -> bool:
    """Take away what --offline wrote, if it is still only that (npm has not installed there since)."""
    lock = config_dir / "package-lock.json"
    if _json(lock).get("compaction-guard") != OFFLINE_NOTE:
        return False
    modules = config_dir / "node_modules"
    try:
        if modules.is_dir() and not any(modules.iterdir()):
            modules.rmdir()
        lock.unlink()
    except OSError:
        return False
    return True
