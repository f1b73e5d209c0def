"""The detectors on every evaluation set (real data and the hand-written corpus) must meet
the evaluation's targets; the sets must be what the README says they are."""
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "corpus"))

import evaluate  # noqa: E402


def test_sets_are_what_they_claim():
    items = evaluate.all_items()
    by_set = Counter(it.set for it in items)
    assert by_set["model"] >= 600, "the real model outputs (tests/corpus/real/model_outputs.jsonl)"
    assert by_set["human"] >= 700
    human_langs = {it.lang for it in items if it.set == "human"}
    assert len(human_langs) >= 12 and {"zh", "ja", "ko", "ru", "ar", "he", "de", "fr"} <= human_langs
    model_langs = {it.lang for it in items if it.set == "model"}
    assert len(model_langs) >= 10
    histories = {it.input_text for it in items if it.set == "model"}
    assert len(histories) >= 100
    # the model's loops are labelled, and there are enough of them to measure recall
    assert sum(1 for it in items if it.set == "model" and it.truth.get("repetition")) >= 50
    # the later set (generate_openclaw.py): new histories, the prompts compactors send
    later = [it for it in items if it.set == "openclaw"]
    assert len(later) >= 360 and len({it.lang for it in later}) >= 10
    for shape in ("-json-log-", "-email-", "-notes-"):        # the second batch's shapes of history
        assert sum(1 for it in later if shape in it.id) >= 30, shape
    assert not {it.input_text for it in later} & histories, "its histories are new"
    assert sum(1 for it in later if it.truth.get("repetition")) >= 20


def test_every_set_meets_the_targets():
    items = evaluate.all_items()
    res = evaluate.evaluate(items, evaluate.store_verdict(items))
    assert evaluate.targets_missed(res) == []


def test_seed_rules_are_the_baseline_they_claim_to_be():
    """The literal seed rules raise many false alarms on the real human text."""
    items = [it for it in evaluate.all_items() if it.set == "human"]
    res = evaluate.evaluate(items, evaluate.seed_verdict)
    n = sum(v[0] for v in res["good"].values())
    alarmed = sum(v[1] for v in res["good"].values())
    assert alarmed / n > 0.25


def test_the_seeds_fast_count_gives_the_seeds_verdicts():
    """The speed reference counts the seed's 20-character windows with Counter (in C); its
    verdict is the seed's own loop's on every summary of the evaluation."""
    from compaction_guard import seed_rules
    texts = {it.content for it in evaluate.all_items()}
    texts |= {"ab" * 40, "x" * 59, "x" * 60, "x" * 61, "The same clause again. " * 3}
    differ = [t[:60] for t in texts if seed_rules.detect_repetition(t) != seed_rules.detect_repetition_literal(t)]
    assert differ == []


def test_the_agents_set_is_what_the_recordings_hold(tmp_path):
    """real/agents.jsonl is written by real/collect_agents.py from the recordings kept in the
    repository (tests/recordings/, tests/data/claude-code/): the same bytes again, and every
    agent with good and broken summaries."""
    import subprocess
    real = Path(evaluate.__file__).parent / "real"
    out = tmp_path / "agents.jsonl"
    subprocess.run([sys.executable, str(real / "collect_agents.py"), "--out", str(out)], check=True,
                   capture_output=True, timeout=120)
    assert out.read_bytes() == (real / "agents.jsonl").read_bytes()
    items = evaluate.agent_items()
    for st in evaluate.AGENT_SETS:
        mine = [it for it in items if it.set == st]
        assert any(it.label == "good" for it in mine) and any(it.must_fail for it in mine), st


def test_the_sessions_set_is_what_the_recordings_hold(tmp_path):
    """real/sessions.jsonl is written by real/collect_sessions.py from the long sessions' recordings
    (tests/recordings/sessions/data/, the agents' stores xz-compressed): the same bytes again, and every
    agent with good and broken summaries in English, German and Japanese."""
    import subprocess
    real = Path(evaluate.__file__).parent / "real"
    out = tmp_path / "sessions.jsonl"
    subprocess.run([sys.executable, str(real / "collect_sessions.py"), "--out", str(out)], check=True,
                   capture_output=True, timeout=300)
    assert out.read_bytes() == (real / "sessions.jsonl").read_bytes()
    items = evaluate.session_items()
    for st in evaluate.SESSION_SETS:
        mine = [it for it in items if it.set == st]
        assert {it.lang for it in mine} == {"en", "de", "ja"}, st
        assert any(it.label == "good" for it in mine) and any(it.must_fail for it in mine), st
