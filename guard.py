#!/usr/bin/env python3
"""compaction-resilience-guard: python3 guard.py --check | --simulate TEXT | --report | --status [--format json]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    from compaction_guard.launch import main
except ImportError as exc:  # a dependency is missing: say how to get it, no traceback
    print(f"compaction-guard: missing dependency ({exc.name}); run: pip install .", file=sys.stderr)
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main())
