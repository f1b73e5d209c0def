"""Each detector on the forms it exists for, and on the good text it must leave alone."""
import json
import time
from pathlib import Path

import pytest

from compaction_guard import validate, SEED
from compaction_guard.settings import DEFAULT
from compaction_guard.tokens import estimate_tokens, seed_tokens

ENGLISH = ("The user asked to migrate the CI from Travis to GitHub Actions. We wrote .github/workflows/ci.yml "
           "with a matrix for Python 3.10 to 3.13 and a pip cache. The publish job is still pending.")


def kinds(text, **kw):
    return validate(text, **kw).failures


@pytest.mark.parametrize("text", ["", "   ", "OK", "Done.", "null", "(no summary available)",
                                  "Summary unavailable due to context limits. Older messages were truncated.",
                                  "Error generating summary: Error code: 429 - {'error': {'code': 'rate_limit_exceeded'}}",
                                  "I'm sorry, but I can't help with summarizing this conversation.",
                                  "<think>The user wants a summary. Let me look at the messages first and then",
                                  "Thinking Process:\n\n1. **Analyze the request**: summarize the chat.\n2. **Draft**:"])
def test_empty_forms(text):
    r = validate(text, input=ENGLISH * 3)
    assert r.failures == ["empty"]
    assert r.reasons["empty"]


def test_skeleton_is_empty_over_real_history_only():
    skel = "## Decisions\nNo prior history.\n\n## Open TODOs\nNone captured.\n\n## Exact identifiers\nNone captured."
    assert kinds(skel, input=ENGLISH * 4) == ["empty"]
    tiny = validate(skel, input_tokens=0)   # the summarizer really had no history
    assert tiny.valid and any("skeleton" in w for w in tiny.warnings)


def test_closed_reasoning_before_summary_is_a_warning():
    r = validate("<think>Let me think about what matters.</think>\n" + ENGLISH, input=ENGLISH * 4)
    assert r.valid
    assert any(w.startswith("reasoning_leak") for w in r.warnings)


def test_one_sentence_summaries_are_valid_in_any_script():
    for s in ["Renamed the repo to acme-cli.", "修复了登录错误。", "ユーザーは資料を共有しました。", "Пользователь ушёл."]:
        assert validate(s).valid, s


def test_inflation_counts_cjk_right():
    english = "The user asked for the weekly report and I sent it to the team channel."  # ~18 tokens
    chinese = "用户要求发送每周报告，我已经把报告发到了团队频道，并附上了本周的主要指标和下周的计划安排。"
    assert seed_tokens(chinese) < seed_tokens(english)          # the seed's chars/4 sees a shrink
    assert estimate_tokens(chinese) > estimate_tokens(english)  # it is not one
    assert kinds(chinese, input=english) == ["inflation", "language_drift"]   # and in another language
    assert "inflation" not in kinds(english, input=chinese)


def test_inflation_from_input_tokens():
    r = validate(ENGLISH, input_tokens=10)
    assert r.failures == ["inflation"] and r.input_tokens == 10 and r.output_tokens > 10


@pytest.mark.parametrize("noise", [
    "ÐŸÑ€Ð¸Ð²ÐµÑ‚, ÐºÐ°Ðº Ð´ÐµÐ»Ð°? Ð­Ñ‚Ð¾ Ñ‚ÐµÑÑ‚ Ð¿Ñ€Ð¾ÐµÐºÑ‚Ð°.",
    "æ—¥æœ¬èªžã�®ãƒ†ã‚­ã‚¹ãƒˆã�§ã�™ã€‚æ—¥æœ¬èªžã�®ãƒ†ã‚­ã‚¹ãƒˆ",
    "\ufffd\ufffd\ufffd了\ufffd\ufffd癸\ufffd\ufffd\ufffd\ufffd\ufffd鳙\ufffd\ufffd\ufffd",
    "ĠThe Ġuser Ġasked Ġfor Ġthe Ġweekly Ġreport ĊĠand ĠI Ġsent Ġit",
    "1012 2003 1996 3231 2005 1037 4638 2000 1996 2136 3094 1012 2057 2081 1037 2047 4638",
    "x7#Kp!q2@Lm9$ vB&w3*Zr^ 8(Tq)Nf+ 2{Hs}Jd= k|Y4<eR> 9~Ua`Wc; 0?Xg,Pm: i%Ob&5Lq",
])
def test_garbled_forms(noise):
    assert kinds(noise) == ["garbled"]


def test_names_joined_by_hyphens_are_not_base64_and_one_mojibake_sequence_is_a_warning_if_ftfy_agrees():
    import base64
    import random
    # real changelog lines (Debian's): patch names are words joined by hyphens and underscores
    log = ("  * Update patches\n    - Drop Compile_with_FILE_OFFSET_BITS_64_on_32-bit_Linux.patch\n"
           "    - Add 0001-Use-g_strjoinv-instead-of-g_strjoin.patch\n"
           "  * d/p/build-Update-use-of-link_whole-for-meson-0.52.patch: refreshed\n")
    r = validate(ENGLISH + "\n" + log)
    assert r.valid and not r.warnings
    # URL-safe base64 (`-` and `_` among its digits) stays noise
    rng = random.Random(5)
    blob = base64.urlsafe_b64encode(bytes(rng.randrange(256) for _ in range(300))).decode()
    assert "garbled" in kinds(ENGLISH + "\n" + blob)
    # one sequence under the failure's three: a warning that says what it reads as, when ftfy
    # reads it as mojibake; a real text's quoted `‘ß’` is not
    r = validate("The user from MÃ¼nchen asked about the refund for last week's order; we approved it and closed it.")
    assert r.valid and any("reads as 'ü'" in w for w in r.warnings)
    r = validate("The user asked whether the final input character ‘ß’ sorts after 's'; we checked the locale settings.")
    assert r.valid and not r.warnings


def test_garbage_tail_after_good_start():
    import base64
    import random
    rng = random.Random(3)
    tail = base64.b64encode(bytes(rng.randrange(256) for _ in range(600))).decode()
    assert "garbled" in kinds(ENGLISH + "\n" + tail)


def test_seed_entropy_signal_is_not_trusted_alone():
    chinese = "本次会话中，用户和我一起排查了登录接口偶发超时的问题。日志显示超时集中在每天上午九点左右。"
    r = validate(chinese)
    assert r.entropy > SEED.max_entropy and r.valid


def test_entropy_is_measured_when_read_and_the_text_let_go():
    from compaction_guard.check import check_records
    from compaction_guard.records import SummaryRecord
    from compaction_guard.tokens import shannon_entropy
    text = "本次会话中，用户和我一起排查了登录接口偶发超时的问题。 The fix was deployed."
    r = validate(text)
    assert r._text == text and r._entropy is None            # nothing measured yet
    assert r.to_dict()["entropy"] == shannon_entropy(text) and r._text is None
    # a report that keeps its results measures them as it keeps them: no summary text held
    report = check_records([SummaryRecord(f"s{i}", text + str(i), "t") for i in range(3)])
    assert [x._text for x in report.results] == [None] * 3
    assert [x.entropy for x in report.results] == [shannon_entropy(text + str(i)) for i in range(3)]
    # a garbled finding reports the same figure the result does
    g = validate("ÃƒÂ© ÃƒÂ¨ " * 30)
    assert g.findings[0].kind == "garbled" and g.findings[0].figures["entropy"] == g.entropy


@pytest.mark.parametrize("good", [
    "| Platform | Node 20 | Node 22 |\n|---|---|---|\n| Linux | pass | pass |\n| macOS | pass | pass |\n| Windows | pass | pass |",
    "- **File:** a.py — fixed\n- **File:** b.py — fixed\n- **File:** c.py — fixed\n- **File:** d.py — fixed",
    "Retries:\n```\nERROR connection refused to db:5432\nERROR connection refused to db:5432\nERROR connection refused to db:5432\n```\nFixed the security group.",
    "Commit 9b1e4f0c2d7a8e3b6f5c1d0a9e8b7c6d5f4e3a2b, run 6f1c2b8e-3d4a-4f7b-9c2e-8a1d5e6f7b3c, sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
    '{"task": "migrate CI", "done": ["ci.yml"], "pending": ["publish"], "next": "tags only"}',
    "🚀 Deployed. ✅ Tests green. ⚠️ Contact form still on staging. 📌 Review analytics tomorrow.",
])
def test_good_structures_stay_valid(good):
    assert validate(good).valid


@pytest.mark.parametrize("loop", [
    ENGLISH + " " + " ".join(["The publish job is still pending."] * 6),
    ENGLISH + "\n" + "\n".join(["User:"] * 24),
    ENGLISH + " " + " ".join(["the"] * 40),
    "用户要求修复登录错误。" + "我们需要修复这个问题。" * 8,
    "- a: one thing here\n- b: another thing\n" * 6,
])
def test_repetition_forms(loop):
    assert "repetition" in kinds(loop)


@pytest.mark.parametrize("text", [
    "", "0", "2026", "12 ms, 7 s", "007 agent", "v1.2.3\n\tport 8080  ", "ab", "0a0", "a00",
    "\u0663\u0664 items, 12 ms",            # Arabic-Indic digits next to 0-9
    "\uff11\uff12\u3000\u4efb\u52a1 3",            # full-width digits, an ideographic space
    "caf\u00e9 42\u00a0\u20ac", "\u0909\u0967\u0968 9",   # a no-break space; Devanagari digits
])
def test_normalize_masks_digits_as_the_regex_does(text):
    """repetition.normalize masks digits on bytes where it can: the same bytes as the plain
    definition (every run of Unicode digits one "0", whitespace collapsed, UTF-8)."""
    import re
    from compaction_guard.detectors.repetition import normalize
    plain = " ".join(re.sub(r"\d+", "0", text).split()).encode("utf-8", "surrogatepass")
    assert normalize(text) == plain
    assert normalize(text, mask_digits=False) == " ".join(text.split()).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("data, p, at", [
    (b"xyabababababz", 2, 6), (b"abababab", 2, 2), (b"abcabcabcab", 3, 6), (b"ab" * 500 + b"a", 2, 500),
    (b"qqqq", 1, 1), (b"xabcabc", 3, 7), (b"zzabcab", 3, 5),
])
def test_copies_count_back_to_back_copies(data, p, at):
    """repetition._copies (galloping and binary searches) against the copy-by-copy definition:
    whole copies of the unit before `at` extended both ways, then the ragged ends."""
    from compaction_guard.detectors.repetition import _copies
    unit = data[at - p:at]
    j = at - p
    while j - p >= 0 and data[j - p:j] == unit:
        j -= p
    back = data[max(0, j - p):j][::-1]
    k = 0
    while k < min(len(back), p) and back[k] == unit[::-1][k]:
        k += 1
    begin = j - k
    j = at
    while data[j:j + p] == unit:
        j += p
    rest = data[j:j + p]
    k = 0
    while k < len(rest) and rest[k] == unit[k]:
        k += 1
    assert _copies(data, p, at) == (begin, j + k)


@pytest.mark.parametrize("marker", ["[TRUNCATED]", "[FALLBACK]", "[Truncated from 48211 tokens]",
                                    "[LCM fallback summary; truncated for context management]", "[Capped from 9000 tokens to ~2000]",
                                    "[Capped]", "[Truncated for context management]", "[... 12 lines truncated ...]",
                                    "[TRUNCATED: 40 of 100 lines dropped by compaction-resilience-guard L3]"])
def test_truncation_markers(marker):
    assert kinds(ENGLISH + "\n" + marker) == ["truncation_marker"]


def test_marker_quoted_in_code_is_a_warning():
    r = validate("We documented the `[TRUNCATED]` marker in the README and its meaning for operators.")
    assert r.valid and any("quoted_marker" in w for w in r.warnings)


def test_stale_after_whitespace_normalization():
    assert kinds(ENGLISH, previous="  " + ENGLISH.replace(" ", "\n  ") + "\n") == ["stale"]
    assert validate(ENGLISH, previous=ENGLISH + " More.").valid


def test_reasons_say_what_to_do():
    r = validate("", input=ENGLISH)
    assert "re-run" in r.reasons["empty"]


def test_loop_with_a_counter_but_not_an_enumeration():
    loop = "Plan:\n" + "\n".join(f"Step {i}: The user asked to fix the build." for i in range(1, 25))
    assert kinds(loop) == ["repetition"]
    # Lines that differ only in their digits look the same as a loop through a counter;
    # when the input is known and holds the lines, they were picked from it.
    lines = [f"Restarted pod api-{i} in namespace prod." for i in range(1, 14)]
    enumeration = "Restarted:\n" + "\n".join(f"{i}. {ln}" for i, ln in enumerate(lines, 1))
    history = "\n".join(f"tool: kubectl rollout restart -> {ln}" for ln in lines)
    assert validate(enumeration, input=history).valid
    assert kinds(enumeration) == ["repetition"]          # no input: the guard cannot tell
    retries = "\n".join(f"attempt {i}/12: ERROR connection refused to db:5432" for i in range(1, 13))
    assert validate("Log:\n" + retries, input="user: the migration fails\ntool: " + retries).valid
    table = "| Node | Status |\n|---|---|\n" + "\n".join(f"| node-{i:02d} | OK |" for i in range(1, 15))
    assert validate(table, input=table.replace("|", " ")).valid


