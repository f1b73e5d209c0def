#!/usr/bin/env bash
# Set up, then run the whole test suite: the detector evaluation on the labelled
# corpus (precision/recall per kind, fails if a target is missed) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test
.venv/bin/python tests/corpus/evaluate.py
.venv/bin/python -m pytest -q "$@"
