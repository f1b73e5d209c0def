"""The state file: atomic, locked, bounded, corrupt files moved aside, no summary text."""
import multiprocessing
import os
import stat

import pytest
import yaml

from compaction_guard import operations
from compaction_guard.settings import DEFAULT
from compaction_guard.state import StateStore, state_path


def _bump(path, n):
    store = StateStore(path, DEFAULT)
    for _ in range(n):
        with store.update() as st:
            st["level_usage"]["l1_normal"] += 1


def test_concurrent_updates_lose_nothing(tmp_path):
    path = tmp_path / "state.yaml"
    procs = [multiprocessing.Process(target=_bump, args=(path, 25)) for _ in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert StateStore(path, DEFAULT).read()["level_usage"]["l1_normal"] == 200


def test_corrupt_state_is_moved_aside_with_a_warning(tmp_path):
    path = tmp_path / "state.yaml"
    path.write_text("level_usage: [unclosed\n")
    warnings = []
    st = StateStore(path, DEFAULT, warn=warnings.append).read()
    assert st["level_usage"]["l1_normal"] == 0
    aside = list(tmp_path.glob("state.yaml.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == "level_usage: [unclosed\n"
    assert "moved it to" in warnings[0]


def test_failed_write_leaves_previous_state(tmp_path, monkeypatch):
    path = tmp_path / "state.yaml"
    store = StateStore(path, DEFAULT)
    with store.update() as st:
        st["level_usage"]["l2_aggressive"] = 7
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", boom)
    try:
        with store.update() as st:
            st["level_usage"]["l2_aggressive"] = 8
    except Exception as exc:
        assert "No space left" in str(exc) and "previous state is intact" in str(exc)
    assert path.read_bytes() == before
    assert not list(tmp_path.glob(".state-*.tmp"))


def test_state_is_private_and_holds_no_summary_text(demo_home):
    d = demo_home / "skill-state" / "compaction-resilience-guard"
    d.mkdir(parents=True, mode=0o755)
    d.chmod(0o755)
    operations.check(demo_home)
    path = state_path(demo_home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    assert "Priya" not in text and "Summary unavailable" not in text   # ids and figures only
    st = yaml.safe_load(text)
    assert set(st["failures"][0]) == {"summary_id", "failure_type", "level_used", "input_tokens", "output_tokens",
                                      "detected_at", "source"}


def test_history_is_bounded_and_failures_not_duplicated(demo_home):
    settings = DEFAULT.with_overrides(max_check_history=3)
    for _ in range(5):
        operations.check(demo_home, settings=settings)
    st = StateStore(state_path(demo_home), settings).read()
    assert len(st["check_history"]) == 3
    keys = [(f["source"], f["summary_id"], f["failure_type"]) for f in st["failures"]]
    # 7 failing summaries, two with two kinds (s-d0-005 is inflated, and about something else than
    # its one-line input: ungrounded)
    assert len(keys) == len(set(keys)) == 9
    # each stored summary counts once (the [TRUNCATED] one as written by a fallback), not once per
    # check; level_usage counts the guard's own chain runs, and there were none
    assert st["stored_summaries"] == {"by_model": 9, "by_fallback": 1}
    assert st["level_usage"] == {"l1_normal": 0, "l2_aggressive": 0, "l3_deterministic": 0}


@pytest.mark.parametrize("bad", [
    "failures: [1]\n",
    "daily: {'2026-12-01': 5}\n",
    "circuit: {events: [1]}\n",
    "level_usage: {l1_normal: many}\ntotals: {failures: {chain: 3}}\n",
    "check_history: [[1, 2]]\nchain_history: [7]\nwatermarks: {x: [1]}\n",
])
def test_a_state_with_fields_of_the_wrong_type_cannot_crash_a_command(tmp_path, bad):
    """Every field is checked on read: what is wrong is left out, the file is kept as a copy,
    and it is said once; --report, --status, Prometheus and --check all run."""
    from conftest import run_guard
    home = tmp_path / "home"
    path = state_path(home)
    path.parent.mkdir(parents=True)
    path.write_text("last_check_at: null\n" + bad)
    outs = [run_guard(*args, home=home) for args in
            (["--report"], ["--status"], ["--report", "--format", "prometheus"], ["--report", "--format", "json"])]
    for p in outs:
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    warned = [p for p in outs if "fields of the wrong type" in p.stderr]
    assert len(warned) == 1                                      # said once
    assert len(list(path.parent.glob("state.yaml.invalid-*"))) == 1
    (home / "s.txt").write_text("The user migrated the sessions to SQLite and added an index on updated_at.")
    p = run_guard("--check", "--file", str(home / "s.txt"), home=home)
    assert p.returncode == 0, p.stderr
    assert StateStore(path, DEFAULT).read()["totals"]["checks"] == 1


def test_per_source_totals_and_prometheus_labels_stay_bounded(tmp_path):
    """Every file checked with --file is a source `file:<name>`: counts fold, never drop, and
    Prometheus shows one `file` label value."""
    from compaction_guard.render import report_prometheus
    from prometheus_client.parser import text_string_to_metric_families
    home = tmp_path / "home"
    store = StateStore(state_path(home), DEFAULT)
    with store.update() as st:
        for i in range(300):
            st["totals"]["failures"][f"file:summary-{i}.json"] = {"empty": 1, "garbled": i % 2}
        st["totals"]["failures"]["lossless-claw"] = {"repetition": 4}
    kept = store.read()["totals"]["failures"]
    assert len(kept) <= DEFAULT.max_sources_kept
    assert kept["file"] == {"empty": 300, "garbled": 150} and kept["lossless-claw"] == {"repetition": 4}
    text = report_prometheus(operations.report(home))
    sources = {s.labels["source"] for fam in text_string_to_metric_families(text)
               if fam.name == "compaction_guard_failures" for s in fam.samples}
    assert sources == {"file", "lossless-claw"}


def test_the_state_is_json_any_yaml_reader_parses_and_yaml_states_still_read(tmp_path):
    import json as _json
    store = StateStore(tmp_path / "state.yaml", DEFAULT)
    with store.update() as s:
        s["level_usage"]["l2_aggressive"] = 3
        s["failures"].append({"summary_id": "sum_é✓", "failure_type": "garbled", "detected_at": "2026-12-01T00:00:00+00:00",
                              "source": "lossless-claw"})
    raw = (tmp_path / "state.yaml").read_text()
    assert raw.isascii() and _json.loads(raw) == yaml.safe_load(raw)     # JSON, and YAML alike
    assert store.read()["failures"][0]["summary_id"] == "sum_é✓"
    (tmp_path / "state.yaml").write_text("level_usage:\n  l1_normal: 4\nlast_check_at: '2026-11-30T10:00:00+00:00'\n")
    st = store.read()                         # a state written as YAML (by hand, or by an older guard)
    assert st["level_usage"]["l1_normal"] == 4 and st["last_check_at"] == "2026-11-30T10:00:00+00:00"
