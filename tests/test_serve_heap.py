"""serve tells glibc's allocator to keep freed memory for the next request (settings
serve_heap_keep_bytes): a relayed turn's pieces reuse the memory the last turn freed instead of
faulting fresh pages in. Measured in a fresh interpreter each way, as the kernel counts it (minor
page faults, getrusage), over turns of 1 MB made of 256 KB pieces."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TURNS = r"""
import resource, sys
sys.path.insert(0, sys.argv[1])
from compaction_guard.serve.server import keep_heap
told = keep_heap(int(sys.argv[2]))
def turn():
    pieces = [bytes(bytearray(256 * 1024)) for _ in range(4)]    # fresh blocks, written to
    return sum(len(p) for p in pieces)
turn()                                  # the first turn faults its pages in, either way
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    turn()
print(told, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(keep: int) -> tuple:
    out = subprocess.run([sys.executable, "-c", TURNS, str(ROOT), str(keep)], capture_output=True, text=True,
                         check=True).stdout.split()
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator (Linux)")
def test_turns_reuse_freed_memory_instead_of_faulting_it_in_again():
    told, kept = faults(16 << 20)
    if not told:
        pytest.skip("not glibc: mallopt is not there (the allocator is left as it is)")
    _, default = faults(0)
    # 20 turns of 1 MB: with the allocator as it is, every turn's blocks are mapped and faulted
    # in anew (about 256 pages a MB); kept, they are the last turn's
    assert default > 20 * 200, default
    assert kept < default / 10, (kept, default)


def test_zero_leaves_the_allocator_as_it_is():
    from compaction_guard.serve.server import keep_heap
    assert keep_heap(0) is False
