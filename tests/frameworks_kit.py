"""What the framework tests share: one working conversation (the user's turns, each a real
agent turn against the scripted model), the ways a summary model fails in the wild, and what a
kept summary must carry."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from modelkit.openai_chat import ScriptedOpenAI  # noqa: E402,F401

# the user's turns; the first four are compacted, the fifth is kept
TURNS = [
    "I'm on ticket OPS-4471: the deploy of api-gateway v2.3.1 fails at start because /etc/gw/routes.yaml "
    "line 88 declares the route /v2/orders a second time. It came in with commit 9f3c2ab, merged into "
    "release/2.3 on Tuesday by the payments team. The gateway refuses to start with a duplicate path, so "
    "every pod in the canary pool is in CrashLoopBackOff and the rollout is paused at 10 percent.",
    "Some background before we touch it. Between v2.3.0 and v2.3.1 the payments team added rate limits "
    "for /v2/payments, 120 requests a minute per key, in /etc/gw/limits.yaml, and raised the upstream "
    "timeout for /v2/orders from 15 s to 30 s. They copied the whole /v2/orders block to change that one "
    "value and forgot to delete the old block, which is where the duplicate came from. Nobody touched "
    "the TLS bundle or the health check, which moved from /healthz to /livez back in v2.2.0.",
    "The test that should have caught it is tests/gateway/test_routes.py: it loads the routes file and "
    "fails on any duplicate path. Locally it fails with DuplicateRouteError('/v2/orders') as expected. "
    "In CI the gateway-lint job was skipped on PR 1187 because somebody set the skip-lint label, so the "
    "merge went through green. I have asked the team to stop using that label on release branches.",
    "Here is what I need: remove the older /v2/orders block at line 88 and keep the one with the 30 s "
    "timeout, keep the --strict flag on in the gateway's start command, run tests/gateway/test_routes.py, "
    "and open a PR against release/2.3 that mentions OPS-4471 in its title.",
    "Thanks. And what is the rollback plan if that PR breaks checkout?",
]
# what a summary of the first four turns must keep: the identifiers and the latest ask
IDENTIFIERS = ("OPS-4471", "/etc/gw/routes.yaml", "/v2/orders", "release/2.3")
LATEST_ASK = "keep the --strict flag on"

GOOD_PLAIN = (
    "Ticket OPS-4471: the api-gateway v2.3.1 deploy fails because /etc/gw/routes.yaml line 88 declares "
    "/v2/orders twice (commit 9f3c2ab on release/2.3; the payments team copied the block to raise its "
    "timeout from 15 s to 30 s). The canary pool is in CrashLoopBackOff, the rollout paused at 10 percent. "
    "tests/gateway/test_routes.py catches it (DuplicateRouteError) but gateway-lint was skipped on PR 1187 "
    "by the skip-lint label. Next: remove the older block at line 88, keep the 30 s one, keep --strict on, "
    "run tests/gateway/test_routes.py, open a PR against release/2.3 mentioning OPS-4471.")
GOOD_SECTIONS = (
    "## SESSION INTENT\nFix ticket OPS-4471: the api-gateway v2.3.1 deploy fails on a duplicate /v2/orders "
    "route.\n\n## SUMMARY\n/etc/gw/routes.yaml line 88 declares /v2/orders twice (commit 9f3c2ab on "
    "release/2.3: the payments team copied the block to raise its timeout from 15 s to 30 s). Canary pods "
    "are in CrashLoopBackOff, rollout paused at 10 percent. gateway-lint was skipped on PR 1187 (skip-lint "
    "label).\n\n## ARTIFACTS\n- /etc/gw/routes.yaml (line 88)\n- /etc/gw/limits.yaml\n"
    "- tests/gateway/test_routes.py\n\n## NEXT STEPS\nRemove the older block at line 88, keep the 30 s one, "
    "keep --strict on, run tests/gateway/test_routes.py, open a PR against release/2.3 mentioning OPS-4471.")

# how summary models fail in the wild (each seen in an issue or a real store: REFERENCE.md 3, 6, 15)
BAD = {
    "http-500": {"status": 500, "message": "The server had an error while processing your request."},
    "error-text": "Error generating summary: Error code: 429 - {'error': {'message': 'Rate limit reached for "
                  "gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3.', 'type': "
                  "'requests'}}",
    "refusal": "I'm sorry, but I can't help with summarizing this conversation.",
    "loop": "## SESSION INTENT\nFix the gateway deploy.\n\n## SUMMARY\n"
            + "The duplicate route must be removed from the routes file. " * 60,
    "preamble": "Let me read the notes file first.",
    "language": "## SITZUNGSZIEL\nDer Benutzer möchte den fehlgeschlagenen Rollout des Gateways beheben, "
                "der wegen einer doppelt eingetragenen Route beim Start abbricht.\n\n## ZUSAMMENFASSUNG\n"
                "Das Zahlungsteam hat einen ganzen Block kopiert, um eine Zeitüberschreitung zu erhöhen, und "
                "den alten Block nicht gelöscht. Die Prüfung im CI wurde übersprungen, weil jemand ein "
                "Etikett gesetzt hatte, und deshalb ist der Fehler erst beim Ausrollen aufgefallen.\n\n"
                "## NÄCHSTE SCHRITTE\nDen älteren Block entfernen, die Tests ausführen und eine Änderung "
                "für den Release-Zweig einreichen.",
}


def carries_the_history(summary: str) -> bool:
    return all(i in summary for i in IDENTIFIERS) and LATEST_ASK in summary
