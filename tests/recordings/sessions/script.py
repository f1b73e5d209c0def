"""The long working session the agents are run through, in English, German and Japanese, and what the
scripted model answers their compaction requests with.

The session: six user turns over a small repository (REPO, written into the agent's working directory),
each answered after one real tool call the agent runs itself (a file read or a shell command: the
agent's own tools, named as its request declares them), with decisions, a test run, a draft not to be
written yet and a reminder the user asked for. Then the agent compacts, and its model answers with one
of SUMMARIES' forms, written for each agent in the structure that agent's compaction prompt asks for
(Claude Code: <analysis> then <summary> with nine numbered sections; Codex: a handoff; Gemini CLI: a
<state_snapshot>; opencode: its anchored-summary template). Two forms compact twice: a follow-up turn
that restates what the summary holds (`same`) or that adds what it lacks (`news`), then the first
summary stored again unchanged.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from server import norm

LANGS = ("en", "de", "ja")

REPO = {
    "src/sync/__init__.py": "",
    "src/sync/retry.py": '''"""Retry policy for pushing ledger batches to the upstream API."""

MAX_ATTEMPTS = 5
BACKOFF_BASE_S = 2


def backoff_schedule(attempts=MAX_ATTEMPTS, base=BACKOFF_BASE_S):
    """Seconds to wait before each retry: base * 2**n."""
    return [base * 2 ** n for n in range(attempts)]


def total_backoff(attempts=MAX_ATTEMPTS, base=BACKOFF_BASE_S):
    """Worst-case seconds spent waiting across all retries."""
    return sum(backoff_schedule(attempts, base))
''',
    "tests/test_retry.py": '''"""Retry policy checks; run with `python3 tests/test_retry.py`."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from sync.retry import MAX_ATTEMPTS, backoff_schedule, total_backoff  # noqa: E402

TIMEOUT_S = 45  # syncJob.timeoutSeconds in deploy/helm/values-prod.yaml


def test_schedule_doubles():
    assert backoff_schedule(3, 2) == [2, 4, 8]


def test_gives_up_after_max_attempts():
    assert len(backoff_schedule()) == MAX_ATTEMPTS


def test_total_backoff_under_timeout():
    assert total_backoff() < TIMEOUT_S, f"total backoff {total_backoff()} s >= timeout {TIMEOUT_S} s"


if __name__ == "__main__":
    passed = failed = 0
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            try:
                fn()
                passed += 1
                print(f"PASS {name}")
            except AssertionError as e:
                failed += 1
                print(f"FAIL {name}: {e}")
    print(f"{passed} passed, {failed} failed")
''',
    "deploy/helm/values-prod.yaml": '''image:
  repository: registry.internal/ledger-sync
  tag: 3.3.2
replicaCount: 3
syncJob:
  schedule: "*/5 * * * *"
  timeoutSeconds: 45
  concurrencyPolicy: Forbid
resources:
  limits:
    memory: 512Mi
''',
    "docs/runbook.md": '''# ledger-sync runbook

## Paging
Page #ledger-oncall in Slack first. If nobody acknowledges within 10 minutes, escalate to
Priya Raman (SRE lead, priya.raman@example.com).

## Rollout
Rollouts go canary first: 1 replica for 30 minutes, then all 3. Never roll out on a Friday.
''',
    "CHANGELOG.md": '''# Changelog

