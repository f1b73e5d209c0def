"""What sending verdicts to a team's telemetry costs, and why the guard does not use the
OpenTelemetry SDK for it (docs/dependencies.md).

    python3 benchmarks/bench_telemetry.py                       # the guard's own exporter
    python3 benchmarks/bench_telemetry.py --sdk-python PY       # also the SDK, installed for PY:
        python3 -m venv /tmp/otel && /tmp/otel/bin/pip install opentelemetry-sdk \\
            opentelemetry-exporter-otlp-proto-http
        python3 benchmarks/bench_telemetry.py --sdk-python /tmp/otel/bin/python

Rows, each a whole process (median of --runs, interleaved):
- bare start: `python -c pass`;
- what the telemetry worker imports to send (compaction_guard.telemetry, otlp, exposition,
  http.client): paid by the worker a verdict starts, never by the agent's hook;
- the SDK's logs and metrics providers with their OTLP/HTTP exporters (what a hook would import
  to send through the SDK, before it sends anything);
and, in this process, what `telemetry.publish` costs the hook that recorded a verdict (the events
written to the spool, the worker started), median of --runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDK_IMPORTS = ("from opentelemetry.sdk._logs import LoggerProvider; "
               "from opentelemetry.sdk._logs.export import BatchLogRecordProcessor; "
               "from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter; "
               "from opentelemetry.sdk.metrics import MeterProvider; "
               "from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader; "
               "from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter; "
               "from opentelemetry.sdk.resources import Resource")


def whole(cmd: list) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--sdk-python", help="a Python with opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http")
    args = ap.parse_args()
    py = sys.executable
    rows = {"bare start (python -c pass)": [py, "-c", "pass"],
            "the worker's imports (compaction_guard.telemetry)": [
                py, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); import compaction_guard.telemetry, "
                          "compaction_guard.exposition, http.client"]}
    if args.sdk_python:
        rows["bare start of that Python"] = [args.sdk_python, "-c", "pass"]
        rows["the SDK's providers and OTLP/HTTP exporters"] = [args.sdk_python, "-c", SDK_IMPORTS]
    for cmd in rows.values():
        whole(cmd)
    times = {k: [] for k in rows}
    for _ in range(args.runs):
        for k, cmd in rows.items():
            times[k].append(whole(cmd))
    print(f"{sys.version.split()[0]}; {args.runs} whole-process runs each, interleaved; {os.cpu_count()} cores")
    for k, ts in times.items():
        print(f"{k:55} {statistics.median(ts) * 1000:8.1f} ms")
    sys.path.insert(0, str(ROOT))
    from compaction_guard import telemetry
    from compaction_guard.settings import DEFAULT
    settings = DEFAULT.with_overrides(push_url="http://127.0.0.1:9")      # nothing listens: the worker gives up
    event = {"at_ns": time.time_ns(), "agent": "codex", "via": "hook", "source": "codex", "summary_id": "w",
             "session": "s", "valid": False, "failures": ["empty"], "warnings": [], "level": 1, "fallback": False,
             "tokens_before": 1000, "tokens_after": 10, "trigger": "auto"}
    took = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            t = time.perf_counter()
            telemetry.publish(Path(tmp), "codex", [dict(event)], settings, env={"PATH": os.environ.get("PATH", "")})
            took.append(time.perf_counter() - t)
        time.sleep(1.0)
    print(f"{'telemetry.publish in the hook (spool + start the worker)':55} {statistics.median(took) * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