def test_a_list_of_names_whose_numbers_neither_repeat_nor_count_is_not_a_loop():
    # the end of a real README (libsasl2-2's README.Debian): thirteen file names, one word
    # each, that differ only in their numbers, and not by a count
    rfcs = ("Also see the following RFC\ndocuments, which are currently not distributed with the Debian packages:\n\n"
            "  rfc1321.txt rfc1939.txt rfc2104.txt rfc2195.txt rfc2222.txt\n"
            "  rfc2243.txt rfc2245.txt rfc2289.txt rfc2444.txt rfc2595.txt\n  rfc2831.txt rfc2945.txt rfc3174.txt")
    assert validate(rfcs).valid
    # OpenClaw's safeguard summary ends on its identifiers
    tickets = ("## Decisions\n- Refunds go through the billing queue.\n\n## Exact identifiers\n"
               "SUP-77410, SUP-77415, SUP-77422, SUP-77431, SUP-77440, SUP-77452, SUP-77460, SUP-77471")
    assert validate(tickets).valid
    # the same names through a counter, a name that comes back, or run on past a list's length: loops
    assert kinds("Summary of the run: " + " ".join(f"prjer_{i}" for i in range(2382, 2394))) == ["repetition"]
    assert kinds("Tickets: " + ", ".join(f"SUP-{n}" for n in [77410, 77415, 77422, 77410, 77431, 77440, 77452, 77460, 77471])) \
        == ["repetition"]
    assert kinds("ids: " + ", ".join(f"SUP-{i * 7919 % 100000}" for i in range(1, 40))) == ["repetition"]
    # a longer unit with new numbers is how a model loops (`**web-9** **17:49**`): left a loop
    hosts = [(9, 17, 49), (6, 18, 3), (4, 18, 13), (5, 18, 22), (1, 18, 29), (2, 18, 38), (7, 18, 44), (3, 18, 51)]
    assert kinds("Hosts:\n" + " ".join(f"**web-{h}** **{a}:{b:02d}**" for h, a, b in hosts)) == ["repetition"]


def test_identical_lines_quoted_in_a_closed_code_block_are_a_warning_not_a_loop():
    spec = "Final deployment spec:\n```yaml\nkind: Deployment\nmetadata:\n  name: search-api\nspec:\n  replicas: 3\n```\n"
    log = "curl: (7) Failed to connect to localhost port 5432: Connection refused\n" * 5
    after = "Postgres had run out of disk; we cleared old WAL segments and it came back at 09:12."
    r = validate(spec + "Health check output while the database was down:\n```\n" + log + "```\n" + after)
    assert r.valid and any("quoted output" in w for w in r.warnings)
    # the same lines as prose, no block around them: the summarizer repeated itself
    assert "repetition" in kinds(spec + "Health check output while the database was down:\n" + log.replace("\n", " ") * 2
                                 + after)
    # a fragment repeated inside one line of a closed block is a loop: SmolLM2 summarizing
    # dpkg-shlibdeps(1) wrote `-f "package.yml"` 22 times in one command, closed the block, went on
    out = next(r for r in map(json.loads, open(REAL / "model_pages.jsonl", encoding="utf-8"))
               if r["id"] == "mp-sv-dpkg-shlibdeps.1")["output"]
    assert out.count('-f "package.yml"') >= 20 and "repetition" in kinds(out)


def _later_output(output_id: str) -> dict:
    """A real output of the set made after the detectors were fixed (generate_openclaw.py)."""
    return next(json.loads(x) for x in open(REAL / "model_openclaw.jsonl", encoding="utf-8") if f'"{output_id}"' in x)


def test_a_loop_that_changes_its_unit_on_the_way_to_max_tokens_is_read_at_the_end():
    """SmolLM2 given a French ticket listed dates until max_tokens: 17 full dates
    (`2018-02-14 : `), then 12 shorter ones (`2022-17 : `). The end is the loop."""
    out = _later_output("oc038-fr-ticket-r1")
    assert out["finish_reason"] == "length"
    r = validate(out["output"])
    assert "repetition" in r.failures
    assert next(f for f in r.findings if f.kind == "repetition").figures["runs_to_end"]


def test_a_block_pasted_three_times_word_for_word_is_a_loop_even_when_variants_follow():
    """SmolLM2 given a Turkish tool log wrote one 280-byte Python function three times
    word for word (59% of the summary), then went on with variants of it until max_tokens:
    a loop, and the text is also reported cut off (the loop does not reach its end)."""
    out = _later_output("oc066-tr-tool-log-r1")
    r = validate(out["output"])
    assert "repetition" in r.failures
    assert any(f.kind == "cut_off" for f in r.findings)
    # three stanzas that differ in their numbers stay a list, not a loop: only their digits
    # repeat, and fewer than loop_min_copies_inside times
    stanzas = "".join(f"- host web-{i}: port 80{i}0, pool size {i}2, timeout 3{i} s, retries {i}\n" for i in (1, 2, 3))
    assert validate("Gateway settings after the migration:\n" + stanzas + "All three were restarted at 09:12.").valid


def _issue9_examples():
    import yaml
    from pathlib import Path
    return yaml.safe_load(open(Path(__file__).parent / "data" / "issue9_examples.yaml", encoding="utf-8"))


@pytest.mark.parametrize("ex", _issue9_examples(), ids=lambda ex: ex["id"])
def test_issue9_forms(ex):
    """The good texts issue #9 reported as false alarms are valid; the failures it reported
    as missed are found, with a reason that names them."""
    r = validate(ex["text"].rstrip("\n"))
    assert sorted(r.failures) == sorted(ex["expect"]), r.reasons
    for kind in ex["expect"]:
        assert r.reasons[kind]


def test_garbled_share_never_exceeds_the_text():
    r = validate('{"작업": "x", "ids": "' + " ".join(["@#$%^&*"] * 40) + '"}')
    for f in r.findings:
        if "junk_share" in f.figures:
            assert 0 <= f.figures["junk_share"] <= 1


def test_a_label_and_a_list_on_the_last_line_is_not_a_sentence_cut_off():
    """lossless-claw ends every summary with a footer line, `Expand for details about: a, b, c`:
    a label and a list, not a sentence that stopped. A sentence that stops is still one."""
    body = ("The user is preparing deploy ticket OPS-4411 on branch release/2.7. The constant "
            "MAX_RETRY_BACKOFF_MS=45000 lives in src/deploy/retry.ts and was confirmed. The deploy waits for "
            "incident SUP-82841.\n\n")
    footer = "Expand for details about: the exact retry backoff values, the incident timeline, the branch state"
    assert not any(w.startswith("cut_off") for w in validate(body + footer).warnings)
    assert any(w.startswith("cut_off") for w in validate(body + "Next the team will check the replica lag on the "
                                                               "release branch and then").warnings)
    # a speaker's turn is no label; and a long list line costs what its length costs, whatever it holds
    from compaction_guard.detectors.cutoff import _label_list
    assert not _label_list("user: a, --all") and not _label_list("COMMENT BY yuki (2026-05-13): a, b")
    t = time.perf_counter()
    assert not _label_list("Expand for details about: " + "a,  " * 5000 + "x" * 200)
    assert time.perf_counter() - t < 0.5
    # one item when the footer stands apart after a blank line (issue 58); the same line run on is a sentence
    one = "Expand for details about: exact wording of each status update"
    assert not any(w.startswith("cut_off") for w in validate(body + one).warnings)
    assert any(w.startswith("cut_off") for w in validate(body.rstrip() + " Then the team wanted details about: "
                                                        "the exact wording of each").warnings)


def test_cut_off_is_a_warning_named_so():
    r = validate("The user asked for the migration plan. We agreed on Sunday night and the rollback script is ready. "
                 "Next the team will check the replica lag and then")
    assert r.valid and any(w.startswith("cut_off:") for w in r.warnings)
    # stopped inside the structure it was asked for (its <summary> never closed): a failure (issue 58)
    r = validate("<summary>\nThe user migrated 412 sessions to SQLite; the index on updated_at is still to do.")
    assert r.failures == ["cut_off"] and "<summary> never closed" in r.reasons["cut_off"]
    assert not any(w.startswith("cut_off") for w in validate(ENGLISH).warnings)
    # a straight quote that closes the one its line opened ends a quotation; one left open does not
    said = "The user asked to resume the migration after the backup.\nLast user message: \"please continue\""
    assert not any(w.startswith("cut_off") for w in validate(said).warnings)
    assert any(w.startswith("cut_off") for w in validate(said + '\nNext the user wrote: "').warnings)
    # a URL or a path that ends on a slash is a whole name, a rule ends a section (real READMEs
    # end so); a word cut on a slash, or a dangling `=`, does not end anything
    for end in ("\nDocs: https://www.gnu.org/software/tar/manual/", "\n- Logs: /var/log/openclaw/",
                "\n" + "=" * 40):
        assert not any(w.startswith("cut_off") for w in validate(ENGLISH + end).warnings), end
    for end in ("\nThe user asked for the logs and/", "\nThe next step sets LIMIT ="):
        assert any(w.startswith("cut_off") for w in validate(ENGLISH + end).warnings), end


def test_error_label_about_the_conversation_is_a_summary():
    """Grounding: an error label whose words are the conversation's is a summary of it;
    the same label sharing nothing with the input is what came back instead of one."""
    history = ("user: the API keeps failing with rate limit exceeded, 429 from openai\n"
               "assistant: switching to the backup key and retrying the batch of invoices")
    about = "Rate limit exceeded: the OpenAI key kept returning 429, so we switched to the backup key and retried the invoices batch."
    assert validate(about, input=history).valid
    assert kinds("Rate limit exceeded: please retry after 20 seconds.", input=history) == ["empty"]
    refusal = "I'm unable to help with that request."
    assert kinds(refusal, input=history) == ["empty"]


@pytest.mark.parametrize("template", [
    "## 决定\n无\n\n## 待办\n暂无\n\n## 标识符\n无。",
    "## Entscheidungen\nKeine.\n\n## Offene Aufgaben\nKeine",
    "## Décisions\nAucune\n\n## À faire\nRien",
])
def test_template_of_nothing_in_other_languages(template):
    assert kinds(template, input=ENGLISH * 4) == ["empty"]


UNFILLED = """Based on the conversation, here's a structured summary:

## Goal
[what the user is trying to do]

## Constraints & Preferences
- [constraints or preferences the user stated, or "(none)"]

## Progress
### Done
- [x] [completed work]

### In Progress
- [ ] [current work]

## Key Decisions
- **[decision]**: [why]
"""


def test_an_unfilled_template_is_empty():
    # real outputs of both model families tried (openclaw set oc050-ar-table-r0, gemma set
    # gm036-en-notes-r0): the prompt's checkpoint format written back, placeholders left in
    r = validate(UNFILLED, input=ENGLISH * 3)
    assert r.failures == ["empty"] and "unfilled template: 5 of its 6 lines" in r.reasons["empty"]
    # filled in, with checkboxes, links and one bracketed aside: a summary
    filled = ("## Goal\nFix the 401 on /api/login after the [auth service](https://wiki/auth) refactor.\n\n"
              "## Progress\n- [x] Reproduced the 401 with the expired refresh token\n- [ ] [WIP] patch the token "
              "refresh in auth/session.py\n\n## Key Decisions\n- **Keep JWT**: the mobile app depends on it\n"
              "[see the runbook] for the rollback steps.")
    assert validate(filled).valid
    # content in brackets is no template's slot (openclaw set, ocbb010-it-table-r0, ocbb023-zh-ticket-r0)
    bracketed = ("Here is what you need:\n1. [python]\n2. [mgo -a vim_package (optional)]\n3. [pip install mongo]\n"
                 "4. [Same as 1.x code in JavaScript, with more features]\n[13] [14] [15]")
    assert "empty" not in validate(bracketed).failures
    # a conversation about the template itself: its placeholders are the input's
    talk = "user: the checkpoint template has " + UNFILLED
    assert "empty" not in validate(UNFILLED, input=talk).failures


def test_chat_template_tokens_leaking_are_garbled_unless_quoted():
    leak = "The user asked about the migration.<|im_end|>\n<|im_start|>assistant\nThe user asked about it again."
    assert kinds(leak) == ["garbled"]
    assert "chat-template" in validate(leak).reasons["garbled"]
    quoted = "We fixed the template: the model printed `<|im_end|>` because the server used ChatML for Llama."
    assert validate(quoted).valid
    assert validate("Gemma wrote <end_of_turn> twice.", input="user: why does Gemma write <end_of_turn>?").valid


