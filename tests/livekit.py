"""What every live test of a real agent needs first: the pinned binary installed, and a network
namespace with only loopback to run it in (`unshare -n`, as root). Missing either, the test is
skipped, or fails when scripts/test.sh asked for it (GUARD_REQUIRE_<AGENT>=1). And what the live
runners share: a free port, waiting for `compaction-guard serve` to answer."""
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
