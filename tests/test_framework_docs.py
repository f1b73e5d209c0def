"""Every Python example of docs/frameworks.md runs as written (its own process, a throwaway HOME),
its model the scripted OpenAI server on 127.0.0.1 answering every summary request with a preamble:
the summary each example prints is the guard's, carrying the conversation's identifiers and
latest ask, and the run is in the frameworks' state."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from compaction_guard.settings import DEFAULT
from compaction_guard.state import StateStore
from frameworks_kit import BAD, ScriptedOpenAI

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "frameworks.md"
BLOCKS = [t.content for t in MarkdownIt("commonmark").parse(PAGE.read_text(encoding="utf-8"))
          if t.type == "fence" and t.info.strip() == "python"]
FRAMEWORK = {"langchain": "langchain", "pydantic_ai": "pydantic-ai", "google.adk": "google-adk"}


def test_the_page_shows_each_framework_and_the_api():
    assert len(BLOCKS) == 5
    assert [next((f for m, f in FRAMEWORK.items() if f"from {m}" in b), None) for b in BLOCKS] == \
        ["langchain", "langchain", "pydantic-ai", "google-adk", None]


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_each_example_runs_as_written(n, tmp_path):
    code = BLOCKS[n]
    framework = next((f for m, f in FRAMEWORK.items() if f"from {m}" in code), None)
    if framework:
        pytest.importorskip(framework.replace("-", "_").replace("google_adk", "google.adk"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "COMPACTION_GUARD", "OPENAI_"))}
    with ScriptedOpenAI([BAD["preamble"]]) as srv:
        env.update(HOME=str(tmp_path), OPENAI_BASE_URL=srv.url, OPENAI_API_KEY="unused",
                   LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(ROOT))
        p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    if "on_custom_event" not in code:
        assert "OPS-4471" in p.stdout and "keep --strict on" in p.stdout, p.stdout
        assert BAD["preamble"] not in p.stdout
    if framework and "on_custom_event" not in code:
        state = StateStore(tmp_path / ".local" / "state" / "compaction-guard" / "frameworks" / "state.yaml",
                           DEFAULT).read()
        assert state["totals"]["via"] == {framework: 1} and state["level_usage"]["l3_deterministic"] == 1
