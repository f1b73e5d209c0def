"""What every live test of a real agent needs first: the pinned binary installed, and a network
namespace with only loopback to run it in (`unshare -n`, as root). Missing either, the test is
skipped, or fails when scripts/test.sh asked for it (GUARD_REQUIRE_<AGENT>=1)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def require(installed: bool, agent: str, setup: str, flag: str) -> None:
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
