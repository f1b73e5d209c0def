"""`python -m compaction_guard ...`: the same as the `compaction-guard` command."""
import sys

from .launch import main

sys.exit(main())
