"""A team's view in Prometheus: 20 machines (homes), each with the five agents' real stores
(tests/teamkit.py), each agent's hook judging its compaction and pushing the agent's counters to
the real Pushgateway (the setting push_url), scraped by the real Prometheus; both from Debian's
packages (`prometheus`, `prometheus-pushgateway`; .ci/run installs them).

- a PromQL query gives each agent's failure rate across the machines, and it is the rate the
  recordings' labels give (what each case's recipe made, not what the guard said);
- the alert rules (deploy/prometheus/compaction-guard-rules.yml) pass `promtool check rules`, load
  in that Prometheus, and fire on exactly the failing machines: the failure rate per machine and
  agent, the team's rate per agent, the fallback share (lossless-claw's fallbacks), the open
  breaker (three chains in a row at L3 on one machine). The running Prometheus loads them as
  shipped (pending until their `for:`) and, to see them fire within the test, the same rules
  with `for:` taken out;
- every query of the Grafana dashboard (deploy/grafana) runs there and the main ones have data;
- a check after the hooks counts nothing again; `--check --textfile DIR` writes what
  node_exporter's textfile collector reads.
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
import yaml

import teamkit
from teamkit import AGENTS, FAILING, Machine, ROOT, expected, get_json

RULES = ROOT / "deploy" / "prometheus" / "compaction-guard-rules.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "compaction-guard-team.json"
MACHINES = range(20)
BREAKER_MACHINE = 7

found = teamkit.binaries()
if "missing" in found:
    if os.environ.get("GUARD_REQUIRE_PROMETHEUS") == "1":
        raise RuntimeError(f"{', '.join(found['missing'])} not installed: .ci/run installs Debian's prometheus and "
                           "prometheus-pushgateway")
    pytestmark = pytest.mark.skip(reason=f"{', '.join(found['missing'])} not on PATH: apt-get install prometheus "
                                         "prometheus-pushgateway (.ci/run does)")


def query(base: str, promql: str) -> list:
    doc = get_json(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def wait_for(what, timeout: float = 60.0, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(every)


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("team")
    procs = []
    try:
        pg_port, prom_port = teamkit.free_port(), teamkit.free_port()
        pg = subprocess.Popen([found["prometheus-pushgateway"], f"--web.listen-address=127.0.0.1:{pg_port}"],
                              stdout=subprocess.DEVNULL, stderr=(tmp / "pushgateway.log").open("w"))
        procs.append(pg)
        teamkit.wait_http(f"http://127.0.0.1:{pg_port}/-/ready", pg)
        # the shipped rules, and the same rules firing at once (no `for:`), to see them fire here
        rules = yaml.safe_load(RULES.read_text())
        for group in rules["groups"]:
            group["name"] += "-now"
            for rule in group["rules"]:
                rule.pop("for", None)
                if "alert" in rule:
                    rule["alert"] += "Now"
                else:
                    rule["record"] = rule["record"].replace("compaction_guard", "now_compaction_guard", 1)
                    rule["record"] = rule["record"].replace(":compaction_guard", ":now_compaction_guard")
                rule["expr"] = re.sub(r"(\bcompaction_guard:|\bagent:compaction_guard)",
                                      lambda m: m.group(1).replace("compaction_guard", "now_compaction_guard"),
                                      rule["expr"])
        now_rules = tmp / "rules-now.yml"
        now_rules.write_text(yaml.safe_dump(rules, sort_keys=False))
        config = tmp / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES), str(now_rules)],
            "scrape_configs": [{"job_name": "pushgateway", "honor_labels": True,
                                "static_configs": [{"targets": [f"127.0.0.1:{pg_port}"]}]}]}))
        prom = subprocess.Popen([found["prometheus"], f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
                                stdout=subprocess.DEVNULL, stderr=(tmp / "prometheus.log").open("w"))
        procs.append(prom)
        base = f"http://127.0.0.1:{prom_port}"
        teamkit.wait_http(f"{base}/-/ready", prom)

        machines = [Machine(tmp / "homes", n, {"push_url": f"http://127.0.0.1:{pg_port}"}) for n in MACHINES]
        for m in machines:
            for agent in AGENTS:
                m.run(agent, teamkit.case_of(agent, m.n))
        _open_the_breaker(machines[BREAKER_MACHINE])
        teamkit.wait_workers(machines)
        groups = wait_for(lambda: len(get_json(f"http://127.0.0.1:{pg_port}/api/v1/metrics")["data"]) >= 100 or None)
        assert groups, "not every machine's agents pushed"
        yield {"base": base, "machines": machines, "pg": f"http://127.0.0.1:{pg_port}", "tmp": tmp}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def _open_the_breaker(machine: Machine) -> None:
    """Three compactions in a row through the guard's chain ending at L3 (both LLM levels fail):
    the breaker opens, and each run is a verdict the chain records (state.record_chain)."""
    from compaction_guard import config, faults, operations
    from compaction_guard.agents.claude_code import store
    from compaction_guard.summarizers import ExtractiveSummarizer
    layout = machine.layout("openclaw")
    settings = config.load(layout, machine.env).settings
    history, _ = store.history_since_boundary(teamkit.CLAUDE / "good.jsonl")
    for _ in range(settings.breaker_threshold):
        r = operations.compact(history, layout, summarizer=ExtractiveSummarizer(), settings=settings,
                               faults=faults.parse("L1=empty,L2=garbled"))
        assert r.level_used == 3


def test_per_agent_failure_rates_across_machines_are_the_recordings_labels(team):
    base = team["base"]
    stored = sum(expected(a, MACHINES)[1] for a in AGENTS)
    scraped = wait_for(lambda: query(base, "sum(compaction_guard_stored_summaries_total)") and float(query(
        base, "sum(compaction_guard_stored_summaries_total)")[0]["value"][1]) == stored)
    assert scraped, query(base, 'compaction_guard_stored_summaries_total{agent="claude-code"}')
    got = wait_for(lambda: query(base, "agent:compaction_guard_failure_rate:ratio1h") if len(
        query(base, "agent:compaction_guard_failure_rate:ratio1h")) == len(AGENTS) else None)
    assert got, "the recording rule gave no rate per agent"
    rates = {r["metric"]["agent"]: float(r["value"][1]) for r in got}
    # the same from the raw totals, across machines
    raw = {r["metric"]["agent"]: float(r["value"][1]) for r in query(
        base, "sum by (agent) (compaction_guard_failed_summaries_total) / "
              "sum by (agent) (compaction_guard_stored_summaries_total)")}
    machines = {r["metric"]["agent"]: int(r["value"][1]) for r in query(
        base, "count by (agent) (compaction_guard_failed_summaries_total)")}
    for agent in AGENTS:
        failed, stored = expected(agent, MACHINES)
        assert rates[agent] == pytest.approx(failed / stored), agent
        assert raw[agent] == pytest.approx(failed / stored), agent
        assert machines[agent] == len(MACHINES)
    totals = {r["metric"]["agent"]: int(float(r["value"][1])) for r in query(
        base, "sum by (agent) (compaction_guard_stored_summaries_total)")}
    assert totals == {a: expected(a, MACHINES)[1] for a in AGENTS}


def _active(base: str, alert: str, state: str) -> set:
    return {(r["metric"]["machine"] if "machine" in r["metric"] else None, r["metric"]["agent"])
            for r in query(base, f'ALERTS{{alertname="{alert}", alertstate="{state}"}}')}


def test_the_alert_rules_load_and_fire_on_the_failing_machines(team):
    base = team["base"]
    checked = subprocess.run([found["promtool"], "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0 and "SUCCESS" in checked.stdout, checked.stdout + checked.stderr
    loaded = get_json(f"{base}/api/v1/rules")["data"]["groups"]
    shipped = [r for g in loaded if not g["name"].endswith("-now") for r in g["rules"]]
    assert len(shipped) == len([r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]])
    assert all(r["health"] == "ok" for g in loaded for r in g["rules"]), loaded

    failing = {(f"machine-{m:02d}", a) for a, ms in FAILING.items() for m in ms}
    assert wait_for(lambda: _active(base, "CompactionGuardFailureRateNow", "firing") == failing) , \
        _active(base, "CompactionGuardFailureRateNow", "firing") ^ failing
    # as shipped: the same machines, waiting out their `for:`
    assert wait_for(lambda: _active(base, "CompactionGuardFailureRate", "pending") == failing)
    fallback = {(f"machine-{m:02d}", "openclaw") for m in FAILING["openclaw"]}
    assert wait_for(lambda: _active(base, "CompactionGuardFallbackShareNow", "firing") == fallback)
    # the team's rate per agent: over 10% for every agent but Gemini CLI (2 of 20 machines)
    over = {a for a in AGENTS if expected(a, MACHINES)[0] / expected(a, MACHINES)[1] > 0.10}
    assert over == {"openclaw", "claude-code", "codex", "opencode"}
    assert wait_for(lambda: _active(base, "CompactionGuardAgentFailureRateNow", "firing") == {(None, a) for a in over})
    # one machine's breaker, open after three chains in a row at L3: firing as shipped (no `for:`)
    breaker = {(f"machine-{BREAKER_MACHINE:02d}", "openclaw")}
    assert wait_for(lambda: _active(base, "CompactionGuardBreakerOpen", "firing") == breaker)
    assert wait_for(lambda: _active(base, "CompactionGuardChainL3ShareNow", "firing") == breaker)
    firing = query(base, 'ALERTS{alertname="CompactionGuardBreakerOpen"}')[0]["metric"]
    assert firing["user"] == f"dev{BREAKER_MACHINE:02d}" and firing["job"] == "compaction_guard"


def test_every_dashboard_query_runs_in_that_prometheus(team):
    base = team["base"]
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert len(exprs) >= 8
    with_data = 0
    for expr in exprs:
        q = expr.replace("$agent", ".*").replace("$machine", ".*")
        with_data += bool(query(base, q))          # a query PromQL rejects fails in `query`
    assert with_data >= len(exprs) - 2              # increase() over one push, ALERTS may still be empty


def test_a_check_after_the_hooks_counts_nothing_again(team):
    """Each compaction a hook counted (Claude Code's under the identity its transcript gives it
    later) is not counted again by a check of the stores."""
    from compaction_guard import config, operations
    m = team["machines"][19]
    pairs = operations.layouts(list(AGENTS[1:]), env=m.env)
    before = {a.name: operations.report(lay)["stored_summaries"] for a, lay in pairs}
    rep = operations.check_machine(pairs, lambda lay: config.load(lay, m.env).settings)
    assert rep.checked >= 4
    after = {a.name: operations.report(lay)["stored_summaries"] for a, lay in pairs}
    assert after == before and sum(sum(v.values()) for v in after.values()) == 4


def test_check_textfile_writes_what_node_exporters_collector_reads(team, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families
    m = team["machines"][3]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "GUARD_", "OPENCLAW_", "CLAUDE_", "OTEL_"))}
    env.update(m.env)
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), "--check", "--textfile", str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    files = sorted(x.name for x in tmp_path.iterdir())
    assert files == sorted(f"compaction_guard-dev03-{a}.prom" for a in AGENTS)       # nothing half-written
    fams = {f.name: f for f in text_string_to_metric_families((tmp_path / "compaction_guard-dev03-codex.prom").read_text())}
    (sample,) = fams["compaction_guard_failed_summaries"].samples
    assert sample.labels == {"machine": "machine-03", "user": "dev03", "agent": "codex"}
    bad = subprocess.run([sys.executable, str(ROOT / "guard.py"), "--check", "--textfile", str(tmp_path / "nope")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not a directory" in bad.stderr
