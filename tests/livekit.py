"""What every live test of a real agent needs first: the pinned binary installed, and a network
namespace with only loopback to run it in (`unshare -n`, as root). Missing either, the test is
skipped, or fails when scripts/test.sh asked for it (GUARD_REQUIRE_<AGENT>=1). And what the live
runners share: a free port, waiting for `compaction-guard serve` to answer."""
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def require(installed: bool, agent: str, setup: str, flag: str) -> None:
    import pytest
    for missing, msg in ((not installed, f"the pinned {agent} is not installed: run {setup} (scripts/test.sh does)"),
                         (not shutil.which("unshare") or os.geteuid() != 0,
                          f"{agent} runs offline only in a network namespace (unshare -n, as root)")):
        if missing:
            if os.environ.get(flag) == "1":
                pytest.fail(msg)
            pytest.skip(msg)


def run(script: str, case: str, out: Path, mode: str) -> dict:
    """tests/<script> CASE OUT MODE in a network namespace with only loopback; its run.json."""
    out.mkdir()
    p = subprocess.run(["unshare", "-n", sys.executable, str(ROOT / "tests" / script), case, str(out), mode],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def session(script: str, out: Path) -> dict:
    """tests/<script> OUT (one whole live session) in a network namespace with only loopback;
    its run.json."""
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["unshare", "-n", sys.executable, str(ROOT / "tests" / script), str(out)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def readme_section(title: str, next_title: str) -> str:
    """The README from the heading `title` to the next one, `next_title`."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme[readme.index(title):readme.index(next_title)]


@contextlib.contextmanager
def serve_process(args: list, env: dict, log: Path):
    """`compaction-guard serve ARGS --port P` as a user starts it, in a process of its own (its
    stderr in `log`), until it answers /healthz; yields P, then stops it as SIGTERM does."""
    port = free_port()
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", *args, "--port", str(port)],
                                env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            if not wait_healthz(port, 60):
                raise SystemExit(f"serve did not start: {log.read_text()}")
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def guard(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def check_passes_and_knows_the_guards_l3(env: dict, agent: str, summaries: int) -> None:
    """A plain `--check` of the agent: every summary valid, the guard's own L3 answers (one at
    least) known as its own where the agent stored them (`guard_l3`: a fallback's share, no
    `truncation_marker` failure), and the status HEALTHY."""
    p = guard(env, "--agent", agent, "--check", "--format", "json")
    check = json.loads(p.stdout)
    assert check["summaries_checked"] == summaries, p.stderr
    for r in check["results"]:
        assert r["valid"], r
    assert sum(bool(r.get("guard_l3")) for r in check["results"]) >= 1 and check["status"] == "HEALTHY", check


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthz(port: int, seconds: float) -> bool:
    """Whether `serve` on 127.0.0.1:`port` answered /healthz within `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False
