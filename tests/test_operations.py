"""Running it like infrastructure: the skill file, reports, Prometheus, HTML, config."""
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT, run_guard

TEXT = "\n".join(f"user: check host web-{i:02d}\nassistant: web-{i:02d} answers in {100 + i} ms" for i in range(40))


def _activity(home):
    """A check of the demo stores, chains at every level, and the breaker opened."""
    run_guard("--check", home=home)
    run_guard("--simulate", TEXT, home=home)
    run_guard("--simulate", TEXT, "--fault", "L1=repetition", home=home)
    for _ in range(3):
        run_guard("--simulate", TEXT, "--fault", "L1=empty,L2=timeout", home=home)
    run_guard("--simulate", TEXT, home=home)        # breaker open: straight to L3


def test_skill_md_frontmatter():
    text = (ROOT / "SKILL.md").read_text()
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    meta = yaml.safe_load(m.group(1))
    assert meta["name"] == "compaction-resilience-guard" and meta["description"]
    assert meta["category"] == "openclaw-native" and meta["stateful"] is True and meta["version"]
    for usage in ("python3 guard.py --check", "--simulate", "--report", "--status", "--format json",
                  "openclaw cron add", "crontab"):
        assert usage in text


def test_the_daily_table_folds_runs_of_empty_days_into_one_line():
    from compaction_guard.render import _daily_chart

    def day(date, l1=0, fails=0):
        return {"date": date, "l1_normal": l1, "l2_aggressive": 0, "l3_deterministic": 0,
                "stored_by_model": 0, "stored_by_fallback": 0, "failures": {"empty": fails} if fails else {}}
    days = [day(f"2026-11-{d:02d}") for d in range(1, 29)] + [day("2026-11-29", l1=2)] \
        + [day("2026-11-30")] + [day("2026-12-01", fails=1)] + [day("2026-12-02"), day("2026-12-03")]
    lines = _daily_chart(days)
    assert lines[1] == "  2026-11-01 to 2026-11-28: nothing (28 days)"
    assert lines[2].startswith("  2026-11-29  ██") and "2/0/0" in lines[2]
    assert lines[3].split() == ["2026-11-30", "-", "-"]          # one quiet day: its own line
    assert lines[4].startswith("  2026-12-01") and lines[4].rstrip().endswith("1")
    assert lines[5] == "  2026-12-02 to 2026-12-03: nothing (2 days)" and len(lines) == 6


def test_status_fits_one_screen(demo_home):
    _activity(demo_home)
    out = run_guard("--status", home=demo_home).stdout
    assert len(out.splitlines()) <= 10 and max(map(len, out.splitlines())) <= 200, out
    assert "circuit breaker OPEN until" in out and "Last check:" in out


def test_report_text_has_days_sources_breaker(demo_home):
    _activity(demo_home)
    p = run_guard("--report", home=demo_home)
    assert p.returncode == 0
    out = p.stdout
    assert "Level mix per day" in out and re.search(r"\d{4}-\d\d-\d\d\s+█+▒+░+", out)
    assert "Failure kinds by source:" in out and "memory-dag-compactor" in out and "chain" in out
    assert "Circuit breaker: OPEN until" in out and "opened" in out
    # the warning over the guard's chain runs (4 of 6 at L3); the stored summaries (1 of 10 by a
    # fallback) are at the threshold, not over it
    assert "WARNING: the guard's chain ended at L3 in 67% of its 6 runs" in out
    assert "stored summaries" not in out.split("WARNING:")[1].splitlines()[0]
    rep = json.loads(run_guard("--report", "--format", "json", home=demo_home).stdout)
    today = rep["daily"][-1]
    assert len(rep["daily"]) == 30 and today["l1_normal"] == 1 and today["l2_aggressive"] == 1
    assert today["l3_deterministic"] == 4 and today["stored_by_model"] == 9 and today["stored_by_fallback"] == 1


def test_report_since_filters(demo_home):
    _activity(demo_home)
    rep = json.loads(run_guard("--report", "--since", "2099-01-01", "--format", "json", home=demo_home).stdout)
    assert rep["total_compactions"] == 0 and rep["failures_total"] == 0 and rep["daily"] == []
    rep = json.loads(run_guard("--report", "--since", "2000-01-01", "--format", "json", home=demo_home).stdout)
    assert rep["total_compactions"] > 0 and rep["since"] == "2000-01-01"
    bad = run_guard("--report", "--since", "last tuesday", home=demo_home)
    assert bad.returncode == 2 and "YYYY" not in bad.stderr and "2026-11-01" in bad.stderr