def test_html_markup_is_structure_not_random_symbols():
    # Gemma 3 writes HTML (`<strong>`, `<code>`, `<i>`) where others write Markdown
    html = ("<strong>Summary</strong>: the <code>/home/user</code> directory holds the <i>config</i> files; "
            "<b>backup.sh</b> failed at <code>02:00</code> with <i>AccessDenied</i> on <code>s3://acme/nightly</code>.")
    assert "garbled" not in kinds(html)
    # a real loop of tags (gemma set, gm028-it-email-r1) is a loop, not noise
    loop = "- The \"i\" in the <i>i</i> of <i>i</i> in the <i>i</i>.\n" + \
        "- The <i>i</i> in the <i>i</i> in the <i>i</i> in the <i>i</i> in the <i>i</i>.\n" * 12
    assert kinds(loop) == ["repetition"]
    # random symbols inside tags are still noise
    assert "garbled" in kinds("<i>{#$}</i> x7#Kp!q2@Lm9$ vB&w3*Zr^ 8(Tq)Nf+ 2{Hs}Jd= k|Y4<eR> 9~Ua`Wc; 0?Xg,Pm: i%Ob&5Lq")


# ------------------------------------------------------------------ language_drift (issue #12, part)
ZH_HISTORY = ("用户：我们的夜间备份任务又失败了，你能看看吗？\n助手：backup.sh 从 2026-11-02 开始在 s3://acme-backups/nightly "
              "上报 AccessDenied。\n用户：那正是我们轮换 KMS 密钥的时候。\n助手：是的，backup-writer 角色对新密钥 "
              "alias/backup-2026 没有授权。\n用户：请修复并手动运行一次备份。\n") * 3


def test_a_loop_over_part_of_a_summary_leaves_its_language_judged():
    # a real form (openclaw set, ocb076-ru-email-r1): a paragraph in the wrong language, then
    # the model loops on `0,` until max_tokens; both failures are said
    prose = ("The nightly backup fails with AccessDenied since the KMS key rotation. The backup-writer role "
             "needs a grant on the new key before the job can run again, and the user asked for one manual "
             "run once the grant is in place. Nothing else was changed in the pipeline or its schedule. ") * 2
    part = validate(prose + "0, " * 150, input=ZH_HISTORY)
    assert part.failures == ["repetition", "language_drift"]
    assert validate(prose).valid
    # a loop over most of the summary has no language to judge: the loop says why it failed
    most = validate(prose[:300] + "0, " * 200, input=ZH_HISTORY * 3)
    assert most.failures == ["repetition"]


def test_a_chinese_character_weighs_as_a_word_in_a_history_s_language_shares():
    # a Chinese conversation with some English tool output: by letters its English lines
    # weigh 2-3 times what they say; a CJK character counts 3 (as informative_chars does),
    # so the history is clearly Chinese and an English summary of it is drift (real: the
    # model set's h077-zh-tool-log, the gemma set's gmb023-zh-ticket and gmb005-zh-notes)
    from compaction_guard.detectors.language import share_in
    hist = ZH_HISTORY + "tool: the backup job exited with status one after the upload step\n" * 3
    assert share_in(hist, "en") < 0.2        # by letters alone: 0.3, a mixed history
    r = validate("The nightly backup fails with AccessDenied since the KMS key rotation; the backup-writer role needs "
                 "a grant on alias/backup-2026, then run backup.sh once by hand.", input=hist)
    assert r.failures == ["language_drift"]


def test_an_english_summary_of_a_chinese_history_is_language_drift():
    r = validate("The nightly backup fails with AccessDenied since the KMS key rotation; the backup-writer role "
                 "needs a grant on alias/backup-2026, then run backup.sh once by hand.", input=ZH_HISTORY)
    assert r.failures == ["language_drift"] and "Chinese" in r.reasons["language_drift"]
    f = next(f for f in r.findings if f.kind == "language_drift")
    assert f.figures["input_language"] == "zh" and f.figures["summary_language"] == "en"


def test_a_chinese_summary_keeping_english_identifiers_is_not_drift():
    r = validate("夜间备份自 2026-11-02 起报 AccessDenied：KMS 密钥轮换后 backup-writer 没有 alias/backup-2026 "
                 "的授权；需要授权并手动运行 `backup.sh`（s3://acme-backups/nightly）。", input=ZH_HISTORY)
    assert r.valid and not r.warnings


def test_a_summary_is_in_the_language_it_writes_not_the_one_it_quotes():
    # real forms (gemma set, gmb004-ru-email, gmb007-ko-tool-log): English prose around a line
    # or two copied from the history; the copies are the history's language, the summary is not
    prose = ("The following is a summary of the conversation. The user could not see the file in the terminal, "
             "so the assistant suggested a different command and a change to the default configuration. ")
    quoted = "用户：那正是我们轮换 KMS 密钥的时候。\n助手：是的，backup-writer 角色对新密钥 alias/backup-2026 没有授权。\n"
    r = validate(prose + "\n" + quoted, input=ZH_HISTORY)      # its copies counted: 39% Chinese, "mixed"
    assert r.failures == ["language_drift"]
    f = next(f for f in r.findings if f.kind == "language_drift")
    assert f.figures["quoted_lines"] == 2 and f.figures["summary_share_in_input_language"] == 0.0
    # a summary in the history's language that quotes its English tool lines is in its language
    hist = ZH_HISTORY + "tool: Uploading 38.2 GB to the bucket took 14 minutes and the checksum matched.\n"
    zh = ("夜间备份自 2026-11-02 起报 AccessDenied：KMS 密钥轮换后 backup-writer 没有授权；授权后手动运行了一次，"
          "结果如下：\ntool: Uploading 38.2 GB to the bucket took 14 minutes and the checksum matched.")
    assert validate(zh, input=hist).valid


def test_a_summary_in_one_of_a_mixed_historys_languages_is_a_warning_at_most():
    mixed = ZH_HISTORY + ("tool: Uploading 38.2 GB to the bucket took 14 minutes and the checksum matched the manifest. "
                          "tool: The alert rule was drafted and the reviewers were asked to approve it today.\n") * 12
    r = validate("The backup failed after the KMS key rotation; the role was granted access, the upload of 38.2 GB "
                 "finished in 14 minutes and the alert rule awaits review.", input=mixed)
    assert r.valid


def test_the_chain_escalates_a_reply_in_the_wrong_language():
    from compaction_guard import run_chain

    class English:
        name = "english"

        def summarize(self, text, request):
            if request.level == 1:
                return ("The nightly backup fails with AccessDenied since the KMS key rotation; the backup-writer "
                        "role needs a grant on the new key, then run the backup once by hand.")
            return "夜间备份因 KMS 密钥轮换报 AccessDenied；需要给 backup-writer 授权新密钥并手动运行一次备份。"
    r = run_chain(ZH_HISTORY, summarizer=English())
    assert r.level_used == 2 and r.attempts[0].failures == ["language_drift"]


# ------------------------------------------------------------------ identifiers (issue #12, part)
ID_HISTORY = "\n".join([
    "user: the nightly job fails, see https://ci.example.com/jobs/4411 and ticket SUP-77410",
    "assistant: backup.sh exits with AccessDenied on s3://acme-backups/nightly since v2.3.1",
    "tool: read scripts/backup.sh (14 KB); commit 3af2c19 changed the IAM role",
    "user: fix it in infra/iam/backup-writer.tf and re-run; reply in SUP-77410",
    "assistant: granted kms:Encrypt in infra/iam/backup-writer.tf; upload took 842 ms per part, 38.2 GB in all",
    "user: good, close SUP-77410 and note infra/iam/backup-writer.tf in the runbook",
] * 2)


def test_identifiers_the_history_never_had_are_invented():
    r = validate("The backup job fails (SUP-88120); fixed in infra/iam/backup-reader.tf, see PR #2231.", input=ID_HISTORY)
    w = [f for f in r.findings if f.kind == "invented_identifiers"]
    assert r.valid and len(w) == 1
    assert set(w[0].figures["invented"]) == {"SUP-88120", "infra/iam/backup-reader.tf", "#2231"}


def test_a_summary_keeping_the_history_s_identifiers_has_no_identifier_warning():
    r = validate("SUP-77410: the nightly backup failed with AccessDenied since v2.3.1 (commit 3af2c19 changed the "
                 "role); kms:Encrypt was granted in infra/iam/backup-writer.tf and the re-run uploaded 38.2 GB. "
                 "Dated 22.11.2026 and 11/2026.", input=ID_HISTORY)
    assert r.valid and not [f for f in r.findings if f.kind.endswith("_identifiers")]


def test_a_summary_dropping_every_key_identifier_loses_them():
    r = validate("The nightly job failed because of missing permissions; they were granted and the job ran again.",
                 input=ID_HISTORY)
    w = [f for f in r.findings if f.kind == "lost_identifiers"]
    assert r.valid and len(w) == 1 and w[0].figures["retention"] == 0.0
    assert "SUP-77410" in w[0].figures["dropped"] and "infra/iam/backup-writer.tf" in w[0].figures["dropped"]


def test_an_operator_who_wants_english_summaries_says_so_once():
    """summary_language: the expected language replaces the history's."""
    english = ("The nightly backup fails with AccessDenied since the KMS key rotation; the backup-writer role "
               "needs a grant on alias/backup-2026, then run backup.sh once by hand.")
    chinese = "夜间备份自 2026-11-02 起报 AccessDenied：KMS 密钥轮换后 backup-writer 没有新密钥的授权，需授权后手动运行 backup.sh。"
    en = SEED.__class__().with_overrides(summary_language="en")
    assert validate(english, input=ZH_HISTORY, settings=en).valid
    r = validate(chinese, input=ZH_HISTORY, settings=en)
    assert r.failures == ["language_drift"] and "summary_language" in r.reasons["language_drift"]


# ------------------------------------------------------------------ ungrounded (issue #12)
REAL = Path(__file__).parent / "corpus" / "real"


def _real_model_output(output_id: str) -> tuple:
    out = next(r for r in map(json.loads, open(REAL / "model_outputs.jsonl", encoding="utf-8")) if r["id"] == output_id)
    hist = next(h for h in map(json.loads, open(REAL / "histories.jsonl", encoding="utf-8")) if h["id"] == out["history"])
    return out["output"], hist["text"]


def _overview(page_id: str) -> dict:
    return next(r for r in map(json.loads, open(REAL / "grounding.jsonl", encoding="utf-8")) if r["id"] == page_id)


def test_a_real_model_output_about_nothing_in_its_history_is_ungrounded():
    """SmolLM2 given an Italian code review wrote Italian sentences about nothing in it."""
    output, history = _real_model_output("h046-it-code-review-r1")
    r = validate(output, input=history)
    assert r.failures == ["ungrounded"]
    f = next(f for f in r.findings if f.kind == "ungrounded")
    assert f.figures["support"] <= 0.03 and f.figures["content_units"] >= 12 and "not in it" in f.reason


def test_a_manual_page_overview_is_grounded_in_its_own_page_and_not_in_another():
    """Real text nobody here wrote: ssh(1)'s German overview, its own page, fgrep(1)'s."""
    ssh, fgrep = _overview("gr-de-ssh.1"), _overview("gr-de-fgrep.1")
    assert validate(ssh["summary"], input=ssh["input"]).valid
    r = validate(ssh["summary"], input=fgrep["input"])
    assert r.failures == ["ungrounded"] and "'ssh'" in r.reasons["ungrounded"]


def test_a_paraphrase_naming_what_the_history_names_is_grounded():
    r = validate("Backups broke after permissions changed; the writer role got encryption rights in the Terraform "
                 "file for backup-writer and SUP-77410 can be closed once the runbook mentions it.", input=ID_HISTORY)
    assert r.valid and "ungrounded" not in [f.kind for f in r.findings]


def test_a_summary_in_another_language_is_drift_not_ungrounded():
    r = validate("The nightly backup fails with AccessDenied since the KMS key rotation; the backup-writer role "
                 "needs a grant on alias/backup-2026, then run backup.sh once by hand.", input=ZH_HISTORY)
    assert r.failures == ["language_drift"]


def test_a_short_summary_is_not_judged_for_grounding():
    # a few words sharing some of the history's: too short to weigh (its language is drift's)
    assert "ungrounded" not in validate("Der Nutzer möchte den nightly backup Job reparieren.",
                                        input=ID_HISTORY).failures


def test_a_short_summary_sharing_nothing_with_a_history_of_specifics_fails():
    # not one word of the history and none of its ten specifics: about something else (#45)
    r = validate("Der Nutzer möchte morgen über Katzen reden.", input=ID_HISTORY)
    assert r.failures == ["ungrounded"], r.reasons
    assert "SUP-77410" in r.reasons["ungrounded"] and "'katzen'" in r.reasons["ungrounded"].lower()


def test_the_chain_escalates_an_ungrounded_reply():
    from compaction_guard import run_chain
    output, history = _real_model_output("h046-it-code-review-r1")

    class OffTopicFirst:
        name = "off-topic-first"

        def summarize(self, text, request):
            return output if request.level == 1 else history.splitlines()[0][:200]
    r = run_chain(history, summarizer=OffTopicFirst())
    assert r.level_used == 2 and r.attempts[0].failures == ["ungrounded"] and not r.attempts[1].failures


