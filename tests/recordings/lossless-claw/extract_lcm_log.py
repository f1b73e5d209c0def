#!/usr/bin/env python3
"""Cut lossless-claw's own log file (/tmp/openclaw/lossless-claw-<date>.log: OpenClaw's file log dir, shared by
every gateway on the machine) to one case's time window (the first and last timestamp of work/<case>/gateway.full.log)
and to the case's lcm.db: writes data/<case>-lcm.log.   python3 extract_lcm_log.py [case ...]"""
import glob, json, re, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def window(case):
    ts = re.findall(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)", (HERE / "work" / case / "gateway.full.log").read_text(errors="replace"), re.M)
    return ts[0][:23], ts[-1][:23]


def extract(case):
    lo, hi = window(case)
    out = []
    for f in sorted(glob.glob("/tmp/openclaw/lossless-claw-*.log")):
        for line in open(f, errors="replace"):
            try:
                t = json.loads(line)["time"][:23]
            except (ValueError, KeyError):
                continue
            if lo <= t <= hi + "Z" and ("db=" not in line or f"/work/{case}/" in line):
                out.append(line)
    (HERE / "data" / f"{case}-lcm.log").write_text("".join(out))
    return len(out)


if __name__ == "__main__":
    for c in sys.argv[1:] or [p.name for p in (HERE / "work").iterdir() if p.is_dir()]:
        print(c, extract(c))
