"""Every threshold the guard uses, in one place.

`Settings()` holds the calibrated defaults; `SEED` holds the values of the original
openclaw-superpowers guard (kept so its signals can be reproduced and compared, see
tests/corpus/evaluate.py). Detectors receive a Settings object and read nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Settings:
    # --- empty -----------------------------------------------------------------
    # Seed: a summary under 10 characters is empty. Measured on "informative
    # characters" (letters and digits; a CJK character counts 3, it carries a word).
    min_summary_chars: int = 10
    # Error text stored as a summary is only believed when the whole text is short.
    max_error_text_chars: int = 4000
    # A refusal is the whole summary only when it is at most this long ...
    max_refusal_chars: int = 600
    # ... an error label alone ("404 Not Found", "Compaction failed: ...") this long ...
    max_generic_error_chars: int = 300
    # ... a placeholder or "the conversation was empty" this long.
    max_placeholder_chars: int = 300
    # An error label or a refusal is a summary after all when the input is known and at
    # least this share of its content words (at least this many) occur in it.
    empty_grounded_share: float = 0.6
    empty_grounded_min_words: int = 4
    # The OpenClaw "No prior history." skeleton is a failure only over real history.
    skeleton_min_input_tokens: int = 20
    # An unfilled template: at least this many lines that are only a bracketed placeholder
    # (`- [what the user is trying to do]`), at least this share of the content lines (the
    # prompt's format echoed, not filled in).
    empty_min_placeholders: int = 3
    empty_placeholder_share: float = 0.5
    # Information left after the structure (detectors/empty.py, information_left): a summary
    # whose distinct content words and identifiers number at most this many carries nothing.
    empty_info_max_units: int = 3
    # ... a failure over a history this large or of unknown size; over a smaller one a warning,
    # unless that history's text is known and held what the summary dropped: at least
    # empty_info_short_min_dropped of its specifics (identifiers, figures, dates, file and code
    # names) none of which the summary carries, or at least empty_info_short_min_words content
    # words (words no language uses often, not the compactors' own) none of which it shares.
    empty_info_min_input_tokens: int = 200
    empty_info_short_min_dropped: int = 1
    empty_info_short_min_words: int = 5
    # ... unless it says more than one thing and no more than this share of its words are the
    # template's (the request's words, the compactors' own, negations): a short summary of the work.
    empty_info_min_template_share: float = 0.5
    # A text that restates the request (the prompt's instructions echoed, a meta-statement about
    # the conversation and its summary): at least this share of its words are the template's,
    # and it carries at most empty_info_echo_max_units content words and identifiers besides.
    empty_info_echo_min_template_share: float = 0.75
    empty_info_echo_max_units: int = 10
    # With the history's text known, a short summary none of whose content words occurs in it
    # carries nothing of it; judged only when that text is at least this share of the tokens
    # the store says were condensed (a window that shows a fraction of the history cannot say).
    empty_info_min_seen_share: float = 0.5
    # ... and text made mostly of the template's words (at least empty_info_min_template_share)
    # of whose other content words and identifiers at most this share occurs in the history
    # is about the conversation or the request, not about what the history holds.
    empty_info_max_history_share: float = 0.34

    # --- inflation -------------------------------------------------------------
    # Seed: summary tokens above input tokens. Ratio of output to input tokens.
    max_inflation_ratio: float = 1.0
    # The agent's own context size after a compaction at or above this share of its size
    # before it (OpenClaw's tokensAfter / tokensBefore) is a failure: the compaction did not
    # shrink the context (seen live: 5 of 10 OpenClaw compactions, 3,097 -> 4,327).
    max_context_after_ratio: float = 1.0
    # Warn (not fail) when a summary kept more than this share of its input.
    warn_compression_ratio: float = 0.9

    # --- garbled ---------------------------------------------------------------
    # Seed: character Shannon entropy above 5.0. Kept as a reported figure and as
    # supporting evidence (see detectors/garbled.py); alone it flags CJK prose.
    max_entropy: float = 5.0
    # Share of non-space characters inside junk tokens that makes a summary garbled.
    garbled_min_share: float = 0.15
    # ... or one contiguous junk region at least this long (a garbage tail).
    garbled_min_run_chars: int = 200
    # Junk below these but at least this many characters is a warning.
    garbled_warn_chars: int = 24
    # Random tokens (base64-like strings, symbol soup, keyboard mash) count in tokens:
    # garbled_min_share of the tokens and at least this many, or a run of this many
    # (one bridging clean token allowed). One such token is an identifier.
    garbled_min_tokens: int = 3
    garbled_min_run_tokens: int = 16
    # A random token up to this long is an identifier (a JWT, an SRI hash, a key);
    # longer, or several back to back, it is an encoded blob, counted in characters.
    garbled_identifier_max_chars: int = 256
    # Random printable ASCII: windows of this many characters where symbols sit inside
    # words (this share of the characters) and the ASCII entropy reaches this many bits.
    garbled_window_chars: int = 256
    garbled_window_min_inner: float = 0.10
    garbled_window_min_entropy: float = 5.45
    # BPE piece characters (Ġ, Ċ, ĉ, ▁) leak before at least this share of the words.
    tokenizer_min_density: float = 0.3
    # U+FFFD replacement characters (bytes lost in decoding) that make a summary garbled
    # (unless the input has them too: then they were quoted).
    garbled_min_replacement_chars: int = 1
    # Text that is no language (keyboard mash), judged where another check would name a
    # language or a subject (drift, ungrounded, information-free): of its first
    # garbled_nonword_max_words words of 3+ letters (at least garbled_nonword_min_words), a
    # share of words in no word list (its language's, English's, the input's) whose lower
    # bound is at least garbled_nonword_min_share, and letters fastText gives no language
    # above garbled_nonword_max_language_probability; or a run of garbled_nonword_min_run such
    # words in a row whose letters read as no language either (mash after real text).
    garbled_nonword_max_words: int = 256
    garbled_nonword_min_words: int = 8
    garbled_nonword_min_share: float = 0.5
    garbled_nonword_max_language_probability: float = 0.4
    garbled_nonword_min_run: int = 10
    # Random characters across scripts ('JЩңわまB嵩ثमご'): of the first garbled_script_sample_chars
    # characters, adjacent letters inside words (at least garbled_script_min_pairs pairs) that
    # change script (Latin, Cyrillic, Arabic, ...; Han, kana and their marks are one) at
    # garbled_script_min_switch_share or more. Measured on real text (human text in 32
    # languages, man pages, three models' outputs, Chinese and Japanese with Latin names
    # inside words): at most 0.26 (a short Korean loop), next 0.17; random letters of two
    # scripts switch at about 0.5, of three at about 0.67.
    garbled_script_sample_chars: int = 4000
    garbled_script_min_pairs: int = 40
    garbled_script_min_switch_share: float = 0.35
    # Mojibake sequences (UTF-8 read as cp1252/latin-1) that make a summary garbled.
    mojibake_min_sequences: int = 3
    # Consecutive integers that read as a dump of token ids (a list of 16 ports is not).
    token_id_run: int = 32

    # --- repetition (detectors/repetition.py: novelty measured by zstd) ---------
    # Digits set aside and whitespace collapsed, the text goes through zstd in blocks
    # of this many bytes; a block adding at most loop_block_max_novelty of its size
    # only copies recent text (the real loops' last blocks measure 0.04 at the median,
    # prose 0.73, 1% of its blocks under 0.18, in the 32 languages of the human text).
    loop_block_bytes: int = 256
    loop_block_max_novelty: float = 0.2
    # The last bytes of the text, where a loop that ran to max_tokens ends, are read
    # for a repeating unit directly.
    loop_tail_bytes: int = 192
    # A stretch that runs to the end (looped until max_tokens) is a loop when its unit
    # of at least loop_min_unit_bytes (the seed's 20-character phrase) stands
    # loop_min_copies times word for word, or loop_min_copies_masked times with only
    # its digits changing; a shorter unit (a word, a CJK character, a separator)
    # loop_min_copies_short times and loop_min_bytes bytes in all.
    loop_min_unit_bytes: int = 20
    loop_min_copies: int = 3
    loop_min_copies_masked: int = 4
    loop_min_copies_short: int = 8
    loop_min_unit_bytes_masked: int = 6
    # ... a shorter one (a bare number: `1.`, `2.`, `3.`) this many times: a count run on.
    loop_min_copies_numbers: int = 32
    # ... and so does a run of one-word names whose numbers neither repeat nor count
    # (`rfc1321.txt rfc1939.txt ...`, `SUP-77410, SUP-77415, ...`: a list of identifiers):
    # at least this share of the steps between one number and the next are distinct.
    loop_list_min_distinct_steps: float = 0.75
    # ... and so do rows that end the text whole, under loop_min_copies_numbers of them, one
    # of whose numbers is new in this share of them with its steps as varied (a table:
    # `| web-1 | ok | 112 ms |`, `| web-2 | ok | 98 ms |`, ...); a loop counts, comes back to
    # its numbers, or runs on to max_tokens and is cut inside a row.
    loop_table_min_distinct: float = 0.9
    # A unit with no letter or digit (a rule, a separator, U+FFFD) only over this many bytes.
    loop_min_bytes_symbols: int = 256
    loop_min_bytes: int = 40
    # No exact unit, but nothing new for this many bytes and this share, to a cut:
    # one template repeated with a word changing (a warning).
    loop_template_min_bytes: int = 256
    loop_template_min_share: float = 0.75
    # ... measured again in finer blocks when the coarse ones find a shorter stretch.
    loop_fine_block_bytes: int = 64
    loop_fine_max_novelty: float = 0.3
    # Copies differing only in digits, at least this share of them lines of the input
    # (list marks aside), were picked from the history: not a loop (input known).
    loop_lines_from_input: float = 0.5
    # Repeats that stop inside the summary: a loop only at this share and copies.
    loop_min_share: float = 0.3
    loop_min_copies_inside: int = 4
    # Longest unit searched for (bytes).
    loop_max_unit_bytes: int = 4096
    # Repeats below a loop but at least this many bytes are a warning.
    loop_warn_bytes: int = 160

    # Contents remembered for staleness; past this the least recently used conversations
    # are forgotten and re-read from their store when met again (bounded memory).
    max_stale_keys: int = 200_000

    # --- cut off (warning, detectors/cutoff.py) -----------------------------------
    # A last line of prose this many words long (twice as many CJK characters) with no
    # closing punctuation, where at least this share of the other prose lines have it.
    cutoff_min_last_words: int = 4
    cutoff_min_closed_share: float = 0.5
    # A last list item of prose cut mid-sentence: nearly all the summary's other items of prose (at
    # least three; `label: value` items aside) close their sentence.
    cutoff_min_item_closed_share: float = 0.8

    # --- what was answered instead of a summary (detectors/answers.py) ----------
    # Reasoning then at most this many characters on two lines, less than this share of the reasoning.
    answer_reasoning_max_chars: int = 300
    answer_reasoning_max_share: float = 0.5
    # A call or data object: no string of more than this many words, at most this many content words.
    answer_call_max_words: int = 12
    answer_call_max_units: int = 20
    # The prompt sent back: this share of its word 5-grams a known prompt's, this many 5-grams or more.
    answer_echo_min_share: float = 0.3
    answer_echo_min_shingles: int = 8
    # ... read in the text's first this many characters (a prompt sent back starts with it)
    answer_echo_max_chars: int = 4000
    # ... and only when one of the 5-grams of its first this many words is a prompt's
    answer_echo_head_words: int = 32
    # A short answer (this many characters, two sentences at most) over a history of this many
    # specifics or more, carrying at most this many of them and this share: a refusal, a note or a
    # preamble; a note when this share of its content words are the compactors' own.
    answer_max_chars: int = 600
    answer_min_history_atoms: int = 8
    answer_max_kept_atoms: int = 2
    answer_max_kept_share: float = 0.15
    # ... and nothing the last answer_late_share of the history brings first (its latest state).
    answer_late_share: float = 0.35
    answer_note_min_template: float = 0.3
    # ... a note too when at least this share of its word 3-grams, this many or more, are a compaction
    # prompt's (data/compaction_prompts.txt): the summary it was asked for described in the prompt's own
    # words. Measured (tests/corpus/evaluate.py): short summaries of a history, at most 0.22 of good ones
    # (0.14 of those that name none of the history's specifics); SmolLM2's "a detailed summary of the
    # conversation, focusing on the user's explicit requests and intents, ..." 0.57 (13 of 23).
    answer_prompt_phrase_min_share: float = 0.4
    answer_prompt_phrase_min: int = 6
    # Without the history: an announcing word opening a text of at most this many characters, naming
    # nothing ("让我继续分析"), is a preamble.
    answer_bare_intent_max_chars: int = 80
    # With the history: a short answer that opens with an announcing word (within this many characters:
    # "Okay, I'll read", "Gut, ich schaue") and carries nothing of the history's end is a preamble, whatever
    # it names of the rest.
    answer_intent_head_chars: int = 24

    # stale (detectors/stale.py): an unchanged summary whose input holds fewer than this many words
    # besides the previous summary says nothing of the turns since: stale, as without a history.
    stale_min_since_words: int = 3

    # --- coverage (detectors/coverage.py) ----------------------------------------
    # A conversation (two speakers or more) of coverage_min_history_chars or more is read turn by
    # turn, each turn counted when it brings coverage_min_turn_features new specifics and content
    # words. The summary fails when, from some counted turn on, coverage_min_late_turns or more
    # counted turns (one of them at least the first speaker's, the user's) bring coverage_min_late or
    # more of them, at least coverage_min_tail of the history, and the summary keeps at most
    # coverage_max_late_kept of what each of them brings (one word a turn by chance aside), while it
    # carries something of coverage_min_early_turns counted turns before and at least
    # coverage_min_early_share of what they bring.
    coverage_min_history_chars: int = 1500
    coverage_min_turn_features: int = 2
    coverage_min_late_turns: int = 4
    coverage_min_early_turns: int = 2
    coverage_min_late: int = 8
    coverage_min_tail: float = 0.25
    coverage_max_late_kept: float = 0.1
    coverage_min_early_share: float = 0.4

    # --- storms (warnings) ------------------------------------------------------
    # More than this many compactions within storm_window_minutes in one session ...
    storm_max_compactions: int = 5
    storm_window_minutes: float = 10.0
    # ... or this many in a row (within the window) whose tokensBefore does not fall.
    storm_run: int = 3

    # language_drift (detectors/language.py): each side needs this many letters (code,
    # paths, identifiers and numbers set aside) and its top language this probability.
    language_min_letters: int = 40
    language_min_confidence: float = 0.6
    # ... and neither side may give the other side's language more than this probability (a
    # history of tool logs gives English ~10%: their scaffolding. Measured 0.05 / 0.1 / 0.25: no
    # false alarm on any good set; 50 / 52 / 52 of 61 drifts found on the real model outputs).
    language_max_cross_probability: float = 0.1
    # ... and a history with a quarter of its words in the summary's language (lines weighed
    # by their letters, a CJK character counting 3) is mixed: a summary in that language is no drift.
    language_min_share_in_input: float = 0.25
    # a summary none of whose lines (at most this share of its words, identified line by line)
    # read as a clearly identified history's language is drift, however unsure the summary's
    # own language is (English prose around code, a mix of English and junk): measured on the
    # real model outputs, 3 such drifts at 0.0; no summary in its history's language under 0.16
    language_drift_max_kept: float = 0.1
    # ... measured over the lines the summary wrote: a line of this many letters and digits or
    # more found in the history is a quotation, in the history's language whatever the summary's
    # (shorter: a heading or a label, kept)
    language_quote_min_chars: int = 16
    # a summary whose words are at least this share words of its input (function words
    # included) is in the input's language: not identified (real cross-language pairs:
    # 0.08 at the 95th percentile, 0.44 at most; summaries of their own history: median 0.78-1.0)
    language_same_overlap: float = 0.7
    # A summary whose loop covers this share or more has no language to judge (its loop
    # says why it failed); under it, the rest is text, and its language is judged.
    language_max_loop_share: float = 0.5
    # Summaries written in one language on purpose (an ISO 639-1 code, e.g. "en"): drift is
    # then measured against it, not the history's. Empty: the history's language.
    summary_language: str = ""

    # A store's input text for a summary (lcm messages, transcript entries) is cut to its
    # last this many characters: the fidelity checks' cost per summary stays bounded.
    max_input_chars: int = 200_000

    # transcript (detectors/transcript.py, a warning): the history's speakers open at least
    # transcript_min_label_lines of its lines with transcript_min_turn_chars characters after
    # them on average; a summary with transcript_min_turns such lines, transcript_min_share
    # of its lines, by transcript_min_speakers speakers or more, is the conversation itself.
    transcript_min_label_lines: int = 2
    transcript_min_turn_chars: int = 12
    transcript_min_turns: int = 3
    transcript_min_share: float = 0.5
    transcript_min_speakers: int = 2
    # ungrounded (detectors/grounding.py): a summary in its input's language with at least
    # ungrounded_min_units content words of which at most this share (identifiers counted)
    # occur in the input. Real overviews of their own manual page: 0.04 at the lowest (one
    # in 333); off-topic same-language text: 36% at 0.03 or under, 60% at 0.1.
    ungrounded_max_support: float = 0.03
    # ... or this share when most of its content units are CJK character pairs (unrelated
    # Chinese/Japanese/Korean texts share more pairs than other scripts share words; real
    # overviews of their own page: 0.20 at the lowest in CJK, off-topic pairs from 0.03).
    ungrounded_max_support_cjk: float = 0.1
    ungrounded_min_units: int = 12
    # ... or when one can be this sure (z of a one-sided normal bound:
    # 2.33 is 99%) that under this share of its distinct content words come from the input:
    # the Wilson upper bound of the share found, from how many were judged (a long summary's
    # 12% says more than a short one's). Real overviews of their own page: bound 0.255 at the
    # lowest (Finnish, 23 words, 4% found); off-topic same-language excerpts 376 of 736 under 0.2.
    ungrounded_confident_below: float = 0.2
    # ... CJK character pairs: own-page overviews bound at 0.345 at the lowest (61, all long),
    # off-topic pairs 73 of 161 at 0.25 or under
    ungrounded_confident_below_cjk: float = 0.25
    ungrounded_confidence_z: float = 2.33
    # ... or, in a check of a store (not a lone summary), when at most this share of its
    # distinct content units, each weighted by how rarely the store's inputs use it (inverse
    # document frequency over the first ungrounded_background_inputs inputs, when there are
    # ungrounded_background_min_inputs or more), occur in its input: the genre's words
    # every input shares weigh little (tests/corpus/measure_store_idf.py).
    ungrounded_max_weighted_support: float = 0.03
    ungrounded_background_inputs: int = 256
    ungrounded_background_min_inputs: int = 16
    # Word salad: a summary sharing at most ungrounded_salad_max_support with its input,
    # of whose words (3+ letters; the first ungrounded_salad_max_words) one can be sure
    # (ungrounded_confidence_z) that over ungrounded_salad_min_unknown are neither in the
    # input nor words of its language, its input's or English (detectors/lexicon.py). Real
    # text reaches 0.244 at the most (tests/corpus/evaluate.py: an overview listing its
    # commands, then Tamil, whose list is among the smallest); the model's word salads
    # 0.3 to 0.9.
    ungrounded_salad_max_support: float = 0.5
    ungrounded_salad_min_unknown: float = 0.3
    ungrounded_salad_max_words: int = 512
    # A history of at least this many tokens (the text seen) summarized by
    # ungrounded_specific_min_units distinct content words or more, none of those it shares
    # with the history a rare word (not an everyday word, Zipf 4) or an identifier: not a
    # summary of it. Real overviews of their own manual page that share no rare word with it:
    # up to 1,162 tokens (set grounding).
    ungrounded_specific_min_history_tokens: int = 4000
    ungrounded_specific_min_units: int = 6
    # Names of its own and none of the history's: every one of the summary's identifiers
    # (this many or more) occurs nowhere in the history, it keeps none of the history's key
    # identifiers (this many or more), and at most this share of its content words occur in
    # it (a prompt echoed with its examples: 28%). Good summaries of histories with 10 or more
    # key identifiers in the evaluation keep some (98 of them; the lowest 0% kept, 100% of
    # its words in the history).
    ungrounded_other_min_identifiers: int = 2
    ungrounded_other_min_key: int = 10
    ungrounded_other_max_support: float = 0.5

    # invented_identifiers / lost_identifiers (warnings, detectors/identifiers.py): this many
    # of the summary's identifiers found nowhere in the input; an input with this many
    # identifiers whose summary keeps under this weighted share of them.
    identifiers_min_invented: int = 2
    # ... a failure from this many invented identifiers, when they are at least this share of
    # the summary's identifiers (real overviews of their own page: 2 at most).
    identifiers_fail_invented: int = 5
    identifiers_fail_invented_share: float = 0.5
    identifiers_min_input: int = 5
    identifiers_min_retention: float = 0.1
    # An identifier not in the other text's identifier index is searched for in its whole
    # text (inside a longer token) at most this many times per summary: cost stays linear.
    identifiers_max_searches: int = 64
    # invented_ask (a warning, detectors/identifiers.py): a code name of the history given a number
    # at most this many characters after it in the summary that the history, reading up to the
    # second width after the name (it may say more between: `be lowered to`), never gives it.
    invented_ask_summary_gap: int = 12
    invented_ask_history_gap: int = 40

    # context_pressure: a session holding this share of its context window (sessions.json)
    # whose last compaction failed; the last verdict of at most max_sessions_kept sessions is kept.
    context_pressure_share: float = 0.90
    max_sessions_kept: int = 500

    # --- chain -----------------------------------------------------------------
    # L1 and L2 target sizes as a share of the input's tokens, with caps.
    l1_target_ratio: float = 0.25
    l1_max_tokens: int = 2000
    l2_target_ratio: float = 0.10
    l2_max_tokens: int = 800
    # LLM levels: L1 sets a temperature; L2 is at most 0.2 and below L1's.
    l1_temperature: float = 0.3
    l2_temperature: float = 0.1
    # L2 after L1 looped keeps L1's temperature (a colder model loops more: with the local
    # model, L2 at 0.1 looped in 80% of replies) and adds repetition penalties: OpenAI's
    # frequency/presence penalties, llama.cpp's repeat_penalty (looped in 12% with these).
    l2_frequency_penalty: float = 0.8
    l2_presence_penalty: float = 0.4
    l2_repeat_penalty: float = 1.3
    # L2 after L1 was cut off or too large asks for this share of its usual target.
    l2_cut_target_scale: float = 0.5
    # serve: request bodies over this are refused (413). OpenClaw's real compaction requests
    # (tests/data/openclaw-live) take 4.3-4.6 bytes of JSON per estimated token: a request
    # filling a 1M-token context window is about 4.6 MB; 6 MB leaves room beyond it.
    serve_max_body_bytes: int = 6 << 20
    # ... a streamed request waiting on the upstream and the checks gets an SSE keep-alive
    # line this often.
    serve_keepalive_seconds: float = 5.0
    # ... the request's headers must arrive within this, its body within the next (408:
    # a client sending a byte every few seconds holds nothing open for long).
    serve_header_timeout_seconds: float = 10.0
    serve_body_timeout_seconds: float = 30.0
    # ... at most this many compactions at once (the others wait their turn), and this many
    # waiting; beyond, 429 with Retry-After.
    serve_max_concurrent: int = 8
    serve_max_queued: int = 56
    serve_retry_after_seconds: int = 5
    # ... JSON nested deeper than this is refused (400); the upstream's answer is read up to
    # this many bytes (a larger one is an upstream failure).
    serve_max_json_depth: int = 64
    serve_max_upstream_bytes: int = 8 << 20
    # ... parsing and the state in this many threads, the checks and L3 in this many worker
    # processes (0: in the threads), off the event loop: /healthz answers while large
    # compactions are checked (benchmarks/bench_serve_load.py).
    serve_check_threads: int = 2
    serve_check_processes: int = 2
    # ... /healthz reports the state this guard last read or wrote when it is younger than
    # this (no file read, no thread: it answers under load); older, it reads it again.
    serve_health_state_max_age_seconds: float = 5.0
    # ... a request body of this many bytes or more is parsed and read in a worker process,
    # and sent upstream as JSON made there (json and regexes over megabytes hold the
    # interpreter lock: in a thread they stall /healthz).
    serve_process_body_bytes: int = 1 << 20
    # ... on SIGTERM, compactions in flight stop waiting on the upstream and answer at L3;
    # the server is down within this (systemd's default stop timeout is 90 s).
    serve_shutdown_seconds: float = 20.0
    # ... the C allocator (glibc) keeps this much freed memory for the next request, and serves
    # blocks under it from its heap, instead of handing every large block back and faulting it in
    # again: a relayed 1 MB turn cost 2.7-3.0 ms of CPU here, 1.7-2.2 ms with it (benchmarks/
    # bench_relay.py); 0 leaves the allocator as it is.
    serve_heap_keep_bytes: int = 16 << 20
    # serve as a relay (`serve --agent claude-code`): request bodies over this are refused (413;
    # the Anthropic API's own limit is 32 MB); the upstream must connect within the first and
    # send its next bytes within the second (Claude Code's client waits 600 s: x-stainless-timeout).
    relay_max_body_bytes: int = 32 << 20
    relay_connect_timeout_seconds: float = 10.0
    relay_read_timeout_seconds: float = 600.0
    # ... at most this many connections to the upstream (streams of every session at once).
    relay_max_connections: int = 256
    # ... a compaction (every level; L3 after it) must be answered within this: Claude Code gives
    # a compaction request 600 s, keep-alive pings or not, and a real model can take minutes.
    relay_compaction_deadline_seconds: float = 540.0
    # Retries inside a level for 429, 5xx and dropped connections.
    llm_max_retries: int = 2
    llm_backoff_seconds: float = 0.5
    # A Retry-After longer than this (or past the deadline) fails the level instead.
    llm_max_retry_after: float = 30.0
    # The whole chain's budget; L3 runs even after it. OpenClaw gives a compaction 180 s
    # (EMBEDDED_COMPACTION_TIMEOUT_MS, agents.defaults.compaction.timeoutSeconds): the guard's
    # answer, L3 included, must be back before it gives up.
    chain_deadline_seconds: float = 150.0
    # The local model's context window (tokens).
    local_context_tokens: int = 2048
    # Circuit breaker: after this many chains in a row ended at L3, skip the LLM levels ...
    breaker_threshold: int = 3
    # ... for this long.
    breaker_cooldown_seconds: float = 600.0
    max_breaker_events: int = 100
    # L3: the input's head and tail in this proportion (3:2), measured in tokens,
    # within L2's target.
    l3_head_ratio: float = 0.30
    l3_tail_ratio: float = 0.20

    # --- inputs ----------------------------------------------------------------
    # A summaries file (not a database) larger than this is refused with a message.
    max_file_bytes: int = 1 << 30

    # --- state -----------------------------------------------------------------
    max_failures_kept: int = 500
    max_check_history: int = 100
    max_chain_history: int = 200
    max_daily_days: int = 90
    # The guard's own L3 answers (serve, --compact) known again when an agent stores them: the
    # newest this many (a key of each, no text; own_answers.py).
    max_own_answers_kept: int = 1000
    # Failure counts are kept per source up to this many sources (files checked with
    # --file fold into one `file` source, then the smallest into `other`).
    max_sources_kept: int = 50
    l3_warning_share: float = 0.10

    # --- a team's view (telemetry.py, exposition.py) ----------------------------
    # After each verdict, push the agent's counters to this Prometheus Pushgateway (its base
    # URL, e.g. http://pushgateway:9091; '' = no push; `--check --push URL` pushes once, now).
    push_url: str = ""
    # The Pushgateway job they are grouped under, with the machine, user and agent.
    push_job: str = "compaction_guard"
    # After each verdict, write the agent's counters to compaction_guard-<user>-<agent>.prom in
    # this directory, node_exporter's textfile collector's ('' = none; `--check --textfile DIR`).
    textfile_dir: str = ""
    # The `machine` and `user` labels ('' = the host name and the login name).
    machine_label: str = ""
    user_label: str = ""
    # The telemetry worker a verdict starts (never the agent's hook itself): at most this many
    # verdict events in one OTLP request; at most this many waiting to be sent (more are
    # dropped, and said); each request at most this long (OTEL_EXPORTER_OTLP_TIMEOUT, when set,
    # wins); the whole run at most this long.
    telemetry_max_batch: int = 512
    telemetry_max_events: int = 10000
    telemetry_timeout_seconds: float = 5.0
    telemetry_deadline_seconds: float = 30.0

    def with_overrides(self, **changes) -> "Settings":
        return replace(self, **changes)


DEFAULT = Settings()

# The seed's literal values. Its rules differ in kind too (any 20-char window,
# entropy alone, chars/4 tokens); see benchmarks/seed_rules.py for them verbatim.
SEED = Settings(
    min_summary_chars=10,
    max_entropy=5.0,
    max_inflation_ratio=1.0,
    max_failures_kept=50,
    max_check_history=20,
)


def effective_l2_temperature(settings: "Settings") -> tuple:
    """(temperature L2 runs at, why it differs from l2_temperature or None). L2 fights
    garbage by being colder than L1: at most 0.2 and 0.05 below l1_temperature."""
    value = max(0.0, min(0.2, settings.l2_temperature, settings.l1_temperature - 0.05))
    if abs(value - settings.l2_temperature) < 1e-9:
        return settings.l2_temperature, None
    cap = "0.2" if value == 0.2 else f"l1_temperature - 0.05 = {value:g}"
    return value, (f"l2_temperature = {settings.l2_temperature:g} is not used: L2 runs at {value:g} (at most 0.2 and "
                   f"colder than L1; the cap here is {cap})")