def test_a_summary_inventing_most_of_what_it_names_fails():
    """Five or more invented identifiers, half or more of the summary's: a failure (a real
    small model wrote `SOP-82729` and versions like `3.3.1.1.0` for a ticket that had neither)."""
    r = validate("SUP-88120 and SUP-88121 were fixed in infra/iam/backup-reader.tf and infra/kms/key.tf; see PR #2231, "
                 "v4.1.0 is deployed and SUP-77410 is closed.", input=ID_HISTORY)
    f = next(f for f in r.findings if f.kind == "invented_identifiers")
    assert r.failures == ["invented_identifiers"] and f.failure and len(f.figures["invented"]) == 6
    assert "re-run compaction" in f.reason
    # two inventions among what the history names stay a warning
    r = validate("SUP-77410: backup.sh fixed in infra/iam/backup-writer.tf (commit 3af2c19); see PR #2231 and "
                 "SUP-88120.", input=ID_HISTORY)
    assert r.valid and any(f.kind == "invented_identifiers" and not f.failure for f in r.findings)


def test_the_chain_ends_at_l3_keeping_the_history_s_words_when_every_reply_is_off_topic():
    from compaction_guard import run_chain
    output, history = _real_model_output("h046-it-code-review-r1")

    class AlwaysOffTopic:
        name = "always-off-topic"

        def summarize(self, text, request):
            return output
    r = run_chain(history, summarizer=AlwaysOffTopic())
    assert r.level_used == 3 and [a.failures for a in r.attempts[:2]] == [["ungrounded"], ["ungrounded"]]
    assert any("by construction" in w for w in r.attempts[2].warnings)
    assert validate(r.summary, input=history).fidelity["grounding"] > 0.5


def test_the_same_identifier_written_another_way_is_not_invented():
    """A path with its line, a version with its v, an issue number for a URL's tail: what
    coding agents' summaries write for what the history names."""
    history = ("user: the crash is in src/server/app.ts, see https://github.com/acme/api/pull/1893 and "
               "https://github.com/acme/api/issues/77; release 2.3.1 ships lib/db/pool.go\n") * 3
    r = validate("Crash at src/server/app.ts:42:7 fixed (#1893, #77), released as v2.3.1 with lib/db/pool.go:10.",
                 input=history)
    assert not [f for f in r.findings if f.kind == "invented_identifiers"], r.findings
    # an identifier the history never had is still invented, whatever its spelling
    r = validate("Crash at src/client/view.ts:9 fixed (#1894, #78), released as v2.3.2.", input=history)
    f = next(f for f in r.findings if f.kind == "invented_identifiers")
    assert set(f.figures["invented"]) == {"src/client/view.ts:9", "#1894", "#78", "v2.3.2"}


def test_a_prose_summary_of_camel_case_code_is_grounded():
    """Code names things `retryPaymentWebhook`; its summary says "retries payment webhooks".
    Plain words share nothing (support 0); cut at their camelCase seams they do."""
    code = ("export async function retryPaymentWebhook(evt) { await updateBillingAddress(evt.customerId); "
            "const userProfile = await fetchUserProfile(evt.customerId); return openCustomerPortal(userProfile); }\n"
            "function scheduleInvoiceReminder(invoiceId) { return queueReminderEmail(invoiceId, reminderDelayHours); }\n"
            ) * 4
    summary = ("The billing handler now retries failed payment webhooks: it updates the billing address, fetches the "
               "user profile and opens the customer portal; invoice reminders are queued as reminder emails after "
               "a delay measured in hours.")
    r = validate(summary, input=code)
    assert r.valid and r.fidelity["same_language"] is True and r.fidelity["grounding"] > 0.3


def test_chinese_is_judged_on_character_pairs_with_its_own_threshold():
    """Real pages nobody here wrote: localectl(1)'s Chinese overview shares 61% of its
    character pairs with its own page and 7% with cut(1)'s, where unrelated Chinese texts
    share more pairs than other scripts share words (ungrounded_max_support_cjk)."""
    localectl, cut = _overview("gr-zh-localectl.1"), _overview("gr-zh-cut.1")
    own = validate(localectl["summary"], input=localectl["input"])
    assert own.valid and own.fidelity["grounding"] > 0.5
    other = validate(localectl["summary"], input=cut["input"])
    assert other.failures == ["ungrounded"] and 0.03 < other.fidelity["grounding"] <= 0.1
    # cut(1)'s overview shares 17% of its pairs with createdb(1)'s page: more than unrelated
    # text may share, but 78 distinct pairs at 13% bound the share under 25%; its own page, 29%
    cut_own = validate(cut["summary"], input=cut["input"])
    assert cut_own.valid
    createdb = _overview("gr-zh-createdb.1")
    r = validate(cut["summary"], input=createdb["input"])
    assert r.failures == ["ungrounded"] and r.fidelity["grounding"] > 0.1
    f = next(f for f in r.findings if f.kind == "ungrounded")
    assert 0.2 < f.figures["upper_bound"] <= 0.25


def test_a_real_english_answer_around_code_to_a_ukrainian_history_is_drift():
    """SmolLM2 given a Ukrainian chat wrote English prose around an HTML snippet: fastText is
    unsure of the whole (the code), but no line of it reads as Ukrainian."""
    output, history = _real_model_output("h119-uk-chat-r4")
    r = validate(output, input=history)
    assert "language_drift" in r.failures and "no line of the summary reads as Ukrainian" in r.reasons["language_drift"]
    f = next(f for f in r.findings if f.kind == "language_drift")
    assert f.figures["summary_share_in_input_language"] <= 0.1 and f.figures["input_language"] == "uk"


def test_a_long_summary_sharing_few_distinct_words_is_ungrounded_a_short_one_is_given_the_doubt():
    """Real Hungarian text: bc(1)'s overview (49 distinct content words) shares 2% of them with
    mknod(1)'s page: ungrounded, though over 3% of its words with repeats; against its own page,
    14% (a paraphrase in an inflected language), not. The bound weighs the evidence: 1 of 12
    words found (8%) may well be a short paraphrase, 1 of 49 (2%) hardly."""
    bc, mknod = _overview("gr-hu-bc.1"), _overview("gr-hu-mknod.1")
    assert validate(bc["summary"], input=bc["input"]).valid
    r = validate(bc["summary"], input=mknod["input"])
    assert r.failures == ["ungrounded"] and "distinct content words" in r.reasons["ungrounded"]
    f = next(f for f in r.findings if f.kind == "ungrounded")
    assert f.figures["support"] > 0.03 and f.figures["upper_bound"] <= 0.2 and f.figures["distinct_units"] >= 40
    from compaction_guard.detectors.grounding import upper_bound
    assert upper_bound(1 / 12, 12, 2.33) > 0.2 > upper_bound(1 / 49, 49, 2.33)


def test_a_real_output_stopped_inside_a_line_like_the_ones_before_is_cut_off():
    """SmolLM2 hit max_tokens: after Polish chat lines, a lone timestamp (`[12:36]`: its one
    word is how the earlier lines start); after Hebrew lines, `user: ת`, the start of an
    earlier line. A closing code fence, though it starts an earlier ```` ```python ```` line, is not."""
    for output_id, tail in (("h081-pl-chat-r1", "[12:36]"), ("h087-he-tool-log-r0", "user: ת")):
        output, history = _real_model_output(output_id)
        assert output.rstrip().endswith(tail)
        r = validate(output, input=history)
        f = next(f for f in r.findings if f.kind == "cut_off")
        assert f.figures["sign"] == "short-item" and tail in f.reason
    output, history = _real_model_output("h119-uk-chat-r3")
    assert output.rstrip().endswith("```") and "cut_off" not in [f.kind for f in validate(output, input=history).findings]


def test_a_numbered_block_cut_where_the_one_before_goes_on_is_cut_off_and_a_loop():
    """Gemma (gmbb000-en-code-review-r0) wrote `<h2>#1 - The most common error</h2>...` blocks, blank
    lines between them, the number changing, until max_tokens stopped it at `<h2>#4 - The most
    common`: the start of the line before it with its digit changed. Blank lines are spacing, not
    lines; digits are set aside. Three copies with only the number changing, cut inside the
    fourth, are a loop."""
    rows = [json.loads(x) for x in open(REAL / "model_gemma.jsonl", encoding="utf-8")]
    out = next(r for r in rows if r["id"] == "gmbb000-en-code-review-r0")
    assert out["output"].rstrip().endswith("<h2>#4 - The most common")
    r = validate(out["output"])
    assert "repetition" in r.failures
    assert next(f for f in r.findings if f.kind == "repetition").figures["runs_to_end"]
    from compaction_guard.detectors import cutoff
    f = cutoff.detect(out["output"], DEFAULT)[0]
    assert f.figures["sign"] == "short-item" and "#4 - The most common" in f.reason
    # the same block once, whole, then its start: a list that ended is not cut
    block = "<h2>#1 - The most common error</h2> The test fails when the environment variable is not set.\n\n"
    assert not cutoff.detect(block + block.replace("#1", "#2") + block.replace("#1", "#3").rstrip(), DEFAULT)


def test_in_a_store_the_genres_words_weigh_little():
    """Real Spanish manual pages as a store: each overview with its own page, and ac(1)'s
    overview with shuf(1)'s page. 17% of ac's words occur in shuf's page (files, options,
    output: every page's words), so a lone check cannot tell; weighed by how rarely the
    store's 16 inputs use them, 2%: ungrounded. The overviews of their own page stay valid."""
    from compaction_guard import SummaryRecord, check_records
    pages = [r for r in map(json.loads, open(REAL / "grounding.jsonl", encoding="utf-8")) if r["lang"] == "es"]
    ac, shuf = _overview("gr-es-ac.1"), _overview("gr-es-shuf.1")
    alone = validate(ac["summary"], input=shuf["input"])
    assert "ungrounded" not in alone.failures and alone.fidelity["grounding"] > 0.1
    records = [SummaryRecord(p["id"], p["summary"], "test", input_text=p["input"]) for p in pages]
    records.append(SummaryRecord("ac<-shuf", ac["summary"], "test", input_text=shuf["input"]))
    report = check_records(records, workers=1)
    by_id = {r.id: r for r in report.results}
    assert by_id["ac<-shuf"].failures == ["ungrounded"]
    assert "how rarely this store's inputs use them" in by_id["ac<-shuf"].reasons["ungrounded"]
    f = next(f for f in by_id["ac<-shuf"].findings if f.kind == "ungrounded")
    assert f.figures["weighted_support"] <= 0.03 < f.figures["support"]
    assert all("ungrounded" not in by_id[p["id"]].failures for p in pages)
    # fewer inputs than ungrounded_background_min_inputs: no background, the lone rules only
    few = check_records(records[:3] + records[-1:], workers=1)
    assert "ungrounded" not in next(r for r in few.results if r.id == "ac<-shuf").failures


# ------------------------------------------------------------------ transcript (a warning)
def test_a_summary_that_replays_the_conversation_is_a_transcript_warning():
    """SmolLM2 given a Polish tool log and OpenClaw's checkpoint prompt wrote three more
    turns in the log's own shape (`user:`, `assistant: running ...`): no summary."""
    out = _later_output("oc009-pl-tool-log-r0")
    hist = next(json.loads(x)["text"] for x in open(REAL / "openclaw_histories.jsonl", encoding="utf-8")
                if json.loads(x)["id"] == out["history"])
    r = validate(out["output"], input=hist)
    t = [f for f in r.findings if f.kind == "transcript"]
    assert r.valid and t and t[0].figures["turns"] == 3 and set(t[0].figures["speakers"]) == {"user", "assistant"}
    assert not any(f.kind == "transcript" for f in validate(out["output"]).findings), "no history, no speakers"


def test_quoted_turns_keys_and_fallback_copies_are_not_a_transcript():
    history = ("user: the nightly backup failed again, can you look at the logs?\n"
               "assistant: running `journalctl -u backup -n 50`\n"
               "tool: AccessDenied: backup-writer is not allowed to use key kms/prod-2026\n"
               "assistant: the role lost its grant when the key was rotated on 2026-11-02\n"
               "user: ok, grant it and run the job once by hand\n"
               "alerting:\n  - name: backup_stale\n    for: 10m\n  - name: disk_full\n    for: 5m\n") * 2
    quoted = ("The nightly backup failed with AccessDenied after the KMS key rotation on 2026-11-02.\n"
              "user: ok, grant it and run the job once by hand\n"
              "The grant was added to backup-writer and the job ran by hand at 09:12; it succeeded.")
    keys = "Alert rules kept:\n  - name: backup_stale\n    for: 10m\n  - name: disk_full\n    for: 5m\n"
    replay = "\n".join(history.splitlines()[:5])
    fallback = replay + "\n[Truncated from 2,400 tokens]"
    for text in (quoted, keys, fallback):
        assert not any(f.kind == "transcript" for f in validate(text, input=history).findings), text
    assert any(f.kind == "transcript" for f in validate(replay, input=history).findings)