def test_prometheus_output_parses_with_the_official_parser(demo_home):
    from prometheus_client.parser import text_string_to_metric_families
    _activity(demo_home)
    p = run_guard("--report", "--format", "prometheus", home=demo_home)
    assert p.returncode == 0
    fams = {f.name: f for f in text_string_to_metric_families(p.stdout)}
    levels = {s.labels["level"]: s.value for s in fams["compaction_guard_compactions"].samples}
    assert set(levels) == {"l1_normal", "l2_aggressive", "l3_deterministic"} and levels["l2_aggressive"] == 1
    fails = {(s.labels["source"], s.labels["kind"]): s.value for s in fams["compaction_guard_failures"].samples}
    assert fails[("memory-dag-compactor", "stale")] == 1 and fails[("chain", "timeout")] == 3
    assert fams["compaction_guard_failures"].type == "counter"
    assert fams["compaction_guard_summaries_checked"].samples[0].value == 10
    assert fams["compaction_guard_last_check_timestamp_seconds"].samples[0].value > 1.7e9
    share = fams["compaction_guard_l3_share"].samples[0].value
    assert 0.1 < share < 1 and fams["compaction_guard_circuit_open"].samples[0].value == 1


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_html_report_renders_in_headless_chromium(demo_home, tmp_path):
    from PIL import Image
    _activity(demo_home)
    # an id carrying markup must come out escaped
    sp = demo_home / "skill-state" / "compaction-resilience-guard" / "state.yaml"
    st = yaml.safe_load(sp.read_text())
    st["failures"].append({"summary_id": "<script>alert(1)</script>", "failure_type": "empty", "level_used": 1,
                           "input_tokens": 1, "output_tokens": 1, "detected_at": "2026-11-30T00:00:00+00:00",
                           "source": "x<b>y"})
    sp.write_text(yaml.safe_dump(st))
    html = tmp_path / "report.html"
    p = run_guard("--report", "--html", html, home=demo_home)
    assert p.returncode == 0 and html.exists()
    page = html.read_text()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<svg" in page and not re.search(r"(src|href)=[\"']https?:", page)
    chrome = _chromium()
    if not chrome:
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium (.ci/run does)")
        pytest.skip("chromium is not installed")
    shot = tmp_path / "shot.png"
    subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=960,1300", f"--screenshot={shot}",
                    html.as_uri()], capture_output=True, timeout=120)
    img = Image.open(shot).convert("RGB")
    assert img.size == (960, 1300)
    colors = img.getcolors(maxcolors=1 << 20)
    # the level colours of the charts are on the page, not just text on white
    present = {rgb for _, rgb in colors}
    for rgb in ((0x2e, 0x9e, 0x5b), (0xd0, 0x45, 0x3b), (0xe0, 0xa2, 0x1b)):
        assert rgb in present, rgb
    assert len(colors) > 50


def test_config_file_env_and_flags_with_origins(home, monkeypatch):
    cfg = home / "skill-state" / "compaction-resilience-guard" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("thresholds:\n  max_entropy: 5.2\n  min_summary_chars: 12\nhistory:\n  max_check_history: 7\n"
                   "provider:\n  provider: openai\n  model: gpt-from-file\n  base_url: http://127.0.0.1:9/v1\n")
    monkeypatch.setenv("GUARD_MIN_SUMMARY_CHARS", "15")
    p = run_guard("--print-config", "--set", "breaker_threshold=5", "--model", "gpt-from-flag", "--format", "json",
                  home=home)
    doc = json.loads(p.stdout)
    s = doc["settings"]
    assert s["max_entropy"] == {"value": 5.2, "origin": "file"}
    assert s["min_summary_chars"] == {"value": 15, "origin": "environment"}
    assert s["breaker_threshold"] == {"value": 5, "origin": "flag"}
    assert s["max_inflation_ratio"] == {"value": 1.0, "origin": "default"}
    assert doc["provider"]["model"] == {"value": "gpt-from-flag", "origin": "flag"}
    assert doc["provider"]["base_url"]["origin"] == "file"
    text = run_guard("--print-config", home=home).stdout
    assert re.search(r"max_entropy\s+5.2\s+file", text)
    # the settings are used: a 13-character summary is empty under min_summary_chars=15
    f = home / "s.txt"
    f.write_text("Fixed the bug.")
    assert json.loads(run_guard("--check", "--file", f, "--format", "json", home=home).stdout)["results"][0]["failures"] == ["empty"]


@pytest.mark.parametrize("body,needle", [
    ("max_entropy: [1, 2\n", "not valid YAML"),
    ("no_such_setting: 3\n", "unknown setting 'no_such_setting'"),
    ("max_entropy: lots\n", "is not a float"),
    ("provider:\n  api_key: sk-123\n", "unknown provider setting"),
])
def test_bad_config_is_one_line_naming_the_file(home, body, needle):
    cfg = home / "skill-state" / "compaction-resilience-guard" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(body)
    p = run_guard("--status", home=home)
    assert p.returncode == 2 and str(cfg) in p.stderr and needle in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "sk-123" not in p.stderr
