"""Add OpenClaw's own stores to a demo home: a lossless-claw lcm.db and a session
transcript, each with good and broken compaction summaries.

    python3 demo/add_openclaw_stores.py DEMO_HOME

scripts/demo.sh runs it on a temporary copy of demo/openclaw-home.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openclaw_fixtures import LcmBuilder, compaction, message, session_jsonl  # noqa: E402

HISTORY = [
    "user: the nightly backup failed again, can you look?",
    "assistant: backup.sh exits with AccessDenied on s3://acme-backups/nightly since 2026-11-02.",
    "user: that is when we rotated the KMS key",
    "assistant: the backup-writer role has no grant on alias/backup-2026; granting kms:Encrypt now.",
    "user: please run it once by hand",
    "assistant: done: 38.2 GB uploaded in 14m 32s. I will add an alert if it has not succeeded for 26 hours.",
]
GOOD = ("Nightly backup fixed: backup-writer lacked a grant on the rotated KMS key alias/backup-2026; granted "
        "kms:Encrypt, manual run uploaded 38.2 GB in 14m 32s. Open: alert when no success for 26 hours.")


def main(home: Path) -> None:
    b = LcmBuilder(home / "lcm.db")
    c = b.conversation("demo-session")
    b.summary(c, GOOD, messages=b.messages(c, HISTORY), sid="sum_0000000000000001")
    b.summary(c, "<think>\nThe user wants a summary of the backup discussion. Let me first list the facts: the job "
                 "failed, the key was rotated, the role lacks a grant. Then I should", messages=b.messages(c, HISTORY),
              sid="sum_0000000000000002")
    b.summary(c, "\n".join(HISTORY[:2]) + "\n[Truncated from 412 tokens]", messages=b.messages(c, HISTORY),
              model="emergency-fallback", sid="sum_0000000000000003")
    b.close()
    entries = [message(i, t) for i, t in enumerate(HISTORY)]
    entries.append(compaction("cmp-1", GOOD, 41200, "2026-11-28T09:10:00.000Z"))
    entries += [message(10 + i, t) for i, t in enumerate(HISTORY[:3])]
    entries.append(compaction("cmp-2", GOOD, 44800, "2026-11-28T11:40:00.000Z"))      # the same summary again
    entries += [message(20 + i, t) for i, t in enumerate(HISTORY[3:])]
    entries.append(compaction("cmp-3", "## Decisions\nNo prior history.\n\n## Open TODOs\nNone captured.\n\n"
                                       "## Exact identifiers\nNone captured.", 52100, "2026-11-28T14:05:00.000Z"))
    session_jsonl(home / "agents" / "main" / "sessions" / "demo-session.jsonl", "demo-session", entries)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