def _gpt2_bytes(text: str) -> str:
    """Text as a byte-level BPE vocabulary prints its UTF-8 bytes (GPT-2's bytes_to_unicode)."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return "".join(table[b] for b in text.encode("utf-8"))


def test_letters_of_turkish_and_polish_are_not_byte_level_pieces():
    """`çı` (Turkish) is a letter pair: `ı` is a continuation byte in GPT-2's map, but `ç`
    leads a three-byte character and takes two. SmolLM2 looping `konumun çıkarılığında` 33
    times is a loop, not noise; a real byte-level leak of Japanese stays garbled."""
    out = _later_output("ocb048-tr-email-r1")["output"]
    assert validate(out).failures == ["repetition"]
    assert validate("Zadanie: poprawić błędy w żądaniach i ścieżkach. Türkçe çıktı: ığdır, çığlık, açıklık; "
                    "çıkış kodu 0, dağıtım tamamlandı.").valid
    leak = _gpt2_bytes("設定ファイルを読み込めませんでした。再起動してください。") * 2
    assert "garbled" in validate("Summary: " + leak).failures


def test_a_short_summary_that_repeats_one_line_many_times_then_goes_on_is_a_loop():
    """SmolLM2 given Dutch notes wrote `- ook-l, ook-l` 18 times under a heading, then the
    next heading, in under 512 bytes; four quoted log lines that differ in their times are not."""
    out = _later_output("ocb089-nl-notes-r0")["output"]
    assert len(out.encode()) < 512 and "repetition" in validate(out).failures
    log = "".join(f"- 10:0{i}:31 POST /hooks/github -> 503 Service Unavailable\n" for i in range(4))
    assert validate("Webhook deliveries:\n" + log + "The receiver was cold-starting; min instances now 1.").valid


def test_a_json_logs_keys_and_levels_do_not_make_its_language_english():
    """A Japanese JSON log (`"level": "info", "svc": "compactor", "msg": "…"`) is Japanese: its
    keys and one-word values are the format. SmolLM2's English summary of one is drift; a
    Japanese summary of it is not."""
    out = _later_output("ocb024-ja-json-log-r0")
    hist = next(json.loads(x)["text"] for x in open(REAL / "openclaw_histories.jsonl", encoding="utf-8")
                if json.loads(x)["id"] == out["history"])
    assert "language_drift" in validate(out["output"], input=hist).failures
    ja = "ログによると、compactor の処理中に設定ファイルの読み込みに失敗し、gateway が再試行を繰り返していました。"
    assert "language_drift" not in validate(ja, input=hist).failures


def _real(path, ident, key="output"):
    rows = {r["id"]: r for r in map(json.loads, open(Path(__file__).parent / "corpus" / "real" / path, encoding="utf-8"))}
    return rows[ident]


def test_the_lexicon_knows_words_and_not_word_salad():
    from compaction_guard.detectors import lexicon
    for lang, words in {"en": ["summary", "repository", "deployment"], "de": ["Zusammenfassung", "Datei"],
                        "pl": ["wyjście", "plik"], "ar": ["المستند", "الملف"], "hi": ["अनुभाग", "फ़ाइल"],
                        "tr": ["İstanbul", "DOSYA"], "ru": ["файл", "Сообщение"]}.items():
        for w in words:
            assert lexicon.normalize(w, lang) in lexicon.lexicon(lang), (lang, w)
    # words of the real word salads (model outputs read by hand: tests/corpus/real/model_review.yaml)
    for lang, words in {"pl": ["zaloguły", "rządzenkij", "wybąwajak"], "hi": ["मांचैका", "आईलच्या"],
                        "ar": ["للصناطف", "التيخشتها"], "uk": ["нахідкуете", "опціальное"]}.items():
        assert sum(lexicon.normalize(w, lang) in lexicon.lexicon(lang) for w in words) == 0, (lang, words)
    assert lexicon.lexicon("zh") is None and lexicon.lexicon("xx") is None
    assert lexicon.lexicon("no") is lexicon.lexicon("nb")            # fastText's code, wordfreq's list
    # names in code are not words
    assert list(lexicon.plain_words("kenji on lib/SessionControllerImpl#1 -Iglobal `x` file.txt and the user's notes")) \
        == ["kenji", "and", "the", "user", "notes"]


def test_word_salad_in_the_history_s_letters_is_ungrounded_and_real_words_are_not():
    from compaction_guard.detectors import grounding, overlap
    from compaction_guard.settings import DEFAULT
    hist = {h["id"]: h["text"] for h in map(json.loads, open(Path(__file__).parent / "corpus" / "real" /
                                                              "openclaw_histories.jsonl", encoding="utf-8"))}
    for ident in ("oc027-pl-chat-r1", "oc070-hi-chat-r1"):
        out = _real("model_openclaw.jsonl", ident)
        r = validate(out["output"], input=hist[out["history"]])
        assert "ungrounded" in r.failures and "word salad" in r.reasons["ungrounded"], ident
        f = next(f for f in r.findings if f.kind == "ungrounded")
        assert f.figures["salad_lower_bound"] >= DEFAULT.ungrounded_salad_min_unknown
    # a real overview of its own page, in Hungarian (wordfreq's smaller list), shares a fifth of
    # its words with the page and is made of words: grounded
    page = _real("grounding.jsonl", "gr-hu-unexpand.1")
    assert validate(page["summary"], input=page["input"]).valid
    odd = grounding.salad(page["summary"], overlap.InputView(page["input"]), DEFAULT)
    low = 1 - grounding.upper_bound(1 - odd[0] / odd[1], odd[1], DEFAULT.ungrounded_confidence_z)
    assert low < DEFAULT.ungrounded_salad_min_unknown


def test_a_short_hash_and_a_pull_request_written_out_keep_their_identifiers():
    hist = ("user: the deploy of api v2.14.3 failed on prod-eu-1, ticket SUP-77410\n"
            "assistant: rolled back with `kubectl rollout undo deploy/api -n prod`; opened PR #4512 (commit 9f8e7d6a)\n"
            "user: also email ops@example.com with the timeline; keep PR #4512 and 9f8e7d6a in mind")
    kept = "Rolled back deploy/api; pull request 4512 (commit 9f8e7d6) is open. Ticket SUP-77410; ops@example.com has the timeline."
    assert validate(kept, input=hist).fidelity["identifier_retention"] == 1.0
    dropped = "Rolled back deploy/api; a pull request is open. Ticket SUP-77410; ops@example.com has the timeline."
    assert validate(dropped, input=hist).fidelity["identifier_retention"] < 0.7
    # a 6-character prefix is not git's short form; another hash is another commit
    assert validate(kept.replace("9f8e7d6", "9f8e7d"), input=hist).fidelity["identifier_retention"] < 1.0
    assert validate(kept.replace("9f8e7d6", "9f8e7d7"), input=hist).fidelity["identifier_retention"] < 1.0


def test_a_table_of_rows_with_new_numbers_is_data_and_a_counted_row_is_a_loop():
    table = ("## Status\nLatency check after the rollback:\n\n| host | status | p95 |\n|---|---|---|\n"
             + "\n".join(f"| web-{i} | ok | {ms} ms |" for i, ms in enumerate((112, 98, 105, 121, 99, 117), 1)))
    r = validate(table)
    assert r.valid and not r.warnings
    # cut inside a row (max_tokens), it is read as the loop it may be
    assert kinds(table + "\n| web-7 | ok | 1") == ["repetition"]
    # a real loop (openclaw ocb066-tr-notes-r0): the same sentence with a counter
    assert kinds("1. This is a great document.\n" + "\n".join(f"{i}. This is a very good document." for i in range(2, 6))) \
        == ["repetition"]
    # a row whose only changing number comes back (a real gemma loop's `exit 0 (692 ms)` twice) is a loop
    rows = "\n".join(f"assistant: run-with-cli (option {i})\ntool: exit 0 ({ms} ms)" for i, ms in
                     enumerate((458, 692, 692, 721), 3))
    assert kinds("Log:\n" + rows) == ["repetition"]
    # 32 rows or more with new numbers: a model writing new numbers runs on past a table's length
    rng = __import__("random").Random(4)
    long = "\n".join(f"| web-{i} | ok | {rng.randrange(80, 400)} ms |" for i in range(1, 41))
    assert kinds("| host | status | p95 |\n|---|---|---|\n" + long) == ["repetition"]
    assert validate("| host | status | p95 |\n|---|---|---|\n" + "\n".join(long.splitlines()[:20])).valid


def test_figures_a_summary_computes_from_its_history_are_not_invented():
    """A trading journal's summary: its week's total, a day's sum, an average and a win rate are
    computed from the history's figures; a latency the history never gave is still invented."""
    from compaction_guard import validate
    hist = ("user: Mon: trade 1 +120 USD +2.5%, trade 2 -40 USD -0.8%, trade 3 +60 USD +1.2%\n"
            "user: Tue: trade 4 +30 USD +0.6%, trade 5 -90 USD -1.8%\n"
            "user: 3 wins out of 5 trades this week\n"
            "assistant: noted the latencies of the broker API: 120 ms, 80 ms, 100 ms")
    ok_ = validate("Week: +1.7% over 5 trades, win rate 60% (3 of 5); Monday +2.9%; mean broker latency 100 ms, "
                   "300 ms in all.", input=hist)
    assert ok_.valid and not any(w.startswith("invented") for w in ok_.warnings), ok_.warnings
    bad = validate("Week: +1.7% over 5 trades; broker latency 533 ms, then 558 ms and 612 ms at the close.",
                   input=hist)
    assert any(w.startswith("invented_identifiers") and "533 ms" in w for w in bad.warnings), bad.warnings


def test_differences_and_list_units_are_derived_and_a_value_nobody_gave_is_an_invented_ask():
    """How far a budget overshoots (62 s against 45 s: 17 s) and a figure of a list whose last number
    carries the unit (`2, 4, 8 and 16 s`) are derived, not invented; a code name of the history given a
    value the history never gives it is a request nobody made: warned `invented_ask` (issue 58)."""
    from compaction_guard import validate
    hist = ("user: the sync job syncJob.timeoutSeconds is 45 and the run took 62 s\n"
            "assistant: the retries waited 2, 4, 8 and 16 s; MAX_ATTEMPTS = 4\n"
            "user: keep syncJob.timeoutSeconds as it is for now")
    ok_ = validate("The sync run took 62 s, 17 s over the syncJob.timeoutSeconds budget of 45; retries waited "
                   "30 s in all (MAX_ATTEMPTS = 4, the last wait 8 s before 16 s).", input=hist)
    assert ok_.valid and not any(w.startswith(("invented", "cut_off")) for w in ok_.warnings), ok_.warnings
    bad = validate("The sync run took 62 s. The user asked to raise syncJob.timeoutSeconds to 90 and keep "
                   "MAX_ATTEMPTS = 4.", input=hist)
    assert bad.valid and any(w.startswith("invented_ask") and "90" in w for w in bad.warnings), bad.warnings


# ---------------------------------------------------------------- issue #25: saying nothing
PUBLISHED = [json.loads(json.dumps(r)) for r in __import__("yaml").safe_load(
    (Path(__file__).parent / "corpus" / "real" / "published_empty.yaml").read_text(encoding="utf-8"))]


@pytest.mark.parametrize("record", PUBLISHED, ids=[r["id"] for r in PUBLISHED])
def test_every_published_information_free_summary_fails_and_says_what_it_carries(record):
    r = validate(record["text"], input_tokens=record.get("tokens_before"))
    assert "empty" in r.failures
    # the reason says what it carries: its text, or what (little) is left of it
    assert any(w in r.reasons["empty"] for w in ("says", "informative characters", "placeholder", "skeleton", "blank"))


@pytest.mark.parametrize("text", [
    "## Goal\n(none)\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n- (none)\n\n## Next Steps\n"
    "1. Wait for the user's first request",
    "Keine Aufgabe bisher.\n\n## Entscheidungen\nKeine.\n\n## Offene Punkte\nKeine.",
    "## Цель\n(нет)\n\n## Ограничения\n- (нет)\n\n## Прогресс\n- ничего",
    "The conversation was empty; there was nothing to summarize.",
    "## Summary\n\n```",
])
def test_a_summary_of_nothing_in_any_wording_is_empty_over_a_large_history(text):
    r = validate(text, input_tokens=30000)
    assert r.failures == ["empty"], r.reasons
    assert "re-run compaction" in r.reasons["empty"]


@pytest.mark.parametrize("text", [
    "Nothing changed since the last summary: deploy still blocked on ticket OPS-12",
    "## Session 1\n- Set up the repo and CI.\n## Session 2\n- Added the parser and 40 tests.",
    "- **File:** a.py — fixed\n- **File:** b.py — fixed",
    "## Goal\nMigrate billing from PayPal to Stripe.\n\n## Blocked\n- (none)\n\n## Next Steps\n1. Rerun the 3 failed "
    "webhooks for expired cards",
    "Es un error en el espacio de almacenamiento.",
])
def test_a_legitimately_brief_summary_is_not_empty(text):
    assert "empty" not in validate(text, input_tokens=30000).failures


