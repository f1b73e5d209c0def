"""The README and docs/ read as a newcomer reads them: rendered with a Markdown renderer, every
link and anchor resolves, every command in a shell block names something that exists, and the
ones that are safe to run are run, as written, in a sandbox (a copy of the demo home, a
temporary Claude Code config, no `openclaw` on PATH)."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import json5
import pytest
from markdown_it import MarkdownIt

from conftest import DEMO, ROOT

sys.path.insert(0, str(ROOT / "tests" / "corpus"))

PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "SKILL.md", *sorted((ROOT / "docs").glob("*.md"))]
MD = MarkdownIt("commonmark").enable("table")


def tokens(path: Path) -> list:
    return MD.parse(path.read_text(encoding="utf-8"))


def _walk(toks):
    for t in toks:
        yield t
        if t.children:
            yield from _walk(t.children)


def slug(text: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation but `-` and `_` dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set:
    toks = tokens(path)
    out = set()
    for i, t in enumerate(toks):
        if t.type == "heading_open":
            out.add(slug("".join(c.content for c in toks[i + 1].children if c.type in ("text", "code_inline"))))
    out.update(re.findall(r'<a id="([^"]+)"></a>', path.read_text(encoding="utf-8")))
    return out


def links(path: Path) -> list:
    return [t.attrGet("href") for t in _walk(tokens(path)) if t.type == "link_open"]


def shell_commands(path: Path) -> list:
    """Each command of each `sh` block, comments and continuation lines folded."""
    out = []
    for t in tokens(path):
        if t.type == "fence" and t.info.strip() == "sh":
            for line in t.content.replace("\\\n", " ").splitlines():
                line = line.split(" #", 1)[0].strip()
                if line and not line.startswith("#"):
                    out.append(line)
    return out


def test_the_readme_is_short_and_starts_with_what_it_is():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text) < 12_000, len(text)
    heads = [t.content for i, t in enumerate(tokens(ROOT / "README.md")) if i and tokens(ROOT / "README.md")[i - 1].type
             == "heading_open"]
    order = ["Try it", "Behind OpenClaw in three steps", "Behind Claude Code in three steps",
             "Behind Codex in three steps", "Behind Gemini CLI in three steps",
             "Behind opencode in three steps", "What it detects", "Measured"]
    assert [h for h in heads if h in order] == order, heads


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_anchor_resolves(page):
    for href in links(page):
        if re.match(r"https?://", href):
            continue                       # outside links are not fetched (no network at test time)
        target, _, anchor = href.partition("#")
        dest = (page.parent / target).resolve() if target else page
        assert dest.exists(), f"{page.name}: {href} points at nothing"
        if anchor:
            assert dest.suffix == ".md" and anchor in anchors(dest), f"{page.name}: {href}: no such anchor"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_a_user_reads_names_the_projects_issues_or_sessions(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\b[Ii]ssue #\d+|\bin progress\)|\bsession \d+\b", text), page


def test_every_figure_in_the_readme_and_measured_page_comes_from_the_evaluation():
    # the evaluation writes both (tests/corpus/evaluate.py --write-docs; scripts/test.sh runs
    # --check-docs): here, that the README's figures sit between its markers and measured.md says so
    import docs_measured
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(docs_measured.BEGIN, 1)[1].split(docs_measured.END, 1)[0]
    assert block.count("\n|") >= 6
    outside = readme.replace(block, "")
    assert not re.search(r"\d+(?:\.\d+)?%", outside), "a percentage typed outside the evaluation's block"
    assert "--write-docs" in (ROOT / "docs" / "measured.md").read_text(encoding="utf-8")


def test_the_openclaw_config_in_the_readme_is_json5_that_routes_only_compaction_to_serve():
    blocks = [t.content for t in tokens(ROOT / "README.md") if t.type == "fence" and t.info.strip() == "json5"]
    assert len(blocks) == 1
    cfg = json5.loads(blocks[0])
    model = cfg["agents"]["defaults"]["compaction"]["model"]
    provider, _, mid = model.partition("/")
    prov = cfg["models"]["providers"][provider]
    assert prov["baseUrl"] == "http://127.0.0.1:8742/v1" and mid in [m["id"] for m in prov["models"]]
    assert set(cfg["agents"]["defaults"]) == {"compaction"}       # the agent's own turns are not routed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sandbox(tmp_path):
    """A copy of the demo home with every store, a Claude Code config with one transcript, and
    an environment whose PATH has the guard but no `openclaw`."""
    home = tmp_path / "openclaw"
    shutil.copytree(DEMO, home)
    subprocess.run([sys.executable, str(ROOT / "demo" / "add_openclaw_stores.py"), str(home)], check=True,
                   capture_output=True)
    claude = tmp_path / "claude"
    (claude / "projects" / "p").mkdir(parents=True)
    shutil.copy(next((ROOT / "tests" / "data" / "claude-code").rglob("*.jsonl")), claude / "projects" / "p")
    codex = tmp_path / "codex"
    (codex / "sessions" / "2026" / "12" / "05").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "recordings" / "codex" / "data" / "good-auto.jsonl",
                codex / "sessions" / "2026" / "12" / "05" / "rollout-2026-12-05T14-25-58-good.jsonl")
    chats = tmp_path / ".gemini" / "tmp" / "work" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "recordings" / "gemini" / "data" / "session-good-long.jsonl",
                chats / "session-2026-12-05T15-04-a7dc17fc.jsonl")
    shutil.copytree(ROOT / "tests" / "recordings" / "opencode" / "data" / "good-long",
                    tmp_path / ".local" / "share" / "opencode")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "compaction-guard").write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'guard.py'} \"$@\"\n")
    (bin_dir / "compaction-guard").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "CLAUDE", "CODEX", "GEMINI", "OPENCODE", "XDG_",
                                                                      "GUARD_"))}
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", OPENCLAW_STATE_DIR=str(home), CLAUDE_CONFIG_DIR=str(claude),
               CODEX_HOME=str(codex),
               HOME=str(tmp_path), OPENAI_API_KEY="sk-test-not-a-key")
    return env, home, claude


def test_every_command_in_the_readme_names_something_that_exists_and_the_safe_ones_run(sandbox):
    env, home, claude = sandbox
    commands = [c for page in PAGES for c in shell_commands(page)]
    assert commands
    ran = 0
    for cmd in shell_commands(ROOT / "README.md"):
        argv = shlex.split(cmd)
        if argv[0].startswith("./scripts/"):
            assert os.access(ROOT / argv[0], os.X_OK), cmd
        elif argv[:2] == ["pip", "install"]:           # run as written by test_readme_steps.py
            assert argv[2].split("[")[0] == "." and (ROOT / "pyproject.toml").is_file(), cmd
            extras = re.search(r"\[(.+)\]", argv[2])
            text = (ROOT / "pyproject.toml").read_text()
            assert all(re.search(rf"^{e} = \[", text, re.M) for e in (extras.group(1).split(",") if extras else [])), \
                cmd
        elif argv[0] == "compaction-guard" and argv[1] == "serve":
            port = _free_port()
            p = subprocess.Popen(argv + ["--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                for _ in range(150):
                    try:
                        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=1).read()
                        break
                    except OSError:
                        assert p.poll() is None, p.communicate()[1]
                        time.sleep(0.2)
                assert b'"ok"' in body
                ran += 1
            finally:
                p.terminate()
                p.wait(30)
        elif argv[0] == "compaction-guard":
            p = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert p.returncode in (0, 1), (cmd, p.stderr)          # 1: failures found, as the demo has
            assert "Traceback" not in p.stderr + p.stdout, cmd
            ran += 1
        else:
            pytest.fail(f"a README command the test does not know how to check: {cmd}")
    assert ran >= 8
    # what the OpenClaw and Claude Code steps did, in the sandbox only
    assert (home / "hooks" / "compaction-resilience-guard" / "handler.js").exists()
    assert "hook claude-code" in (claude / "settings.json").read_text()
    assert "hook opencode" in (home.parent / ".config" / "opencode" / "plugin" / "compaction-guard.js").read_text()
    assert "hook codex" in (home.parent / "codex" / "hooks.json").read_text()
    assert (claude / "compaction-guard" / "state.yaml").exists()


def _known_flags(words: list) -> set:
    """The flags `compaction-guard <words>` accepts, read from its own --help."""
    sub = [w for w in words[:1] if w in ("hook", "install", "uninstall")]
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), *sub, "--help"], capture_output=True, text=True,
                       timeout=60)
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", p.stdout))


def test_every_flag_the_docs_show_is_one_the_command_accepts():
    flags = {}
    for page in PAGES:
        for cmd in shell_commands(page):
            argv = shlex.split(cmd, comments=True) if "'" in cmd or '"' in cmd else cmd.split()
            if argv[:2] == ["python3", "guard.py"]:
                argv = ["compaction-guard"] + argv[2:]
            if argv[:1] != ["compaction-guard"]:
                continue
            words = argv[1:]
            known = flags.setdefault(tuple(w for w in words[:1] if w in ("hook", "install", "uninstall")),
                                     _known_flags(words))
            for w in words:
                if w.startswith("--"):
                    assert w.split("=", 1)[0] in known, f"{page.name}: {cmd}: {w} is no flag of compaction-guard"