## 3.3.2 - 2026-11-18
### Fixed
- Duplicate batch ids after a restart (LED-2210).
''',
}


@dataclass
class Turn:
    user: str
    tools: list            # [("read", relative path) | ("shell", command)]
    reply: str


@dataclass
class Script:
    lang: str
    workdir: str
    turns: list
    follow_same: Turn
    follow_news: Turn
    ack: str = "OK."
    title: str = "ledger-sync retries (LED-2291)"
    keys: dict = field(default_factory=dict)

    def __post_init__(self):
        for t in self.turns + [self.follow_same, self.follow_news]:
            self.keys[norm(t.user)[:48]] = t

    def turn_for(self, text: str):
        n = norm(text)
        for k, t in self.keys.items():
            if k in n:
                return t
        return None

    def call(self, agent: str, tool: tuple, declared: list) -> tuple:
        """The agent's own call for an abstract tool: (name, arguments), or (None, None) when the agent
        declared no tool that does it."""
        kind, what = tool
        have = set(declared)
        absolute = f"{self.workdir}/{what}"
        if agent == "claude-code":
            if kind == "read" and "Read" in have:
                return "Read", {"file_path": absolute}
            if "Bash" in have:
                return "Bash", {"command": what if kind == "shell" else f"cat {what}",
                                "description": "Run " + (what if kind == "shell" else f"cat {what}")}
        elif agent == "codex":
            for name in ("exec_command", "shell", "local_shell"):
                if name in have:
                    cmd = what if kind == "shell" else f"cat {what}"
                    return name, ({"cmd": cmd} if name == "exec_command" else {"command": ["bash", "-lc", cmd]})
        elif agent == "gemini":
            if kind == "read" and "read_file" in have:
                return "read_file", {"file_path": what}
            if "run_shell_command" in have:
                return "run_shell_command", {"command": what if kind == "shell" else f"cat {what}",
                                             "description": "run"}
            if "read_file" in have:        # no shell in this run: read what the command would have read
                return "read_file", {"file_path": what.split()[-1] if kind == "shell" else what}
        elif agent == "opencode":
            if kind == "read" and "read" in have:
                return "read", {"filePath": absolute}
            if "bash" in have:
                cmd = what if kind == "shell" else f"cat {what}"
                return "bash", {"command": cmd, "description": "Run " + cmd}
        return None, None


# ------------------------------------------------------------------ the turns

TOOLS = [[("read", "src/sync/retry.py")], [("read", "deploy/helm/values-prod.yaml")],
         [("shell", "grep -rn MAX_ATTEMPTS src tests")], [("read", "docs/runbook.md")],
         [("shell", "python3 tests/test_retry.py")], [("read", "CHANGELOG.md")]]

TURNS = {
    "en": [
        ("We're hardening the ledger-sync service before release 3.4.0 (ticket LED-2291). Start by reading "
         "src/sync/retry.py and tell me how the retries work.",
         "retry.py makes up to MAX_ATTEMPTS = 5 attempts and waits BACKOFF_BASE_S * 2**n seconds between them: "
         "2, 4, 8, 16 and 32 s, so total_backoff() is 62 s in the worst case."),
        ("What timeout does the production Helm chart give the sync job?",
         "deploy/helm/values-prod.yaml sets syncJob.timeoutSeconds: 45 (schedule */5, concurrencyPolicy: Forbid, "
         "3 replicas, image tag 3.3.2). The 62 s retry budget does not fit in that 45 s window: the job is killed "
         "before its last retry."),
        ("Decision: we keep the Helm timeout at 45 s and lower MAX_ATTEMPTS to 4 instead; BACKOFF_BASE_S stays 2. "
         "Find every place that depends on MAX_ATTEMPTS.",
         "MAX_ATTEMPTS is defined in src/sync/retry.py (line 3) and used there by backoff_schedule() and "
         "total_backoff(), and by tests/test_retry.py (test_gives_up_after_max_attempts). With 4 attempts the "
         "waits are 2, 4, 8 and 16 s."),
        ("Who do we page if the rollout goes wrong? Check the runbook.",
         "docs/runbook.md: page #ledger-oncall first; if nobody acknowledges within 10 minutes, escalate to Priya "
         "Raman (SRE lead, priya.raman@example.com). Rollouts go canary first (1 replica for 30 minutes) and never "
         "on a Friday."),
        ("Run the retry tests so we know where we stand before the change.",
         "2 passed, 1 failed: test_total_backoff_under_timeout fails with \"total backoff 62 s >= timeout 45 s\", "
         "as expected before the change."),
        ("Last thing for today: draft the 3.4.0 CHANGELOG entry but don't write the file yet, and remind me to ask "
         "Priya about the rollout window on Thursday.",
         "Draft for CHANGELOG.md under ## 3.4.0: \"### Fixed - The sync job's retries now fit its 45 s timeout: "
         "MAX_ATTEMPTS lowered from 5 to 4 (LED-2291).\" Not written yet. Reminder: ask Priya Raman about the "
         "rollout window on Thursday."),
    ],
    "de": [
        ("Wir härten den Dienst ledger-sync vor dem Release 3.4.0 (Ticket LED-2291). Lies bitte zuerst "
         "src/sync/retry.py und erklär mir, wie die Wiederholungsversuche funktionieren.",
         "retry.py unternimmt bis zu MAX_ATTEMPTS = 5 Versuche und wartet dazwischen BACKOFF_BASE_S * 2**n "
         "Sekunden: 2, 4, 8, 16 und 32 s. total_backoff() ergibt im schlimmsten Fall also 62 s."),
        ("Welches Timeout gibt das Produktions-Helm-Chart dem Sync-Job?",
         "deploy/helm/values-prod.yaml setzt syncJob.timeoutSeconds: 45 (Zeitplan */5, concurrencyPolicy: Forbid, "
         "3 Replikate, Image-Tag 3.3.2). Das Retry-Budget von 62 s passt nicht in diese 45 s: Der Job wird vor "
         "seinem letzten Versuch abgebrochen."),
        ("Entscheidung: Das Helm-Timeout bleibt bei 45 s, stattdessen senken wir MAX_ATTEMPTS auf 4; "
         "BACKOFF_BASE_S bleibt 2. Finde alle Stellen, die von MAX_ATTEMPTS abhängen.",
         "MAX_ATTEMPTS ist in src/sync/retry.py (Zeile 3) definiert und wird dort von backoff_schedule() und "
         "total_backoff() genutzt, außerdem in tests/test_retry.py (test_gives_up_after_max_attempts). Mit 4 "
         "Versuchen betragen die Wartezeiten 2, 4, 8 und 16 s."),
        ("Wen alarmieren wir, wenn der Rollout schiefgeht? Schau bitte ins Runbook.",
         "docs/runbook.md: zuerst #ledger-oncall anpagen; quittiert niemand innerhalb von 10 Minuten, an Priya Raman "
         "eskalieren (SRE-Leitung, priya.raman@example.com). Rollouts laufen zuerst als Canary (1 Replikat für "
         "30 Minuten) und nie an einem Freitag."),
        ("Lass die Retry-Tests laufen, damit wir den Stand vor der Änderung kennen.",
         "2 bestanden, 1 fehlgeschlagen: test_total_backoff_under_timeout scheitert mit „total backoff 62 s >= "
         "timeout 45 s“, wie vor der Änderung erwartet."),
        ("Zum Schluss für heute: Entwirf den CHANGELOG-Eintrag für 3.4.0, schreib die Datei aber noch nicht, und "
         "erinnere mich daran, Priya am Donnerstag nach dem Rollout-Fenster zu fragen.",
         "Entwurf für CHANGELOG.md unter ## 3.4.0: „### Fixed - Die Wiederholungsversuche des Sync-Jobs passen "
         "jetzt in sein Timeout von 45 s: MAX_ATTEMPTS von 5 auf 4 gesenkt (LED-2291).“ Noch nicht geschrieben. "
         "Erinnerung: Priya Raman am Donnerstag nach dem Rollout-Fenster fragen."),
    ],
    "ja": [
        ("リリース3.4.0（チケットLED-2291）の前にledger-syncサービスを堅牢化します。まずsrc/sync/retry.pyを読んで、"
         "リトライの仕組みを説明してください。",
         "retry.pyは最大でMAX_ATTEMPTS = 5回試行し、その間にBACKOFF_BASE_S * 2**n秒待ちます：2、4、8、16、32秒。"
         "つまりtotal_backoff()は最悪の場合62秒です。"),
        ("本番のHelmチャートはsyncジョブにどのタイムアウトを設定していますか？",
         "deploy/helm/values-prod.yamlはsyncJob.timeoutSeconds: 45を設定しています（スケジュール */5、"
         "concurrencyPolicy: Forbid、レプリカ3、イメージタグ3.3.2）。62秒のリトライ予算はこの45秒に収まらず、"
         "最後のリトライの前にジョブが打ち切られます。"),
        ("決定：Helmのタイムアウトは45秒のままにして、代わりにMAX_ATTEMPTSを4に下げます。BACKOFF_BASE_Sは2のまま"
         "です。MAX_ATTEMPTSに依存している箇所をすべて探してください。",
         "MAX_ATTEMPTSはsrc/sync/retry.py（3行目）で定義され、同じファイルのbackoff_schedule()とtotal_backoff()、"
         "そしてtests/test_retry.py（test_gives_up_after_max_attempts）で使われています。4回なら待ち時間は2、4、8、"
         "16秒です。"),
        ("ロールアウトで問題が起きたら誰を呼び出しますか？ランブックを確認してください。",
         "docs/runbook.md：まず#ledger-oncallを呼び出し、10分以内に誰も応答しなければPriya Raman（SREリード、"
         "priya.raman@example.com）にエスカレーションします。ロールアウトはまずカナリア（レプリカ1つで30分）で"
         "行い、金曜日には決して行いません。"),
        ("変更前の状態を把握するため、リトライのテストを実行してください。",
         "2件成功、1件失敗：test_total_backoff_under_timeoutが「total backoff 62 s >= timeout 45 s」で失敗して"
         "います。変更前なので想定どおりです。"),
        ("今日の最後に：3.4.0のCHANGELOGエントリの下書きを作ってください。ただしファイルにはまだ書かないで"
         "ください。それと、木曜日にPriyaにロールアウトの時間帯を聞くよう私にリマインドしてください。",
         "CHANGELOG.mdの## 3.4.0向けの下書き：「### Fixed - syncジョブのリトライが45秒のタイムアウトに収まるように"
         "なりました：MAX_ATTEMPTSを5から4に変更（LED-2291）。」まだ書き込んでいません。リマインダー：木曜日に"
         "Priya Ramanにロールアウトの時間帯を確認すること。"),
    ],
}

FOLLOW = {   # (restates what the summary holds, adds what it lacks)
    "en": (("Just to confirm: the Helm timeout stays at 45 s, right?",
            "Yes: syncJob.timeoutSeconds stays 45; only MAX_ATTEMPTS changes, from 5 to 4."),
           ("Priya answered: the rollout window is Thursday 14:00-16:00 UTC, and the canary uses chart version "
            "3.4.0-rc.2 with the flag LEDGER_SYNC_STRICT_IDS=true.",
            "Noted: rollout window Thursday 14:00-16:00 UTC; the canary runs chart 3.4.0-rc.2 with "
            "LEDGER_SYNC_STRICT_IDS=true.")),
    "de": (("Nur zur Bestätigung: Das Helm-Timeout bleibt bei 45 s, oder?",
            "Ja: syncJob.timeoutSeconds bleibt 45; nur MAX_ATTEMPTS ändert sich, von 5 auf 4."),
           ("Priya hat geantwortet: Das Rollout-Fenster ist Donnerstag 14:00-16:00 UTC, und der Canary nutzt die "
            "Chart-Version 3.4.0-rc.2 mit dem Flag LEDGER_SYNC_STRICT_IDS=true.",
            "Notiert: Rollout-Fenster Donnerstag 14:00-16:00 UTC; der Canary läuft mit Chart 3.4.0-rc.2 und "
            "LEDGER_SYNC_STRICT_IDS=true.")),
    "ja": (("確認ですが、Helmのタイムアウトは45秒のままですよね？",
            "はい、syncJob.timeoutSecondsは45のままです。変わるのはMAX_ATTEMPTSだけで、5から4になります。"),
           ("Priyaから返事がありました：ロールアウトの時間帯は木曜日14:00-16:00 UTCで、カナリアはチャートバージョン"
            "3.4.0-rc.2をフラグLEDGER_SYNC_STRICT_IDS=trueで使います。",
            "了解しました：ロールアウトの時間帯は木曜日14:00-16:00 UTC、カナリアはチャート3.4.0-rc.2と"
            "LEDGER_SYNC_STRICT_IDS=trueで実行します。")),
}


def script(lang: str, workdir: str) -> Script:
    turns = [Turn(u, TOOLS[i], r) for i, (u, r) in enumerate(TURNS[lang])]
    same, news = FOLLOW[lang]
    return Script(lang, workdir, turns, Turn(same[0], [], same[1]), Turn(news[0], [], news[1]),
                  ack={"en": "OK.", "de": "OK.", "ja": "了解しました。"}[lang])


# ------------------------------------------------------------------ what the summaries say

CONTENT = {
    "en": dict(
        early_files=[("src/sync/retry.py", "defines MAX_ATTEMPTS, backoff_schedule() and total_backoff()"),
                     ("deploy/helm/values-prod.yaml", "syncJob.timeoutSeconds: 45")],
        analysis="The user is hardening ledger-sync before 3.4.0; I read the retry code, the Helm values, the "
                 "runbook and the changelog, and ran the retry tests.",
        goal="Harden the ledger-sync service before release 3.4.0 (ticket LED-2291) so that the sync job's retries "
             "fit its production timeout.",
        concepts=["Exponential backoff: BACKOFF_BASE_S * 2**n seconds between attempts",
                  "Helm values for production: syncJob.timeoutSeconds, concurrencyPolicy: Forbid",
                  "Canary rollout (1 replica for 30 minutes, then all 3)"],
        findings=["src/sync/retry.py: MAX_ATTEMPTS = 5 and BACKOFF_BASE_S = 2; backoff_schedule() waits 2, 4, 8, 16 "
                  "and 32 s, so total_backoff() is 62 s.",
                  "deploy/helm/values-prod.yaml: syncJob.timeoutSeconds: 45 (schedule */5, concurrencyPolicy: Forbid), "
                  "replicaCount 3, image tag 3.3.2. The 62 s budget does not fit: the job is killed before its last "
                  "retry.",
                  "docs/runbook.md: page #ledger-oncall first, escalate to Priya Raman (SRE lead, "
                  "priya.raman@example.com) after 10 minutes without acknowledgement; canary first (1 replica for 30 "
                  "minutes); never roll out on a Friday.",
                  "python3 tests/test_retry.py: 2 passed, 1 failed (test_total_backoff_under_timeout: \"total backoff "
                  "62 s >= timeout 45 s\"), expected before the change."],
        decision="Keep the Helm timeout at 45 s; lower MAX_ATTEMPTS from 5 to 4 instead; BACKOFF_BASE_S stays 2 "
                 "(waits 2, 4, 8 and 16 s).",
        files=[("src/sync/retry.py", "defines MAX_ATTEMPTS (line 3), backoff_schedule() and total_backoff(); the "
                                     "file to change"),
               ("tests/test_retry.py", "test_gives_up_after_max_attempts, test_total_backoff_under_timeout"),
               ("deploy/helm/values-prod.yaml", "syncJob.timeoutSeconds: 45, not to be changed"),
               ("CHANGELOG.md", "the 3.4.0 entry is drafted, not written")],
        users=["Harden ledger-sync before 3.4.0 (LED-2291); read src/sync/retry.py and explain the retries.",
               "What timeout does the production Helm chart give the sync job?",
               "Decision: keep the Helm timeout at 45 s, lower MAX_ATTEMPTS to 4, BACKOFF_BASE_S stays 2; find "
               "everything that depends on MAX_ATTEMPTS.",
               "Who do we page if the rollout goes wrong? Check the runbook.",
               "Run the retry tests before the change.",
               "Draft the 3.4.0 CHANGELOG entry without writing the file; remind me to ask Priya about the rollout "
               "window on Thursday."],
        pending=["The CHANGELOG.md entry for 3.4.0 is drafted, not written yet: \"### Fixed - The sync job's retries "
                 "now fit its 45 s timeout: MAX_ATTEMPTS lowered from 5 to 4 (LED-2291).\"",
                 "Remind the user to ask Priya Raman about the rollout window on Thursday."],
        current="Drafted the CHANGELOG entry (not written) and noted the reminder about Priya on Thursday.",
        next="Lower MAX_ATTEMPTS to 4 in src/sync/retry.py, rerun python3 tests/test_retry.py, and write the "
             "CHANGELOG entry once the user confirms the draft.",
        short=["Goal: ledger-sync's retries must fit the 45 s production timeout before 3.4.0 (LED-2291).",
               "Decided: keep syncJob.timeoutSeconds at 45; MAX_ATTEMPTS 5 -> 4 in src/sync/retry.py "
               "(BACKOFF_BASE_S stays 2).",
               "State: python3 tests/test_retry.py 2 passed, 1 failed (test_total_backoff_under_timeout, 62 s >= 45 s).",
               "Pending: the 3.4.0 CHANGELOG entry is drafted, not written; remind the user to ask Priya Raman about "
               "the rollout window on Thursday."],
        early_next="Decide how to make the retries fit the 45 s timeout: shorter backoff, fewer attempts or a "
                   "longer timeout.",
        invented=["The user also asked to raise syncJob.timeoutSeconds to 90 and to push the change straight to "
                  "main without a review."],
        derived="Budget arithmetic: 62 s overshoots the 45 s timeout by 17 s; with 4 attempts the budget is 30 s, "
                "15 s under the timeout, and the longest single wait drops from 32 s to 16 s (the total falls by "
                "about 52%).",
        preamble="Let me read deploy/helm/values-prod.yaml and src/sync/retry.py first to double-check the timeout "
                 "before I write the summary.",
        think_line="Summary: working on LED-2291.",
        think="The user wants a summary of the session. I should cover the retry code, the Helm timeout of 45 s, "
              "the decision to lower MAX_ATTEMPTS, the runbook, the failing test and the CHANGELOG draft. Let me "
              "think about the order of the sections and how much detail each one needs, then write it out.",
        refusal="I can't produce this summary as requested: the conversation contains internal on-call contact "
                "details, and I am not able to reproduce personal data in a summary.",
        refusal2="Unable to summarize: this session contains no technical discussion that would require a summary.",
    ),
    "de": dict(
        early_files=[("src/sync/retry.py", "definiert MAX_ATTEMPTS, backoff_schedule() und total_backoff()"),
                     ("deploy/helm/values-prod.yaml", "syncJob.timeoutSeconds: 45")],
        analysis="Der Nutzer härtet ledger-sync vor 3.4.0; ich habe den Retry-Code, die Helm-Werte, das Runbook und "
                 "das Changelog gelesen und die Retry-Tests ausgeführt.",
        goal="Den Dienst ledger-sync vor dem Release 3.4.0 (Ticket LED-2291) härten, damit die Wiederholungsversuche "
             "des Sync-Jobs in sein Produktions-Timeout passen.",
        concepts=["Exponentielles Backoff: BACKOFF_BASE_S * 2**n Sekunden zwischen den Versuchen",
                  "Helm-Werte für Produktion: syncJob.timeoutSeconds, concurrencyPolicy: Forbid",
                  "Canary-Rollout (1 Replikat für 30 Minuten, danach alle 3)"],
        findings=["src/sync/retry.py: MAX_ATTEMPTS = 5 und BACKOFF_BASE_S = 2; backoff_schedule() wartet 2, 4, 8, 16 "
                  "und 32 s, total_backoff() ergibt also 62 s.",
                  "deploy/helm/values-prod.yaml: syncJob.timeoutSeconds: 45 (Zeitplan */5, concurrencyPolicy: "
                  "Forbid), replicaCount 3, Image-Tag 3.3.2. Das Budget von 62 s passt nicht: Der Job wird vor seinem "
                  "letzten Versuch abgebrochen.",
                  "docs/runbook.md: zuerst #ledger-oncall anpagen, nach 10 Minuten ohne Quittung an Priya Raman "
                  "(SRE-Leitung, priya.raman@example.com) eskalieren; zuerst Canary (1 Replikat für 30 Minuten); nie "
                  "an einem Freitag ausrollen.",
                  "python3 tests/test_retry.py: 2 bestanden, 1 fehlgeschlagen (test_total_backoff_under_timeout: "
                  "„total backoff 62 s >= timeout 45 s“), vor der Änderung erwartet."],
        decision="Das Helm-Timeout bleibt bei 45 s; stattdessen wird MAX_ATTEMPTS von 5 auf 4 gesenkt; BACKOFF_BASE_S "
                 "bleibt 2 (Wartezeiten 2, 4, 8 und 16 s).",
        files=[("src/sync/retry.py", "definiert MAX_ATTEMPTS (Zeile 3), backoff_schedule() und total_backoff(); die "
                                     "zu ändernde Datei"),
               ("tests/test_retry.py", "test_gives_up_after_max_attempts, test_total_backoff_under_timeout"),
               ("deploy/helm/values-prod.yaml", "syncJob.timeoutSeconds: 45, wird nicht geändert"),
               ("CHANGELOG.md", "der Eintrag für 3.4.0 ist entworfen, nicht geschrieben")],
        users=["ledger-sync vor 3.4.0 härten (LED-2291); src/sync/retry.py lesen und die Wiederholungsversuche "
               "erklären.",
               "Welches Timeout gibt das Produktions-Helm-Chart dem Sync-Job?",
               "Entscheidung: Helm-Timeout bleibt 45 s, MAX_ATTEMPTS auf 4 senken, BACKOFF_BASE_S bleibt 2; alle "
               "Stellen finden, die von MAX_ATTEMPTS abhängen.",
               "Wen alarmieren wir, wenn der Rollout schiefgeht? Im Runbook nachsehen.",
               "Die Retry-Tests vor der Änderung laufen lassen.",
               "Den CHANGELOG-Eintrag für 3.4.0 entwerfen, ohne die Datei zu schreiben; an die Frage an Priya zum "
               "Rollout-Fenster am Donnerstag erinnern."],
        pending=["Der Eintrag in CHANGELOG.md für 3.4.0 ist entworfen, aber noch nicht geschrieben: „### Fixed - Die "
                 "Wiederholungsversuche des Sync-Jobs passen jetzt in sein Timeout von 45 s: MAX_ATTEMPTS von 5 auf 4 "
                 "gesenkt (LED-2291).“",
                 "Den Nutzer daran erinnern, Priya Raman am Donnerstag nach dem Rollout-Fenster zu fragen."],
        current="Den CHANGELOG-Eintrag entworfen (nicht geschrieben) und die Erinnerung an Priya am Donnerstag notiert.",
        next="MAX_ATTEMPTS in src/sync/retry.py auf 4 senken, python3 tests/test_retry.py erneut ausführen und den "
             "CHANGELOG-Eintrag schreiben, sobald der Nutzer den Entwurf bestätigt.",
        short=["Ziel: Die Wiederholungsversuche von ledger-sync müssen vor 3.4.0 in das Produktions-Timeout von 45 s "
               "passen (LED-2291).",
               "Entschieden: syncJob.timeoutSeconds bleibt 45; MAX_ATTEMPTS 5 -> 4 in src/sync/retry.py "
               "(BACKOFF_BASE_S bleibt 2).",
               "Stand: python3 tests/test_retry.py 2 bestanden, 1 fehlgeschlagen (test_total_backoff_under_timeout, "
               "62 s >= 45 s).",
               "Offen: Der CHANGELOG-Eintrag für 3.4.0 ist entworfen, nicht geschrieben; den Nutzer erinnern, Priya "
               "Raman am Donnerstag nach dem Rollout-Fenster zu fragen."],
        early_next="Entscheiden, wie die Wiederholungsversuche in das Timeout von 45 s passen: kürzeres Backoff, "
                   "weniger Versuche oder ein längeres Timeout.",
        invented=["Der Nutzer hat außerdem verlangt, syncJob.timeoutSeconds auf 90 zu erhöhen und die Änderung ohne "
                  "Review direkt nach main zu pushen."],
        derived="Budget-Rechnung: 62 s überschreiten das Timeout von 45 s um 17 s; mit 4 Versuchen beträgt das Budget "
                "30 s, 15 s unter dem Timeout, und die längste einzelne Wartezeit sinkt von 32 s auf 16 s (die Summe "
                "fällt um etwa 52 %).",
        preamble="Ich lese zuerst deploy/helm/values-prod.yaml und src/sync/retry.py, um das Timeout noch einmal zu "
                 "prüfen, bevor ich die Zusammenfassung schreibe.",
        think_line="Zusammenfassung: Arbeit an LED-2291.",
        think="Der Nutzer möchte eine Zusammenfassung der Sitzung. Ich sollte den Retry-Code, das Helm-Timeout von "
              "45 s, die Entscheidung zu MAX_ATTEMPTS, das Runbook, den fehlschlagenden Test und den CHANGELOG-Entwurf "
              "abdecken. Ich überlege mir die Reihenfolge der Abschnitte und wie viel Detail jeder braucht, dann "
              "schreibe ich sie.",
        refusal="Ich kann diese Zusammenfassung nicht wie gewünscht erstellen: Das Gespräch enthält interne "
                "Kontaktdaten der Rufbereitschaft, und personenbezogene Daten gebe ich in einer Zusammenfassung nicht "
                "wieder.",
        refusal2="Zusammenfassen nicht möglich: Diese Sitzung enthält keine technische Diskussion, die eine "
                 "Zusammenfassung erfordern würde.",
    ),
    "ja": dict(
        early_files=[("src/sync/retry.py", "MAX_ATTEMPTS、backoff_schedule()、total_backoff()を定義"),
                     ("deploy/helm/values-prod.yaml", "syncJob.timeoutSeconds: 45")],
        analysis="ユーザーは3.4.0の前にledger-syncを堅牢化している。リトライのコード、Helmの値、ランブック、"
                 "CHANGELOGを読み、リトライのテストを実行した。",
        goal="リリース3.4.0（チケットLED-2291）の前にledger-syncサービスを堅牢化し、syncジョブのリトライが本番の"
             "タイムアウトに収まるようにする。",
        concepts=["指数バックオフ：試行の間にBACKOFF_BASE_S * 2**n秒待つ",
                  "本番用のHelmの値：syncJob.timeoutSeconds、concurrencyPolicy: Forbid",
                  "カナリアロールアウト（レプリカ1つで30分、その後3つすべて）"],
        findings=["src/sync/retry.py：MAX_ATTEMPTS = 5、BACKOFF_BASE_S = 2。backoff_schedule()は2、4、8、16、32秒"
                  "待つので、total_backoff()は62秒。",
                  "deploy/helm/values-prod.yaml：syncJob.timeoutSeconds: 45（スケジュール */5、concurrencyPolicy: "
                  "Forbid）、replicaCount 3、イメージタグ3.3.2。62秒の予算は収まらず、最後のリトライの前にジョブが"
                  "打ち切られる。",
                  "docs/runbook.md：まず#ledger-oncallを呼び出し、10分応答がなければPriya Raman（SREリード、"
                  "priya.raman@example.com）にエスカレーション。まずカナリア（レプリカ1つで30分）。金曜日には"
                  "ロールアウトしない。",
                  "python3 tests/test_retry.py：2件成功、1件失敗（test_total_backoff_under_timeout：「total backoff "
                  "62 s >= timeout 45 s」）。変更前なので想定どおり。"],
        decision="Helmのタイムアウトは45秒のまま。代わりにMAX_ATTEMPTSを5から4に下げる。BACKOFF_BASE_Sは2のまま"
                 "（待ち時間は2、4、8、16秒）。",
        files=[("src/sync/retry.py", "MAX_ATTEMPTS（3行目）、backoff_schedule()、total_backoff()を定義。変更する"
                                     "ファイル"),
               ("tests/test_retry.py", "test_gives_up_after_max_attempts、test_total_backoff_under_timeout"),
               ("deploy/helm/values-prod.yaml", "syncJob.timeoutSeconds: 45、変更しない"),
               ("CHANGELOG.md", "3.4.0のエントリは下書き済み、未書き込み")],
        users=["3.4.0の前にledger-syncを堅牢化（LED-2291）。src/sync/retry.pyを読んでリトライの仕組みを説明。",
               "本番のHelmチャートはsyncジョブにどのタイムアウトを設定しているか？",
               "決定：Helmのタイムアウトは45秒のまま、MAX_ATTEMPTSを4に下げ、BACKOFF_BASE_Sは2のまま。"
               "MAX_ATTEMPTSに依存する箇所をすべて探す。",
               "ロールアウトで問題が起きたら誰を呼び出すか？ランブックを確認。",
               "変更前にリトライのテストを実行。",
               "3.4.0のCHANGELOGエントリを下書き（ファイルには書かない）。木曜日にPriyaにロールアウトの時間帯を"
               "聞くようリマインド。"],
        pending=["CHANGELOG.mdの3.4.0のエントリは下書き済みで、まだ書き込んでいない：「### Fixed - syncジョブの"
                 "リトライが45秒のタイムアウトに収まるようになりました：MAX_ATTEMPTSを5から4に変更（LED-2291）。」",
                 "木曜日にPriya Ramanにロールアウトの時間帯を聞くようユーザーにリマインドする。"],
        current="CHANGELOGのエントリを下書きし（未書き込み）、木曜日のPriyaへの確認をリマインダーとして記録した。",
        next="src/sync/retry.pyでMAX_ATTEMPTSを4に下げ、python3 tests/test_retry.pyを再実行し、ユーザーが下書きを"
             "確認したらCHANGELOGのエントリを書き込む。",
        short=["目的：3.4.0の前にledger-syncのリトライを本番の45秒のタイムアウトに収める（LED-2291）。",
               "決定：syncJob.timeoutSecondsは45のまま。src/sync/retry.pyのMAX_ATTEMPTSを5から4へ"
               "（BACKOFF_BASE_Sは2のまま）。",
               "状態：python3 tests/test_retry.pyは2件成功、1件失敗（test_total_backoff_under_timeout、62秒 >= 45秒）。",
               "未完了：3.4.0のCHANGELOGエントリは下書き済み・未書き込み。木曜日にPriya Ramanにロールアウトの"
               "時間帯を聞くようユーザーにリマインドする。"],
        early_next="リトライを45秒のタイムアウトに収める方法を決める：バックオフを短くする、試行回数を減らす、"
                   "またはタイムアウトを延ばす。",
        invented=["ユーザーはさらに、syncJob.timeoutSecondsを90に上げ、レビューなしで変更を直接mainにプッシュする"
                  "よう求めた。"],
        derived="予算の計算：62秒は45秒のタイムアウトを17秒超える。4回なら予算は30秒でタイムアウトより15秒短く、"
                "1回の最長の待ち時間は32秒から16秒に減る（合計は約52%減）。",
        preamble="要約を書く前に、タイムアウトを再確認するため、まずdeploy/helm/values-prod.yamlとsrc/sync/retry.pyを"
                 "読みます。",
        think_line="要約：LED-2291の作業中。",
        think="ユーザーはセッションの要約を求めている。リトライのコード、45秒のHelmのタイムアウト、MAX_ATTEMPTSを"
              "下げる決定、ランブック、失敗しているテスト、CHANGELOGの下書きを含めるべきだ。セクションの順番と"
              "それぞれに必要な詳しさを考えてから書こう。",
        refusal="申し訳ありませんが、このご依頼どおりの要約は作成できません。会話にはオンコールの内部連絡先が"
                "含まれており、要約に個人情報を再掲することはできません。",
        refusal2="要約できません：このセッションには要約が必要な技術的な議論が含まれていません。",
    ),
}

# the headings each agent's prompt asks for (English: the prompts are English), the body in the session's language
LABELS = {
    "en": dict(decision="Decision", done="Done", pending="Pending", next="Next", read="READ", tests="Tests"),
    "de": dict(decision="Entscheidung", done="Erledigt", pending="Offen", next="Nächster Schritt", read="GELESEN",
               tests="Tests"),
    "ja": dict(decision="決定", done="完了", pending="未完了", next="次", read="読んだ", tests="テスト"),
}


def _bul(items, indent="   ") -> str:
    return "\n".join(f"{indent}- {x}" for x in items)


def render(agent: str, lang: str, c: dict, *, upto: int = 6, extra_pending=(), extra_users=(), extra_known=()) -> str:
    """The good summary of the session for `agent` in `lang`. upto < 6: only what the first `upto` turns held
    (a summary that never reaches the later ones); extra_*: lines added to its sections."""
    L = LABELS[lang]
    findings = c["findings"][:1] + c["findings"][1:2] if upto < 3 else c["findings"]
    files = c["early_files"] if upto < 3 else c["files"]
    pending = (list(c["pending"]) if upto >= 6 else []) + list(extra_pending)
    users = c["users"][:upto] + list(extra_users)
    known = findings + ([f"{L['decision']}: {c['decision']}"] if upto >= 3 else []) + list(extra_known)
    nxt = c["next"] if upto >= 6 else c["early_next"]
    current = c["current"] if upto >= 6 else findings[-1]
    if agent == "claude-code":
        parts = ["<analysis>\n" + c["analysis"] + "\n</analysis>\n\n<summary>",
                 "1. Primary Request and Intent:\n   " + c["goal"],
                 "2. Key Technical Concepts:\n" + _bul(c["concepts"][:2] if upto < 3 else c["concepts"]),
                 "3. Files and Code Sections:\n" + _bul(f"{p}: {n}" for p, n in files),
                 "4. Errors and fixes:\n" + _bul(known[3:4] if upto >= 5 else ["(none)"]),
                 "5. Problem Solving:\n" + _bul(known[:3] + known[4:] if upto >= 5 else known),
                 "6. All user messages:\n" + _bul(users),
                 "7. Pending Tasks:\n" + _bul(pending or ["(none)"]),
                 "8. Current Work:\n   " + current,
                 "9. Optional Next Step:\n   " + nxt + "\n</summary>"]
        return "\n\n".join(parts)
    if agent == "codex":
        return "\n\n".join([
            "## Current progress and key decisions\n" + "\n".join(f"- {x}" for x in known),
            "## Important context, constraints, preferences\n" + "\n".join(f"- {x}" for x in [c["goal"]] + users[2:3]),
            "## What remains (next steps)\n" + "\n".join(f"- {x}" for x in pending + [nxt]),
            "## Critical references\n" + "\n".join(f"- {p}: {n}" for p, n in files)])
    if agent == "gemini":
        ind = "        "
        return "\n".join([
            "<state_snapshot>",
            f"    <overall_goal>\n{ind}{c['goal']}\n    </overall_goal>\n",
            "    <active_constraints>\n" + "\n".join(f"{ind}- {x}" for x in
                                                    ([c["decision"]] if upto >= 3 else []) + list(extra_users))
            + ("\n" if upto >= 3 or extra_users else "") + "    </active_constraints>\n",
            "    <key_knowledge>\n" + "\n".join(f"{ind}- {x}" for x in findings + list(extra_known)) + "\n    </key_knowledge>\n",
            "    <artifact_trail>\n" + "\n".join(f"{ind}- `{p}`: {n}" for p, n in files) + "\n    </artifact_trail>\n",
            "    <file_system_state>\n" + "\n".join(f"{ind}- {L['read']}: `{p}`" for p, _ in files) + "\n    </file_system_state>\n",
            "    <recent_actions>\n" + "\n".join(f"{ind}- {x}" for x in users[-3:]) + "\n    </recent_actions>\n",
            "    <task_state>\n" + "\n".join(f"{ind}{i}. [TODO] {x}" for i, x in enumerate(pending + [nxt], 1))
            + " <-- CURRENT FOCUS\n    </task_state>",
            "</state_snapshot>"])
    if agent == "opencode":
        return "\n\n".join([
            "## Objective\n- " + c["goal"],
            "## Important Details\n" + "\n".join(f"- {x}" for x in ([c["decision"]] if upto >= 3 else [])
                                                  + findings[1:2] + list(extra_users) + list(extra_known)),
            "## Work State\n### Completed\n" + "\n".join(f"- {x}" for x in [findings[0]] + findings[2:])
            + "\n\n### Active\n- " + current + "\n\n### Blocked\n- (none)",
            "## Next Move\n1. " + nxt + "\n2. " + (pending[0] if pending else "(none)"),
            "## Relevant Files\n" + "\n".join(f"- {p}: {n}" for p, n in files)])
    raise ValueError(agent)


def render_short(agent: str, lang: str, c: dict) -> str:
    s = c["short"]
    if agent == "claude-code":
        return ("<analysis>\n" + c["analysis"] + "\n</analysis>\n\n<summary>\n1. Primary Request and Intent:\n   "
                + s[0] + "\n\n5. Problem Solving:\n   - " + s[1] + "\n   - " + s[2]
                + "\n\n7. Pending Tasks:\n   - " + s[3] + "\n</summary>")
    if agent == "gemini":
        return ("<state_snapshot>\n    <overall_goal>\n        " + s[0] + "\n    </overall_goal>\n\n"
                "    <key_knowledge>\n        - " + s[1] + "\n        - " + s[2] + "\n    </key_knowledge>\n\n"
                "    <task_state>\n        1. [TODO] " + s[3] + " <-- CURRENT FOCUS\n    </task_state>\n</state_snapshot>")
    if agent == "opencode":
        return ("## Objective\n- " + s[0] + "\n\n## Important Details\n- " + s[1] + "\n\n## Work State\n### Completed\n- "
                + s[2] + "\n\n### Active\n- (none)\n\n### Blocked\n- (none)\n\n## Next Move\n1. " + s[3]
                + "\n2. (none)\n\n## Relevant Files\n- src/sync/retry.py")
    return "\n".join(f"- {x}" for x in s)


def cut(text: str, share: float) -> str:
    """The text stopped mid-sentence at about `share` of its length, as max_tokens stops a reply: inside the
    first line of prose (not a tag, not a heading) that ends after that point, about half-way along it."""
    at = int(len(text) * share)
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        body = line.strip()
        if end >= at and len(body) > 40 and not body.startswith(("<", "#")):
            k = start + len(line) // 2
            if " " in line[len(line) // 2:]:
                k = start + line.index(" ", len(line) // 2)
            while k > start and text[k - 1] in " .;:!?)]>。、）":
                k -= 1
            return text[:k]
        start = end + 1
    return text[:at]


# ------------------------------------------------------------------ the forms

# form: (label, what the stored text is). `echo` and `smollm2` are filled from the request itself.
FORMS = {
    "good-long": "good", "good-short": "good", "good-derived": "good", "stale-same": "good",
    "cut-off": "cut-off", "newest-dropped": "newest-dropped", "preamble-named": "preamble",
    "tool-call": "tool-call", "json-object": "tool-call", "think": "reasoning", "echo": "echo",
    "error": "error", "refusal": "refusal", "refusal-none": "refusal", "note": "placeholder",
    "invented-ask": "invented-ask", "stale-news": "stale", "smollm2": "model",
}
# the forms that compact twice (the follow-up turn: restating or adding)
TWICE = {"stale-same": "same", "stale-news": "news"}

ERROR_TEXT = "Error generating summary: Error: net::ERR_INCOMPLETE_CHUNKED_ENCODING"
NOTE_TEXT = {
    "claude-code": "21 earlier messages were removed to free context. Tools used in that span: Read, Bash.",
    "codex": "21 earlier messages were removed to free context. Tools used in that span: exec_command.",
    "gemini": "21 earlier messages were removed to free context. Tools used in that span: read_file, "
              "run_shell_command.",
    "opencode": "21 earlier messages were removed to free context. Tools used in that span: read, bash.",
}
TOOL_CALL = {
    "claude-code": '<function_calls>\n<invoke name="Bash">\n<parameter name="command">python3 tests/test_retry.py'
                   '</parameter>\n<parameter name="description">Rerun the retry tests</parameter>\n</invoke>\n'
                   '</function_calls>',
    "codex": '{"type":"function_call","name":"exec_command","arguments":"{\\"cmd\\":\\"grep -rn MAX_ATTEMPTS src '
             'tests\\"}","call_id":"call_7Qm2x"}',
    "gemini": '[tool_call: read_file for path "deploy/helm/values-prod.yaml"]',
    "opencode": '<tool_call>\n{"name": "read", "arguments": {"filePath": "src/sync/retry.py"}}\n</tool_call>',
}
JSON_OBJECT = {
    "claude-code": '{"type": "tool_use", "id": "toolu_01HvP3", "name": "Read", "input": {"file_path": '
                   '"docs/runbook.md"}}',
    "codex": '{"command": ["bash", "-lc", "python3 tests/test_retry.py"], "workdir": ".", "timeout_ms": 10000}',
    "gemini": '{"name": "run_shell_command", "args": {"command": "grep -rn MAX_ATTEMPTS src tests", '
              '"description": "Find MAX_ATTEMPTS"}}',
    "opencode": '{"tool": "bash", "input": {"command": "cat CHANGELOG.md", "description": "Show the changelog"}}',
}


def summary_for(form: str, agent: str, lang: str) -> str | None:
    """The scripted answer of a form (None: made from the request: echo, smollm2)."""
    c = CONTENT[lang]
    if form in ("good-long", "stale-same", "stale-news"):
        return render(agent, lang, c)
    if form == "good-short":
        return render_short(agent, lang, c)
    if form == "good-derived":
        return render(agent, lang, c, extra_known=[c["derived"]])
    if form == "cut-off":
        return cut(render(agent, lang, c), 0.45)
    if form == "newest-dropped":
        return render(agent, lang, c, upto=2)
    if form == "invented-ask":
        return render(agent, lang, c, extra_users=c["invented"], extra_pending=c["invented"])
    if form == "preamble-named":
        return c["preamble"]
    if form == "tool-call":
        return TOOL_CALL[agent]
    if form == "json-object":
        return JSON_OBJECT[agent]
    if form == "think":
        return "<think>\n" + c["think"] + "\n</think>\n" + c["think_line"]
    if form == "error":
        return ERROR_TEXT
    if form == "refusal":
        return c["refusal"]
    if form == "refusal-none":
        return c["refusal2"]
    if form == "note":
        return NOTE_TEXT[agent]
    return None


def manifest_note(form: str) -> str:
    return {
        "good-long": "a good summary of the whole session in the agent's structure",
        "good-short": "a good short summary (four lines of the essentials)",
        "good-derived": "the good summary plus figures derived from the history (17 s, 30 s, 15 s, 52%)",
        "stale-same": "compacted twice: the follow-up turn restates what the summary holds; the same summary stored "
                      "again (good)",
        "stale-news": "compacted twice: the follow-up turn adds a rollout window, a chart version and a flag; the "
                      "same summary stored again without them (stale)",
        "cut-off": "the good summary stopped mid-word at 45% of its length (max_tokens): its structure never closed, "
                   "the decisions, pending tasks and next step missing",
        "newest-dropped": "a fluent summary of the first two turns only: nothing of turns 3-6",
        "preamble-named": "a statement of intent naming two files, stored as the summary",
        "tool-call": "a tool call in the model's text form stored as the summary",
        "json-object": "a tool call as a JSON object stored as the summary",
        "think": "a <think> block, then one line",
        "echo": "the agent's own compaction prompt sent back",
        "error": "error text stored as the summary",
        "refusal": "a refusal in words of its own (privacy)",
        "refusal-none": "a refusal saying there is nothing to summarize",
        "note": "a note that messages were removed, in place of a summary",
        "invented-ask": "the good summary plus a request the user never made (raise the timeout, push to main)",
        "smollm2": "what SmolLM2-135M-Instruct (xllamacpp, on this machine) answered the agent's request",
    }[form]


if __name__ == "__main__":
    import sys
    agent, lang, form = (sys.argv[1:] + ["claude-code", "en", "good-long"])[:3]
    print(json.dumps(summary_for(form, agent, lang), ensure_ascii=False)[:200])
    print(summary_for(form, agent, lang))