def test_information_free_over_a_tiny_history_is_a_warning():
    r = validate("User greeted me; no task yet.", input_tokens=40)
    assert r.valid and any("information-free" in w for w in r.warnings)


def test_the_request_s_headings_are_the_template_s_words():
    from compaction_guard.detectors import detect_all
    from compaction_guard.contract import Contract
    text = "Velocity notes: not recorded this sprint. Runway figures: not recorded either."
    plain = [f.kind for f in detect_all(text, DEFAULT, output_tokens=20, input_tokens=30000) if f.failure]
    asked = [f.kind for f in detect_all(text, DEFAULT, output_tokens=20, input_tokens=30000,
                                        required=Contract(sections=("Velocity Notes", "Runway Figures")))
             if f.failure]
    assert "empty" not in plain and "empty" in asked


def test_a_meta_statement_about_the_conversation_shares_nothing_of_the_history():
    history = ("user: the nightly build fails on the signing step since the certificate expired\n"
               "assistant: renewed it through the Apple portal and re-ran the pipeline: green\n") * 40
    r = validate("The user asked for a summary of the chat and wants the assistant to keep helping.", input=history)
    assert r.failures == ["empty"] and "none of" not in r.reasons["empty"] or "nowhere" in r.reasons["empty"]
    # a short summary carried forward from the previous one is not "about nothing"
    r = validate("Still blocked on OPS-12 (certificate renewal).", input="user: any news?\nassistant: not yet\n" * 80,
                 previous="Deploy blocked on OPS-12 (certificate renewal).")
    assert "empty" not in r.failures and "ungrounded" not in r.failures



RETRY_HISTORY = ("user: Before release 2.7.1 (ticket PAY-4410) we harden invoice-sync. Read src/billing/retry.py.\n\n"
                 "assistant: retry.py sets MAX_RETRIES = 6 and BACKOFF_MS = 250; invoice_push() waits up to 15.75 s.\n\n"
                 "user: Which timeout does deploy/values-prod.yaml give the job?\n\n"
                 "assistant: jobTimeoutSeconds: 12 in deploy/values-prod.yaml; the 15.75 s budget does not fit.\n\n"
                 "user: Decision: lower MAX_RETRIES to 5, BACKOFF_MS stays 250. Find every place that uses it.\n\n"
                 "assistant: MAX_RETRIES is set in src/billing/retry.py (line 4) and read by tests/test_retry.py "
                 "(test_gives_up_after_max_retries). With 5 attempts the wait is 7.75 s.\n\n"
                 "user: Add it to CHANGELOG.md under 2.7.1 and cite PAY-4410.\n\n"
                 "assistant: CHANGELOG.md updated: 2.7.1 - MAX_RETRIES 6 -> 5 (PAY-4410), total wait 7.75 s < 12 s.\n\n"
                 "user: Run the tests.\n\nassistant: python3 tests/test_retry.py: 3 passed, exit code 0.")


def test_the_summary_described_in_the_prompt_s_words_is_a_placeholder():
    """SmolLM2 answered Claude Code's compaction request with one sentence about the summary it was
    asked for, in the prompt's phrases (#58, claude-code-ja-smollm2): it names none of the history's
    specifics, and its one content word the history also holds (`code`, of `exit code 0`) is there
    by chance. `empty`, named `placeholder`, whatever the history's language; a short summary that
    names the work, even one opening with a heading of the prompt, stays valid."""
    meta = ("This is a detailed summary of the conversation, focusing on the user's explicit requests and intents, "
            "and the key technical concepts and code snippets.")
    r = validate(meta, input=RETRY_HISTORY)
    assert r.failures == ["empty"] and r.findings[0].figures["form"] == "placeholder", r.reasons
    assert "compaction prompt's wording" in r.reasons["empty"] and "PAY-4410" in r.reasons["empty"]
    for good in ("MAX_RETRIES lowered from 6 to 5 in src/billing/retry.py for 2.7.1 (PAY-4410); CHANGELOG.md "
                 "updated, wait 7.75 s under the 12 s job timeout.",
                 "The user's explicit request: lower MAX_RETRIES to 5 in src/billing/retry.py for 2.7.1 (PAY-4410), "
                 "noted in CHANGELOG.md.",
                 "Primary request and intent: harden invoice-sync before the release; the retries were cut to fit "
                 "the job's timeout and the changelog cites the ticket."):
        assert validate(good, input=RETRY_HISTORY).valid, good
    # the real one: an English sentence over a Japanese session half made of English tool output
    path = Path(__file__).parent / "corpus" / "real" / "sessions.jsonl"
    row = next(x for x in map(json.loads, open(path, encoding="utf-8")) if x["id"] == "claude-code-ja-smollm2")
    r = validate(row["summary"], input=row["history"])
    assert r.failures == ["empty"] and r.findings[0].figures["form"] == "placeholder", r.reasons

def test_keyboard_mash_is_garbled_not_another_language():
    mash = ("hjhklllljklllk dsfsaadsdghgdf fdgfhjkll jghfghklll opppppppopiy jhfgfdfd saasdaadfsd lklljkj gjgfghgfsdf "
            "lkhkll iuoppppip pppipiyuo tuyuopp iopp jklllljkh bczcv ljhjkllkljkl terweq aasaaasadf")
    r = validate(mash, input=ENGLISH * 20)
    assert r.failures == ["garbled"] and "no language" in r.reasons["garbled"]
    # a small model's pseudo-Polish reads as Polish: not noise (grounding judges it)
    assert "garbled" not in validate("Wyświetlnie wybrókowi wzgledniąc wzgledomyście wzgledniąc wybrókowi "
                                     "ustalowana wspóelowa Sinacek to to ustalowana", input=ENGLISH * 20).failures


def test_the_shipped_unicode_table_is_what_unicodedata_says_and_reads_as_computed_pages_do():
    """data/unicode.bin (scripts/make_unicode_table.py) is read only under the Unicode version it was
    made from; there it holds what unicodedata says (the pages' scripts, the marks), and script mixing
    finds the same with the shipped pages as with pages computed from unicodedata."""
    import unicodedata
    from compaction_guard.detectors import garbled, lexicon, unicode_data
    assert unicode_data._table() is not None, (
        f"data/unicode.bin was not made under Unicode {unicodedata.unidata_version}: run scripts/make_unicode_table.py")
    assert unicode_data.TABLE_PATH.read_bytes() == unicode_data.build()
    assert unicode_data.marks() == unicode_data._marks_computed()
    mn = set(unicode_data._marks_computed()[0])
    for c in (0x301, 0x903, 0x93F, 0x64B, 0x5B4, 0x3099, 0xFE20, 0x41, 0x627, 0x2000):
        ch = chr(c)
        assert bool(lexicon.WORD_RE.fullmatch(ch)) == (ch.isalpha() or unicodedata.category(ch) in ("Mn", "Mc")), hex(c)
        assert bool(lexicon._MARK_RE.fullmatch(ch)) == (ch in mn), hex(c)
    shipped, computed = garbled._ScriptTable(), garbled._ScriptTable(shipped=False)
    assert shipped.bmp is not None and computed.bmp is None
    pages = [(shipped._page(p), computed._page(p)) for p in range(256)]
    cps = (0x41, 0x416, 0x5D0, 0x627, 0x915, 0x3042, 0x4E2D, 0xAC00, 0x1F600, 0x20000, 0x2000)
    letters = [(shipped[cp], computed[cp]) for cp in cps]
    s_name, c_name = ({v: k for k, v in t.codes.items()} for t in (shipped, computed))
    for p, (a, b) in enumerate(pages):
        assert [a[i] and s_name[chr(0x4E00 + a[i] - 1)] for i in range(256)] == \
               [b[i] and c_name[chr(0x4E00 + b[i] - 1)] for i in range(256)], hex(p)
        assert (p in shipped.beyond, shipped.whole[p]) == (p in computed.beyond, computed.whole[p])
    assert [s_name.get(a, " ") for a, _ in letters] == [c_name.get(b, " ") for _, b in letters]
    # random letters across scripts, and text that only mixes them at names: the same verdicts
    noise = "JЩңわまB嵩ثमご " * 20
    prose = "The deploy of 支付服务 passed; Миграция done, then 決済 was tested again in staging. " * 4
    for text in (noise, prose):
        got = []
        for table in (garbled._ScriptTable(), garbled._ScriptTable(shipped=False)):
            orig, garbled._SCRIPTS = garbled._SCRIPTS, table
            try:
                got.append([(f.kind, f.reason) for f in garbled.script_mixing(text, DEFAULT)])
            finally:
                garbled._SCRIPTS = orig
        assert got[0] == got[1] and bool(got[0]) == (text is noise), got


# a long real history (the openclaw set's English histories, twice: about 7,900 tokens)
def _long_history(lang="en", copies=2):
    rows = [json.loads(x) for x in open(Path(__file__).parent / "corpus" / "real" / "openclaw_histories.jsonl",
                                        encoding="utf-8")]
    return "\n\n".join([r["text"] for r in rows if r["lang"] == lang] * copies)


EVERYDAY_ONLY = ("The user wants help with their work. They asked a question and the assistant answered it; next, keep "
                 "helping with whatever they ask for and check the results together.")


def test_text_sharing_only_everyday_words_with_a_long_history_is_not_its_summary():
    hist = _long_history()
    assert estimate_tokens(hist) >= DEFAULT.ungrounded_specific_min_history_tokens
    r = validate(EVERYDAY_ONLY, input=hist)
    assert r.failures == ["ungrounded"], r.reasons
    assert "shares nothing specific" in r.reasons["ungrounded"] and "'help'" in r.reasons["ungrounded"]


@pytest.mark.parametrize("extra", [
    " The SUP-82841 ticket stays open.",          # one of its identifiers
    " Subnets still to be listed.",                # one rare word of it
])
def test_one_specific_thing_of_the_history_is_enough(extra):
    r = validate(EVERYDAY_ONLY + extra, input=_long_history())
    assert "ungrounded" not in r.failures, r.reasons


def test_a_history_under_the_threshold_is_not_judged_for_specific_content():
    hist = _long_history(copies=1)
    assert estimate_tokens(hist) < DEFAULT.ungrounded_specific_min_history_tokens
    assert "ungrounded" not in validate(EVERYDAY_ONLY, input=hist).failures
    # ... nor one the store says was far larger than what was seen
    r = validate(EVERYDAY_ONLY, input=_long_history(), input_tokens=400_000)
    assert not any("shares nothing specific" in x for x in r.reasons.values()), r.reasons


def test_cjk_without_an_everyday_list_is_not_judged_for_specific_content():
    from compaction_guard.detectors import lexicon
    assert lexicon.everyday("zh") is None
    hist = _long_history("zh", copies=6)
    assert estimate_tokens(hist) >= DEFAULT.ungrounded_specific_min_history_tokens
    r = validate("用户需要帮助。他们问了一个问题，助手回答了。接下来继续帮助用户处理他们的请求，并一起检查结果。", input=hist)
    assert not any("shares nothing specific" in x for x in r.reasons.values()), r.reasons


@pytest.mark.parametrize("text", ["Let me read the notes file.", "I will now check the logs.",
                                  "Voy a revisar los registros.", "Je vais lire le fichier."])
def test_a_few_words_for_thousands_of_tokens_are_not_a_summary(text):
    r = validate(text, input=_long_history())
    assert r.failures == ["empty"], r.reasons


@pytest.mark.parametrize("text", ["Still blocked on OPS-12.", "Deploy blocked, waiting on legal review of the contract."])
def test_a_brief_summary_naming_something_is_kept_over_a_long_history(text):
    assert "empty" not in validate(text, input=_long_history()).failures


def test_a_few_words_over_a_short_history_that_named_things_fail():
    # not by size (751 tokens is not thousands): by what the history named and it dropped (#45)
    r = validate("I will now check the logs.", input=_long_history(copies=1)[:3000])
    assert r.failures == ["empty"] and "SUP-82841" in r.reasons["empty"], r.reasons


def test_a_few_words_over_a_short_history_that_named_nothing_are_a_warning_at_most():
    r = validate("I will now check the logs.", input="user: hi\nassistant: Hello! What shall we do today?")
    assert r.valid, r.reasons


# --- information_left's shortcuts say what the whole reading says ------------------------
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

_PIECES = st.sampled_from(["## Goal", "**Decisions**:", "Open TODOs:", "# 1. Plan", "- none", "None.", "(none)",
                           "the", "deploy", "OPS-12", "billing", "Stripe", "webhook", "retry", "n/a", "  ", "\t",
                           "\n", "\r\n", ":", "**", "#", "<summary>", "</summary>", "部署", "数据库迁移", "完成了",
                           "**问题：**", "Нет", "задачи", "No prior history.", "Summary", "conversation", "v2.3.1",
                           "auth_middleware", "2026-11-02", "x" * 30, "中文" * 40])


