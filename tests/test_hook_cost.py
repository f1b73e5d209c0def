"""The hook's ordinary path costs next to nothing: benchmarks/bench_hook.py, held to its target."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_hooks_ordinary_path_is_within_four_bare_python_starts():
    """Whole processes, interleaved with a bare `python -c pass`: the median of the hook's
    ordinary path (PostToolUse, UserPromptSubmit with nothing pending) at most 4 times it."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_hook.py"), "--runs", "11", "--check"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "target: the ordinary path at most 4.0x a bare start: met" in done.stdout