def _template_words() -> list:
    from compaction_guard.detectors import empty
    return sorted(u.decode() if isinstance(u, bytes) else u for u in empty.template_units())


# pieces, the compactors' own words, and words of its own: a text holds a few or many content words
_TEMPLATE = st.sampled_from(_template_words())
_WORDS = st.one_of(_PIECES, _PIECES, _TEMPLATE, _TEMPLATE,
                   st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9),
                   st.text(alphabet="数据库迁移完成部署问题", min_size=1, max_size=4))


@hsettings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_WORDS, st.sampled_from([" ", " ", "\n"])), max_size=120).map(
    lambda parts: "".join(w + sep for w, sep in parts)))
def test_label_units_read_line_by_line_are_the_whole_text_scan(text):
    from compaction_guard.detectors import empty
    from compaction_guard.detectors.overlap import units
    expected = set()
    if "<" in text:
        for m in empty._TAG_NAME_RE.finditer(text):
            expected.update(units(m.group(1)))
    for m in empty._LABEL_RE.finditer(text):
        label = m.group(1) or m.group(2) or m.group(3)
        if label and len(label.split()) <= empty._LABEL_WORDS and not empty._DIGIT_RE.search(label):
            expected.update(units(label))
    assert empty._label_units(text) == expected


@hsettings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_WORDS, st.sampled_from([" ", " ", " ", "\n"])), max_size=160).map(
    lambda parts: "".join(w + sep for w, sep in parts)))
def test_information_free_with_its_shortcuts_decides_as_the_whole_reading_does(text):
    """The prefixes read first, the labels' bound and the early returns only save time: the
    verdict is the one the whole text's counts give."""
    from compaction_guard.detectors import empty
    from compaction_guard.reasoning import strip_reasoning
    s = DEFAULT
    _w, _i, n, template = empty.information_left(strip_reasoning(text).text, s, enough=1 << 30)
    share = template / (template + n) if template + n else 1.0
    fires = n <= 1 or (n <= s.empty_info_max_units and share > s.empty_info_min_template_share) \
        or (n <= s.empty_info_echo_max_units and share >= s.empty_info_echo_min_template_share)
    assert bool(empty.information_free(text, s)) == fires


def test_every_other_script_digit_has_a_lead_byte_the_repetition_gate_knows():
    """normalize looks for digits of other scripts only where their UTF-8 lead bytes are: every
    character `\\d` matches besides 0-9, in this interpreter's Unicode, must have one of them."""
    import re
    import sys
    from compaction_guard.detectors import repetition
    from compaction_guard.tokens import OTHER_DIGIT_LEADS
    d = re.compile(r"[^\D0-9]")
    missed = [hex(c) for c in range(0x80, sys.maxunicode + 1)
              if not 0xD800 <= c < 0xE000 and d.match(chr(c))
              and chr(c).encode("utf-8")[0] not in OTHER_DIGIT_LEADS]
    assert not missed
    # those whose lead byte is 0xEF are the full-width ones the gate reads three bytes of
    assert all(repetition._FULLWIDTH_DIGIT_RE.fullmatch(chr(c).encode("utf-8"))
               for c in range(0x80, sys.maxunicode + 1)
               if not 0xD800 <= c < 0xE000 and d.match(chr(c)) and chr(c).encode("utf-8")[0] == 0xEF)
    assert repetition.normalize("٣ ٤ x３") == b"0 0 x0"
    assert repetition.normalize("第３章，见（１２）") == "第0章，见（0）".encode()
    assert repetition.normalize("第3章，见（12）") == "第0章，见（0）".encode()
    assert repetition.normalize("٣ ٤ x३ ３") == b"0 0 x0 0"


def test_normalize_collapses_every_space_str_split_knows():
    """normalize collapses whitespace on the UTF-8 when the text holds no space outside ASCII:
    its two lists must be every character str.split() splits at, in this interpreter's Unicode;
    and on text mixing every kind of space, digit and script it gives the plain definition."""
    import random
    import re
    import sys
    from compaction_guard.detectors import repetition
    spaces = [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()]
    assert [c for c in spaces if c < "\x80"] == [chr(b) for b in repetition._ASCII_SPACES]
    assert all(repetition._OTHER_SPACE_RE.fullmatch(c) for c in spaces if c >= "\x80")
    assert not any(repetition._OTHER_SPACE_RE.fullmatch(chr(c)) for c in range(0x80, 0x3001) if not chr(c).isspace())
    rnd = random.Random(7)
    alphabet = spaces + list("0123456789\u0663\u0967\uff13\U0001d7d9ab\u00e9\u4e2d\u00df\U0001f600\ud800") + ["00", "  "]
    for _ in range(3000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30)))
        plain = " ".join(re.sub(r"\d+", "0", text).split()).encode("utf-8", "surrogatepass")
        assert repetition.normalize(text) == plain, text
        assert repetition.normalize(text, mask_digits=False) == " ".join(text.split()).encode("utf-8", "surrogatepass")


@hsettings(max_examples=500, deadline=None)
@given(st.text(alphabet=[chr(c) for c in range(128)], max_size=60))
def test_class_switch_rate_read_in_c_is_the_per_character_one(tok):
    from compaction_guard.detectors import garbled
    assert garbled._class_switch_rate(tok) == garbled._class_switch_rate_slow(tok)


@hsettings(max_examples=500, deadline=None)
@given(st.text(alphabet="aZ09+/=_-.,!\n " + "bcXY17", max_size=300))
def test_base64_runs_read_off_bytes_are_the_candidate_pattern_s_matches(text):
    from compaction_guard.detectors import garbled
    runs = garbled._base64_runs(text.encode().translate(garbled._BASE64_MAP))
    assert runs == [m.span() for m in garbled.BASE64_CANDIDATE_RE.finditer(text)]


def test_suspect_classes_searched_without_their_astral_part_miss_no_character():
    """garbled's gates search each class without its rare astral characters, and those apart
    (_rare_astral): together they are the whole class, for every code point."""
    import re
    import sys
    from compaction_guard.detectors import garbled
    rare = re.compile(f"[{garbled._RARE_BMP}{garbled._RARE_ASTRAL}]")
    whole = {
        garbled._SUSPECT_RE: re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\u0143\u2581\ufffd{rare.pattern[1:-1]}]"),
        garbled._ODD_CHAR_RE: re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u0100-\u0143\u2581\ufffd{rare.pattern[1:-1]}]"),
        garbled._NOISE_CHAR_RE: re.compile("[" + garbled.CONTROL_RE.pattern[1:-1] + rare.pattern[1:-1]
                                           + garbled._PIECE_CHAR_RE.pattern[1:-1] + "\ufffd]"),
    }
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c < 0xE000:
            continue
        ch = chr(c)
        astral = garbled._rare_astral(ch, ch.encode("utf-8"))
        assert astral == (c > 0xFFFF and rare.match(ch) is not None)
        for gate, cls in whole.items():
            assert (gate.match(ch) is not None or astral) == (cls.match(ch) is not None), hex(c)


_SOME_TEXT = st.one_of(st.text(alphabet=[chr(c) for c in range(128)], max_size=700),
                      st.text(alphabet="ab ;{}<>,*`\n!é€中\u0100\uffff", max_size=700),
                      st.text(max_size=300),
                      st.text(alphabet="a ;{}<>`!\U0001f600\U0001d7d9\ud800\udfff中é", max_size=300))


@hsettings(max_examples=800, deadline=None)
@given(_SOME_TEXT, st.sampled_from([1, 3, 64, 128]), st.sampled_from([0, 1, 6]))
def test_inner_symbols_counted_on_bytes_are_the_pattern_s_matches(text, half, least):
    """ASCII text and text of any other characters (astral ones and lone surrogates included),
    each character one byte once the UTF-8's continuation bytes are deleted."""
    from compaction_guard.detectors import garbled
    count = garbled.INNER_SYMBOL_RE.findall
    hits = [len(count(text, s, s + half + 1)) for s in range(0, len(text), half)]
    raw = text.encode("utf-8", "surrogatepass")
    assert garbled._inner_symbols(text, half, raw, least) == (hits if sum(hits) >= least else [])


@hsettings(max_examples=800, deadline=None)
@given(st.text(alphabet="ab 1ó\u00c2\u00c3\u00e0\u00ef\u00f0\u00f4\u00a1\u00ac\u00ad\u00ae\u00bf\u0122\u0143\u0144\u0100"
                        "łąé€™\u00a0\u00ff\u2122", max_size=60))
def test_garbled_utf8_gates_see_what_the_text_patterns_see(text):
    """BPE_BYTES_UTF8_RE finds BPE_BYTES_RE's matches in the UTF-8, and no Latin-1 pair stands
    where _latin1_then_wide says none can."""
    from compaction_guard.detectors import garbled
    raw = text.encode("utf-8")
    assert [m.group().decode() for m in garbled.BPE_BYTES_UTF8_RE.finditer(raw)] == \
        [m.group() for m in garbled.BPE_BYTES_RE.finditer(text)]
    if garbled._LATIN1_PAIR_RE.search(text):
        assert garbled._latin1_then_wide(raw)


@hsettings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab 12 ٣x\t3,", max_size=40), st.sampled_from([1, 2, 3]))
def test_cutoff_head_masks_the_first_words_as_the_whole_line_masked(line, words):
    import re
    from compaction_guard.detectors import cutoff
    assert cutoff._head(line, words) == " ".join(re.sub(r"\d+", "0", line).split()[:words])


def test_a_batch_gets_each_summary_s_own_verdict():
    """detect_many runs each detector for the whole batch before the next one: every summary's
    findings (and fidelity figures) are what detect_all gives it alone, in the batch's order,
    whatever path each one takes (empty, a loop, noise, a request's contract, an input)."""
    import sys
    from compaction_guard.contract import Contract
    from compaction_guard.detectors import detect_all, detect_many
    sys.path.insert(0, str(Path(__file__).parent / "corpus"))
    import evaluate
    items = evaluate.all_items()[::9]
    assert len(items) > 300 and len({it.set for it in items}) > 10
    required = Contract(sections=("Decisions", "Open TODOs"))
    calls, alone = [], []
    for k, it in enumerate(items):
        kw = dict(output_tokens=estimate_tokens(it.content), input_tokens=estimate_tokens(it.input_text or "") or None,
                  input_text=it.input_text, required=required if k % 5 == 0 else None)
        calls.append((it.content, DEFAULT, dict(kw, measures={})))
        measures = {}
        alone.append((detect_all(it.content, DEFAULT, measures=measures, **kw), measures))
    together = detect_many(calls)
    assert [[(f.kind, f.failure, f.reason, f.figures) for f in fs] for fs in together] == \
        [[(f.kind, f.failure, f.reason, f.figures) for f in fs] for fs, _ in alone]
    assert [c[2]["measures"] for c in calls] == [m for _, m in alone]
    assert sum(1 for fs in together if any(f.failure for f in fs)) > 50


def test_records_are_checked_in_bounded_batches_and_a_failing_store_keeps_what_it_yielded(monkeypatch):
    from compaction_guard import SummaryRecord, check
    monkeypatch.setattr(check, "BATCH", 4)
    monkeypatch.setattr(check, "BATCH_CHARS", 1000)
    small = [SummaryRecord(f"s{i}", f"Deployed build {i} to staging; the smoke tests passed.", "t") for i in range(10)]
    assert [len(b) for b in check._batches(small)] == [4, 4, 2]
    big = [SummaryRecord(f"b{i}", "word " * 120, "t") for i in range(3)]      # 600 characters each
    assert [len(b) for b in check._batches(big)] == [2, 1]

    def failing():
        yield from small[:6]
        raise OSError("store went away")
    seen = []
    with pytest.raises(OSError, match="went away"):
        for r in check.iter_results(failing(), DEFAULT, workers=1):
            seen.append(r.id)
    assert seen == [r.id for r in small[:6]]


def test_fence_lines_are_counted_as_the_pattern_counts_them():
    import random
    from compaction_guard.detectors import cutoff
    rng = random.Random(3)
    pieces = ["`", "```", "~~~", "~", " ", "\n", "\t", "\r", "\u3000", "\x1c", "a", "````", "\u2028", "\x85"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 14))) for _ in range(20000)]
    texts += ["intro\n\n```py\nx = 1\n```\n", "  ~~~\ncode", "text ``` inline\n```"]
    assert [cutoff._fences(t) for t in texts] == [len(cutoff._FENCE_RE.findall(t)) for t in texts]


@hsettings(max_examples=2000, deadline=None)
@given(st.text(alphabet=".!?。！？…؟।\"'”’»)]）」』*_`a z\u3002-", max_size=12))
def test_a_closed_line_is_read_from_its_end_as_the_pattern_reads_it(line):
    import re
    from compaction_guard.detectors import cutoff
    line = line.strip()
    pattern = re.compile(r"[.!?。！？…؟।](?:[\"'”’»)\]）」』*_`]*)$")      # what cutoff read before
    assert cutoff._closed(line) == (pattern.search(line) is not None)


@hsettings(max_examples=3000, deadline=None)
@given(st.text(alphabet="ab. \n\t7_-Éщ日の한，—\u2000\u3000«»x", min_size=65, max_size=140), st.sampled_from([64, 100, 139]))
def test_the_cut_between_units_is_the_one_a_character_by_character_search_finds(text, g):
    from compaction_guard.detectors import empty
    if len(text) <= g:
        return

    def breaks(c):
        return c in empty._ASCII_BREAKS if c.isascii() else bool(empty._CJK_CHAR_RE.match(c) or
                                                                   empty.WIDE_PUNCT_RE.match(c))
    want = next((i for i in range(g, max(0, g - 64), -1) if breaks(text[i - 1]) or breaks(text[i])), 0)
    assert empty._between_units(text, g) == want


def test_headings_and_skeletons_are_read_line_by_line_as_splitlines_reads_them():
    """_headings_only and _is_skeleton read lines one at a time (a pattern of runs between line
    breaks): the same answers as over str.splitlines, every line break it knows included."""
    import random
    from compaction_guard.detectors import empty
    rng = random.Random(11)
    pieces = ["## Decisions", "# Goal", "**Summary:**", "Open TODOs:", "None captured.", "- none", "(none)", "Нет",
              "Deployed v2 to staging", "### 1.1", " ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85",
              "\u2028", "\u2029", "\n\n", "#", "**", ":", "x"]

    def headings_only(text):
        if len(text) > 400:
            return False
        lines = text.splitlines()
        first = next((ln for ln in lines if ln.strip()), "").strip()
        if not empty._may_be_label(first) or not empty._LABEL_LINE_RE.match(first):
            return False
        lines = [ln.strip() for ln in lines if ln.strip()]
        if not lines or not all(empty._may_be_label(ln) and empty._LABEL_LINE_RE.match(ln) for ln in lines):
            return False
        return len({empty._DIGITS_RUN_RE.sub("0", ln) for ln in lines}) == len(lines)

    def is_skeleton(text):
        if len(text) > 3000 or ("#" not in text and "**" not in text):
            return False
        headings = body = 0
        for ln in text.splitlines():
            core = ln.strip()
            if not core:
                continue
            if empty._may_be_skeleton_body(core) and empty.SKELETON_BODY_RE.match(ln):
                body += 1
            elif empty._may_be_label(core) and empty.HEADING_RE.match(ln):
                headings += 1
            else:
                return False
        return headings > 0 and body > 0 and headings + body <= 40
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12))) for _ in range(30000)]
    texts += ["## Decisions\nNone captured.\n## Open TODOs\n- none", "## Goal\r\n\r\n**Next:**", "Goal:\u2028Plan:"]
    assert [empty._headings_only(t) for t in texts] == [headings_only(t) for t in texts]
    assert [empty._is_skeleton(t) for t in texts] == [is_skeleton(t) for t in texts]
    assert sum(map(empty._headings_only, texts)) > 100 and sum(map(empty._is_skeleton, texts)) > 100


def test_information_left_s_prefixes_end_between_units_and_decide_as_the_whole_text(monkeypatch):
    import random
    from compaction_guard.detectors import empty, overlap
    rng = random.Random(5)
    pieces = ["word", "Wört", "слово", "日本語", "の", "한국어", " ", "\n", "，", "—", ".", "7", "é", "\u2000", "x_y", "Ω"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 160))) for _ in range(3000)]
    for t in texts:
        for g in (64, 160, 320):
            if len(t) > g:
                c = empty._between_units(t, g)
                assert c <= g and set(overlap.units(t[:c])) <= set(overlap.units(t)), (t, g)
    verdicts = [empty.information_free(t, DEFAULT) for t in texts]
    for name in ("_GATES", "_OTHER_GATES", "_CJK_GATES"):
        monkeypatch.setattr(empty, name, ())
    whole = [empty.information_free(t, DEFAULT) for t in texts]
    assert [[(f.kind, f.reason) for f in v] for v in verdicts] == [[(f.kind, f.reason) for f in v] for v in whole]
    assert any(verdicts) and not all(verdicts)


def test_the_byte_gate_for_runs_of_numbers_holds_wherever_the_pattern_matches():
    import random
    from compaction_guard.detectors import garbled
    rng = random.Random(9)
    pieces = ["1", "23", "٣", "४५", "７", " ", ",", "\t", "a", ".", "é", "\n", "123456", "1234567", "𝟙", "᠑",
              "слово", "中文", "꘡", "한"]
    for n in (3, 4, 32):
        pattern, gate = garbled._token_id_re(n), garbled._numbers_run_re(n)
        hits = 0
        for _ in range(60000 if n < 32 else 2000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4 * n)))
            if pattern.search(text):
                hits += 1
                ends = garbled._number_ends(text.encode("utf-8", "surrogatepass"))
                assert gate.search(ends) and ends.count(b"0 ") >= n - 1, text
        assert hits > 20 or n == 32


def _agent_row(row_id: str) -> dict:
    path = Path(__file__).parent / "corpus" / "real" / "agents.jsonl"
    return next(r for r in map(json.loads, open(path, encoding="utf-8")) if r["id"] == row_id)


def test_a_template_whose_tags_hold_nothing_is_empty():
    """Gemini CLI 0.61 stored its <state_snapshot> with all seven sections empty (#45): `empty`,
    naming the tags, not `ungrounded` (its tag names are not a subject)."""
    row = _agent_row("gemini-skeleton-auto")
    r = validate(row["summary"], input=row["history"])
    assert r.failures == ["empty"] and "<overall_goal>" in r.reasons["empty"], r.reasons
    # a tag that holds a line is content
    filled = row["summary"].replace("<overall_goal>\n", "<overall_goal>\n        Keep OPS-4411 in mind.\n", 1)
    assert "empty" not in validate(filled, input=row["history"]).failures


def test_a_summary_naming_its_own_things_and_none_of_the_history_s_is_ungrounded():
    """Gemini CLI stored its own compression prompt, examples and all, as the summary (#45):
    its 3 identifiers are the prompt's, it keeps none of the history's 32, and 28% of its words
    occur in the history; its phrases are the prompt's: `empty`, named `echo` (#58). The good
    summary of the same history is valid."""
    row = _agent_row("gemini-echo-auto")
    r = validate(row["summary"], input=row["history"])
    # it is Gemini CLI's own prompt, phrase for phrase: named so (issue 58)
    assert r.failures == ["empty"] and r.findings[0].figures["form"] == "echo", r.reasons
    assert "summarization prompt sent back" in r.reasons["empty"]
    good = _agent_row("gemini-good-long-auto")
    assert validate(good["summary"], input=good["history"]).valid
    # prose that keeps none of the history's identifiers but is made of its words is not
    # about something else (at most a lost_identifiers warning)
    prose = ("The user shared an incident log about failing Cloud Storage writes for the service account and "
             "asked to keep the deploy ticket and the release branch in mind; the retry constant lives in the "
             "deploy retry module.")
    r = validate(prose, input=row["history"])
    assert "ungrounded" not in r.failures, r.reasons


# Error messages of failed compaction calls as their agents showed them (a compactor that stores its summarizer's
# answer unchecked stores these as the summary: s2b-dev/smart-second-brain #435 did, tests/corpus/real/
# published_broken.yaml): openai/codex #18450 and #31742, Wei-Shaw/sub2api #3932, earendil-works/pi #6647,
# github/app #3895; then the shapes SDKs and proxies answer a failed call with.
_CALL_ERRORS = [
    "Error running remote compact task: stream disconnected before completion: error sending request for url "
    "(https://chatgpt.com/backend-api/codex/responses/compact)",
    "Error running remote compact task: Fatal error: remote compaction v2 expected exactly one compaction output item, "
    "got 0 from 1 output items",
    "Error running remote compact task:Stream disconnected before completion: stream closed before response.completed",
    "Compaction failed: Summarization failed: terminated",
    "Compaction failed. background compaction summarizer did not settle within 60s; proceeding without the pending summary",
    "stream error: stream ID 3; INTERNAL_ERROR; received from peer",
    "AI_APICallError: Bad Request",
    "ProviderModelNotFoundError: ProviderModelNotFoundError",
    "unexpected status 401 Unauthorized: Incorrect API key provided",
    "TypeError: Cannot read properties of undefined (reading 'content')\n    at summarize (/app/dist/compact.js:112:31)",
    "[GoogleGenerativeAI Error]: Error fetching from https://generativelanguage.googleapis.com/v1beta/models/"
    "gemini-2.5-pro:generateContent: [503 Service Unavailable] The model is overloaded. Please try again later.",
    "Fehler beim Erstellen der Zusammenfassung: Zeitüberschreitung der Anfrage (504).",
    "要約の生成中にエラーが発生しました: 503 Service Unavailable",
]
_DEPLOY_HISTORY = (
    "user: The deploy to staging fails with ImagePullBackOff on the api pod.\n"
    "assistant: deploy/helm/values-staging.yaml pins image.tag 2.14.0-rc3; the registry only has 2.14.0-rc2.\n"
    "assistant: CI job build-api (pipeline 88213) failed at the push step: token REGISTRY_PUSH expired 2026-11-30.\n"
    "user: Rotate the token and rerun the pipeline; keep replicas at 3.\n"
    "assistant: Rotated REGISTRY_PUSH, reran pipeline 88214; tag 2.14.0-rc3 pushed, api rolled out.\n"
    "user: Worker pods log 'redis timeout after 500ms'; raise it to 2s in config/worker.toml and add a retry.\n"
    "assistant: config/worker.toml: redis.timeout_ms = 2000, redis.retries = 3. Opened PR #4412.\n"
    "user: Wait for Dana's review before merging; deploy to prod on Thursday.\n")


@pytest.mark.parametrize("text", _CALL_ERRORS)
def test_the_message_of_a_failed_call_stored_as_the_summary_fails_as_error_text(text):
    """Whatever words the provider, the SDK or the agent wrote it in: named as error text, with or without
    the history (the operator's fix is the provider, not the prompt)."""
    for history in (None, _DEPLOY_HISTORY):
        r = validate(text, input=history)
        assert [(f.kind, f.figures.get("form")) for f in r.findings if f.failure] == [("empty", "error")], (history, r.findings)


@pytest.mark.parametrize("text", [
    "CI build failed: pinned numpy to 1.26, tests green again.",
    "Fixed TypeError in the api handler: it now checks for None; all 41 tests pass.",
    "The billing handler now retries failed payment webhooks: it updates the billing address first.",
    "The user pasted a JS error: `TypeError: Cannot read properties of undefined (reading 'map')`. Cause: the API "
    "returns null for empty carts. Fixed with a default [] in CartList.",
    "Der Export brach mit einem Fehler bei Umlauten ab: export/report.py schreibt jetzt utf-8-sig, Test ergänzt.",
])
def test_a_short_summary_of_work_on_an_error_is_not_error_text(text):
    """A summary's subject may be an error (its label a sentence, or what was done about it following it)."""
    r = validate(text)
    assert not [f for f in r.findings if f.figures.get("form") == "error"], r.findings


def test_a_preamble_naming_files_of_the_history_is_a_preamble_whatever_it_names():
    """"Let me read a.py and b.py first" names two of the history's specifics: a statement of intent that carries
    nothing of the history's end is no summary however much of its start it names (issue 58, form 3)."""
    history = ("user: Der Export nach CSV bricht bei Umlauten ab, Datei export/report.py Zeile 88.\n"
               "assistant: In export/report.py wird open(path, 'w') ohne encoding benutzt; unter Windows ist das cp1252.\n"
               "user: Bitte auf utf-8-sig umstellen und einen Test in tests/test_export.py ergänzen.\n"
               "assistant: Umgestellt auf encoding='utf-8-sig', Test test_umlaute_im_export hinzugefügt, 41 Tests grün.\n"
               "user: Danach bitte noch die Spalte 'Betrag' mit zwei Nachkommastellen formatieren.\n"
               "assistant: Spalte Betrag formatiert mit f'{x:.2f}', Commit a91c3e2 auf Branch fix/csv-umlaute.\n"
               "user: Den Merge-Request bitte an Jonas zur Prüfung schicken, nicht selbst mergen.\n")
    r = validate("Gut, ich schaue mir zuerst export/report.py und tests/test_export.py an und fasse dann zusammen.",
                 input=history)
    f = next(f for f in r.findings if f.failure)
    assert f.figures.get("form") == "preamble" and set(f.figures["carried"]) == {"export/report.py", "tests/test_export.py"}
    # the same files named in a summary that reaches the history's end: a summary
    r = validate("export/report.py schreibt jetzt utf-8-sig (Test in tests/test_export.py), Betrag mit zwei "
                 "Nachkommastellen; Commit a91c3e2 auf fix/csv-umlaute, der Merge-Request geht an Jonas.", input=history)
    assert r.valid, r.findings
