"""The labelled corpus: good summaries and failures made by their real mechanisms.

`build()` returns a list of Sample, deterministic for a given seed. Good samples are
the hand-written summaries in good.yaml and variants of them (more input, footers,
combined sessions, leaked-but-closed reasoning, re-wrapped lines). Failures are
made from the same texts the way they happen in the wild: a model looping until
max_tokens, bytes decoded with the wrong codec, a tokenizer's pieces printed raw,
a fallback's marker, a placeholder stored over real history.

Each failure sample says whether the seed's rules were meant to catch it
(form="seed") or it is a real-world form they miss (form="real").
"""
from __future__ import annotations

import base64
import random
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

HERE = Path(__file__).parent


@dataclass
class Sample:
    id: str
    label: str                    # "good" or a failure kind
    form: str                     # "good", "seed" or "real"
    mechanism: str
    content: str
    input_text: Optional[str] = None
    input_tokens: Optional[int] = None
    previous: Optional[str] = None
    context: list = field(default_factory=list)   # earlier contents in the same stale scope
    also: tuple = ()              # other failure kinds this sample legitimately has
    lang: str = "en"
    part: str = "development"     # "development" (good.yaml) or "held-out" (holdout.yaml)


def load_good(name: str = "good.yaml") -> list:
    with open(HERE / name, encoding="utf-8") as fh:
        items = yaml.safe_load(fh)
    for it in items:
        it["content"] = it["content"].rstrip("\n")
    return items


_SENT_RE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")


def sentences(text: str) -> list:
    return [s.strip() for s in _SENT_RE.split(text) if s and len(s.strip()) > 1]


# --------------------------------------------------------------------------- inputs
_TOOL_LINES = [
    "tool: exec `git status` -> 3 files changed",
    "tool: read_file src/app.ts (412 lines)",
    "tool: exec `npm test` -> 118 passed, 0 failed",
    "tool: web_fetch https://example.com/docs -> 200 OK, 14 KB",
    "tool: exec `ls -la /var/log` -> 22 entries",
]


def history_for(good: dict, rng: random.Random, scale: int = 3) -> str:
    """The history a good summary is given as its input: the one good.yaml says it is good for
    (`history:`, a greeting for "User greeted me; no task yet."), else a conversation made from
    its facts (transcript_for, drawn either way so every other item stays the same)."""
    made = transcript_for(good["content"], rng, scale)
    return good.get("history") or made


def transcript_for(summary: str, rng: random.Random, scale: int = 3) -> str:
    """A conversation a summary could have come from: its facts, asked and answered, with tool noise."""
    out = []
    for s in sentences(summary):
        out.append(f"user: can you look into this? {s}")
        out.append(f"assistant: Looking at it now. {s} I checked the details and this is what I found.")
        for _ in range(scale):
            out.append(rng.choice(_TOOL_LINES))
    return "\n".join(out)


# --------------------------------------------------------------------------- noise
def random_ascii(rng, n):
    alphabet = [chr(c) for c in range(33, 127)]
    words = []
    while sum(len(w) + 1 for w in words) < n:
        words.append("".join(rng.choice(alphabet) for _ in range(rng.randint(3, 12))))
    return " ".join(words)


def random_bytes_as(rng, n, codec):
    data = bytes(rng.randrange(256) for _ in range(n))
    if codec == "cp1252":
        return data.decode("cp1252", errors="replace")
    return data.decode(codec, errors="replace")


def base64_noise(rng, n):
    """An encoded blob, MIME-wrapped at 76 columns or on one line."""
    data = bytes(rng.randrange(256) for _ in range(n * 3 // 4))
    blob = base64.b64encode(data).decode()
    return "\n".join(textwrap.wrap(blob, 76)) if rng.random() < 0.5 else blob


def mojibake(text, codec):
    raw = text.encode("utf-8")
    if codec == "cp1252":
        # cp1252 has five undefined bytes; real mojibake shows them as latin-1 (ftfy's "sloppy" cp1252)
        return "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in raw)
    return raw.decode("latin-1")


def fffd_soup(text, rng):
    raw = bytearray(text.encode("utf-8"))
    for i in range(len(raw)):
        if rng.random() < 0.35:
            raw[i] = rng.randrange(128, 256)
    return raw.decode("utf-8", errors="replace")


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


_B2U = _bytes_to_unicode()


def tokenizer_soup(text, rng):
    """GPT-2 / Llama-3 byte-level BPE pieces printed without decoding."""
    mapped = "".join(_B2U[b] for b in text.encode("utf-8"))
    # pieces joined by spaces as a debug print of token strings would show them
    pieces = re.findall(r"\u0120?[^\u0120\u010a]{1,6}|\u010a", mapped)
    return " ".join(pieces) if rng.random() < 0.5 else mapped


def token_ids(text, rng):
    vocab = {}
    ids = []
    for w in re.findall(r"\w+|[^\w\s]", text):
        if w not in vocab:
            vocab[w] = rng.randrange(200, 128000)
        ids.append(str(vocab[w]))
    sep = rng.choice([" ", ", "])
    return sep.join(ids)


_ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]


def keyboard_mash(rng, n):
    words = []
    while sum(len(w) + 1 for w in words) < n:
        row = rng.choice(_ROWS[:2] if rng.random() < 0.8 else _ROWS)
        i = rng.randrange(len(row))
        w = []
        for _ in range(rng.randint(4, 14)):
            w.append(row[i])
            i = max(0, min(len(row) - 1, i + rng.choice([-2, -1, 1, 1, 2])))
        words.append("".join(w))
    return " ".join(words)


def random_unicode(rng, n):
    blocks = [(0x16A0, 0x16F0), (0x2C00, 0x2C5E), (0xA500, 0xA62B), (0x10300, 0x1031F), (0x2800, 0x28FF),
              (0x1D00, 0x1DBF), (0x2B00, 0x2BFF), (0x10400, 0x1044F), (0x2200, 0x22FF), (0x0370, 0x03FF)]
    out = []
    while len(out) < n:
        if rng.random() < 0.12:
            out.append(" ")
            continue
        a, b = rng.choice(blocks)
        out.append(chr(rng.randrange(a, b)))
    return "".join(out)


# --------------------------------------------------------------------------- build
SKELETON = ("## Decisions\nNo prior history.\n\n## Open TODOs\nNone captured.\n\n## Constraints/Rules\nNone captured.\n\n"
            "## Pending user asks\nNone captured.\n\n## Exact identifiers\nNone captured.")

REFUSALS = [
    "I'm sorry, but I can't help with summarizing this conversation.",
    "I'm sorry, but I cannot provide a summary of this content as it may contain sensitive information.",
    "I can't assist with that request.",
    "As an AI language model, I cannot access previous conversations to summarize them.",
    "抱歉，我无法总结这段对话。",
    "申し訳ありませんが、この会話を要約することはできません。",
    "Извините, я не могу выполнить этот запрос.",
    "Lo siento, no puedo resumir esta conversación.",
    "Désolé, je ne peux pas résumer cette conversation.",
    "Es tut mir leid, aber ich kann diese Unterhaltung nicht zusammenfassen.",
]

ERRORS = [
    "Error generating summary: Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM): Limit 200000, Used 199122, Requested 4418.', 'type': 'tokens', 'code': 'rate_limit_exceeded'}}",
    "Error code: 400 - {'error': {'message': \"This model's maximum context length is 128000 tokens. However, your messages resulted in 141223 tokens.\", 'type': 'invalid_request_error', 'code': 'context_length_exceeded'}}",
    "Traceback (most recent call last):\n  File \"/app/summarize.py\", line 88, in summarize\n    resp = client.chat.completions.create(**kwargs)\nopenai.APITimeoutError: Request timed out.",
    "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>",
    '{"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error"}}',
    "Request failed with status code 503",
    "litellm.exceptions.RateLimitError: AnthropicException - {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
    "Error: summarizer returned no content (finish_reason=length)",
    "Failed to generate summary: connection reset by peer",
    "503 Service Unavailable: upstream connect error or disconnect/reset before headers. reset reason: overflow",
]

PLACEHOLDERS = [
    "Summary unavailable due to context limits. Older messages were truncated.",
    "(no summary available)",
    "No summary available.",
    "Nothing to summarize.",
    "Summary: N/A",
    "<summary></summary>",
    "summary pending",
]

TINY = ["", " ", "\n\n", "OK", "Done.", "...", "N/A", "-", "null", "{}", "ok ok", "None"]


def reasoning_text(base: str, rng) -> str:
    ss = sentences(base)
    picked = " ".join(ss[: max(1, len(ss) // 2)])
    return (f"The user wants me to summarize the conversation. Let me look at what happened. {picked} "
            "I should keep the identifiers and the open tasks. Wait, I also need to mention the latest request. "
            "Let me make sure the summary is concise and in the same language as the conversation.")


def loop_k(unit: str, in_code: bool = False) -> tuple:
    """How often a looping model repeats `unit`: from the seed's third time on, the same
    range for every kind of unit (no rule of the detectors is mirrored here)."""
    return (3, 40)


def in_fence(text: str, fragment: str) -> bool:
    """Whether `fragment` sits inside a ``` fence of `text`."""
    at = text.find(fragment)
    return at >= 0 and text[:at].count("```") % 2 == 1


def build(seed: int = 20261130, base: str = "good.yaml") -> list:
    """The corpus made from `base` (good.yaml: development; holdout.yaml: held out)."""
    rng = random.Random(seed)
    goods = load_good(base)
    by_lang = {}
    for g in goods:
        by_lang.setdefault(g["lang"], []).append(g)
    samples = []

    part = {"holdout.yaml": "held-out", "adversarial.yaml": "adversarial", "fresh.yaml": "fresh"}.get(base, "development")

    def add(**kw):
        samples.append(Sample(part=part, **kw))

    # ---------------------------------------------------------------- good
    for g in goods:
        c, gid, lang = g["content"], g["id"], g["lang"]
        # `input_tokens`: the size of the history the summary is of, where that is what makes it good
        size = g.get("input_tokens")
        add(id=f"good/{gid}", label="good", form="good", mechanism=g["style"], content=c, lang=lang, input_tokens=size)
        add(id=f"good/{gid}+input", label="good", form="good", mechanism=g["style"], content=c,
            input_text=history_for(g, rng), lang=lang)
        other = rng.choice(goods)["content"]
        add(id=f"good/{gid}+previous", label="good", form="good", mechanism="has-previous", content=c,
            previous=other if other != c else "", input_text=history_for(g, rng), lang=lang)
        add(id=f"good/{gid}+footer", label="good", form="good", mechanism="expand-footer",
            content=c + "\n[Expand for details about: " + ", ".join(s[:30] for s in sentences(c)[:3]) + "]", lang=lang,
            input_tokens=size)
        peers = [x for x in by_lang.get(lang, []) if x["id"] != gid] or goods
        p = rng.choice(peers)
        combo = c + "\n\n" + p["content"]
        add(id=f"good/{gid}+{p['id']}", label="good", form="good", mechanism="combined", content=combo,
            input_text=transcript_for(combo, rng, 2), lang=lang)
        add(id=f"good/{gid}+think", label="good", form="good", mechanism="closed-reasoning-then-summary",
            content="<think>\n" + reasoning_text(c, rng) + "\n</think>\n\n" + c, lang=lang, input_tokens=size)
        # re-wrapping keeps prose good; it would turn code, tables and logs (one line per
        # attempt) into something they are not
        if g["style"] not in ("code-block", "json-summary", "yaml-summary", "table-repeated-cells", "retry-log") \
                and lang not in ("zh", "ja"):
            add(id=f"good/{gid}+rewrap", label="good", form="good", mechanism="re-wrapped",
                content=textwrap.fill(" ".join(c.split()), rng.randint(60, 110)), lang=lang, input_tokens=size)
        half = "\n".join(c.splitlines()[: max(1, len(c.splitlines()) // 2)])
        if len(half) > 30:
            add(id=f"good/{gid}+half", label="good", form="good", mechanism="shorter", content=half, lang=lang,
                input_tokens=size)
    # condensed nodes: several leaves joined, as memory-dag-compactor writes them
    for i in range(60):
        lang = rng.choice(list(by_lang))
        parts = rng.sample(by_lang[lang], min(len(by_lang[lang]), rng.randint(2, 4)))
        body = "\n\n".join(p["content"] for p in parts)
        add(id=f"good/condensed-{i}", label="good", form="good", mechanism="condensed", content=body,
            input_text=body + "\n\n" + transcript_for(body, rng, 1), lang=lang)

    # the embedded summarizer's own L1/L2 outputs are summaries too
    try:
        from compaction_guard.chain import level_requests
        from compaction_guard.settings import DEFAULT
        from compaction_guard.summarizers import ExtractiveSummarizer
        from compaction_guard.tokens import estimate_tokens
        ext = ExtractiveSummarizer()
        for i in range(0, len(goods), 2):
            parts = rng.sample(goods, min(len(goods), 4))
            src = "\n\n".join(transcript_for(p["content"], rng, 2) for p in parts)
            for req in level_requests(estimate_tokens(src), DEFAULT):
                add(id=f"good/extractive-l{req.level}-{i}", label="good", form="good", mechanism=f"extractive-{req.strategy}",
                    content=ext.summarize(src, req), input_text=src, lang="mixed")
    except ImportError:
        pass

    # ---------------------------------------------------------------- empty
    for i, t in enumerate(TINY):
        add(id=f"empty/tiny-{i}", label="empty", form="seed", mechanism="blank-or-tiny", content=t,
            input_text=transcript_for(goods[i]["content"], rng))
    for i, t in enumerate(PLACEHOLDERS):
        add(id=f"empty/placeholder-{i}", label="empty", form="real", mechanism="placeholder", content=t,
            input_text=transcript_for(goods[i]["content"], rng))
    for i in range(6):
        add(id=f"empty/skeleton-{i}", label="empty", form="real", mechanism="openclaw-skeleton", content=SKELETON,
            input_text=transcript_for(goods[i * 3]["content"], rng))
    for i, t in enumerate(REFUSALS):
        add(id=f"empty/refusal-{i}", label="empty", form="real", mechanism="refusal", content=t,
            input_text=transcript_for(goods[i]["content"], rng))
    for i, t in enumerate(ERRORS):
        add(id=f"empty/error-{i}", label="empty", form="real", mechanism="error-text", content=t,
            input_text=transcript_for(goods[i]["content"], rng))
    for i, g in enumerate(goods[::2]):
        r = reasoning_text(g["content"], rng)
        kinds = [
            ("think-closed", f"<think>\n{r}\n</think>"),
            ("think-unclosed", f"<think>\n{r} Now let me write the summary:\n\n- {sentences(g['content'])[0]}"),
            ("thinking-process", "Thinking Process:\n\n1.  **Analyze the Request:** " + r + "\n2.  **Identify key points:**\n"
             + "\n".join(f"    *   {s}" for s in sentences(g["content"])[:3]) + "\n3.  **Draft the summary:**"),
            ("harmony-analysis", f"<|channel|>analysis<|message|>{r}"),
        ]
        name, text = kinds[i % len(kinds)]
        add(id=f"empty/reasoning-{name}-{i}", label="empty", form="real", mechanism="reasoning-only", content=text,
            input_text=transcript_for(g["content"], rng, 6))

    # ---------------------------------------------------------------- inflation
    for i, g in enumerate(goods):
        c = g["content"]
        first = sentences(c)[0]
        if len(c) > len(first) * 1.6:
            add(id=f"inflation/verbose-{g['id']}", label="inflation", form="seed" if g["lang"] == "en" else "real",
                mechanism="summary-longer-than-input", content=c, input_text=first, lang=g["lang"])
        if i % 3 == 0:
            src = transcript_for(c, rng, 1)
            add(id=f"inflation/fallback-copy-{g['id']}", label="inflation", form="real", mechanism="fallback-as-large-as-source",
                content="Conversation so far:\n" + src, input_text=src, lang=g["lang"])
    # CJK: an English conversation summarized in Chinese/Japanese; chars/4 calls it a 4x shrink
    cjk = [g for g in goods if g["lang"] in ("zh", "ja") and len(g["content"]) > 60]
    en = [g for g in goods if g["lang"] == "en" and len(g["content"]) > 120]
    for i, g in enumerate(cjk):
        src = rng.choice(en)["content"]
        src = src[: int(len(g["content"]) * 2.2)]
        add(id=f"inflation/cjk-summary-{g['id']}", label="inflation", form="real", mechanism="cjk-summary-of-shorter-english",
            content=g["content"], input_text=src, lang=g["lang"])
    # growth over compactions: the new summary re-states the old one and the new turns verbatim
    for i in range(8):
        g = rng.choice(goods)
        prev = g["content"]
        new = transcript_for(rng.choice(goods)["content"], rng, 0)
        add(id=f"inflation/growth-{i}", label="inflation", form="real", mechanism="growth-over-compactions",
            content=prev + "\n\nUpdate:\n" + new + "\n\n" + prev, input_text=new, previous=prev, lang=g["lang"],
            also=("repetition",))   # it re-states the old summary: repeated blocks are expected too

    # ---------------------------------------------------------------- garbled
    big_input = transcript_for("\n".join(g["content"] for g in goods[:6]), rng, 3)
    for i in range(14):
        add(id=f"garbled/random-ascii-{i}", label="garbled", form="seed", mechanism="random-characters",
            content=random_ascii(rng, rng.randint(120, 2000)), input_text=big_input)
    for i in range(8):
        add(id=f"garbled/random-unicode-{i}", label="garbled", form="real", mechanism="random-unicode",
            content=random_unicode(rng, rng.randint(100, 800)), input_text=big_input)
    for i, codec in enumerate(["latin-1", "cp1252", "utf-8"] * 4):
        add(id=f"garbled/bytes-{codec}-{i}", label="garbled", form="real", mechanism=f"bytes-read-as-{codec}",
            content=random_bytes_as(rng, rng.randint(150, 1500), codec), input_text=big_input)
    for i in range(8):
        add(id=f"garbled/base64-{i}", label="garbled", form="real", mechanism="base64-noise",
            content=base64_noise(rng, rng.randint(120, 1500)), input_text=big_input)
    nonascii = [g for g in goods if sum(1 for ch in g["content"] if ord(ch) > 127) >= 8]
    for i, g in enumerate(nonascii):
        codec = ["cp1252", "latin-1"][i % 2]
        add(id=f"garbled/mojibake-{codec}-{g['id']}", label="garbled", form="real", mechanism=f"mojibake-{codec}",
            content=mojibake(g["content"], codec), input_text=transcript_for(g["content"], rng, 4), lang=g["lang"])
    for i, g in enumerate(goods[::3]):
        add(id=f"garbled/fffd-{g['id']}", label="garbled", form="real", mechanism="fffd-soup",
            content=fffd_soup(g["content"], rng), input_text=transcript_for(g["content"], rng, 6), lang=g["lang"])
    for i, g in enumerate(goods[1::3]):
        add(id=f"garbled/tokenizer-{g['id']}", label="garbled", form="real", mechanism="tokenizer-soup",
            content=tokenizer_soup(g["content"], rng), input_text=transcript_for(g["content"], rng, 12), lang=g["lang"],
            also=("repetition",))  # a text's repeated lines stay repeated once tokenized
    for i, g in enumerate(goods[2::3]):
        add(id=f"garbled/token-ids-{g['id']}", label="garbled", form="real", mechanism="token-ids",
            content=token_ids(g["content"], rng), input_text=transcript_for(g["content"], rng, 8), lang=g["lang"],
            also=("repetition",))
    for i in range(12):
        add(id=f"garbled/mash-{i}", label="garbled", form="real", mechanism="keyboard-mash",
            content=keyboard_mash(rng, rng.randint(80, 600)), input_text=big_input)
    tails = [("random", lambda n: random_ascii(rng, n)), ("bytes", lambda n: random_bytes_as(rng, n, "latin-1")),
             ("base64", lambda n: base64_noise(rng, n)), ("mash", lambda n: keyboard_mash(rng, n)),
             ("unicode", lambda n: random_unicode(rng, n)), ("fffd", lambda n: random_bytes_as(rng, n, "utf-8")),
             ("latin1", lambda n: "".join(chr(rng.randrange(0x80, 0x100)) for _ in range(n)))]
    for i, g in enumerate(goods):
        name, make = tails[i % len(tails)]
        c = g["content"]
        add(id=f"garbled/tail-{name}-{g['id']}", label="garbled", form="real", mechanism=f"good-start-garbage-tail-{name}",
            content=c + " " + make(max(80, int(len(c) * rng.uniform(0.5, 1.2)))),
            input_text=transcript_for(c, rng, 8), lang=g["lang"])

    # ---------------------------------------------------------------- repetition
    for i, g in enumerate(goods):
        c = g["content"]
        ss = [s for s in sentences(c) if len(s) >= 20 and len(re.findall(r"[^\W_]", s)) >= 3]
        if not ss:
            continue
        s = rng.choice(ss)
        k = rng.randint(*loop_k(s, in_fence(c, s)))
        sep = rng.choice([" ", "\n", " ", "\n\n"])
        form = "seed" if g["lang"] in ("en", "de", "fr", "es", "ru") else "real"
        add(id=f"repetition/sentence-loop-{g['id']}", label="repetition", form=form, mechanism="sentence-loop",
            content=c + sep + sep.join([s] * k), input_text=transcript_for(c, rng, 10), also=("inflation",), lang=g["lang"])
        lines = [ln for ln in c.splitlines() if ln.strip()]
        if len(lines) >= 3 and i % 2 == 0:
            j = rng.randrange(len(lines) - 2)
            block = "\n".join(lines[j:j + rng.randint(2, 3)])
            add(id=f"repetition/block-loop-{g['id']}", label="repetition", form="real", mechanism="list-block-loop",
                content="\n".join(lines[:j]) + "\n" + "\n".join([block] * rng.randint(*loop_k(block, in_fence(c, block)))),
                input_text=transcript_for(c, rng, 10), also=("inflation",), lang=g["lang"])
        if i % 3 == 0:
            add(id=f"repetition/paragraph-loop-{g['id']}", label="repetition", form="real", mechanism="paragraph-loop",
                content="\n\n".join([c] * rng.randint(3, 6)), input_text=transcript_for(c, rng, 20), also=("inflation",), lang=g["lang"])
    for i in range(10):
        g = rng.choice(goods)
        label = rng.choice(["User:", "Assistant:", "user:", "USER:", "Human:"])
        add(id=f"repetition/role-loop-{i}", label="repetition", form="real", mechanism="role-label-loop",
            content=g["content"] + "\n" + "\n".join([label] * rng.randint(10, 40)), input_text=transcript_for(g["content"], rng, 10),
            lang=g["lang"])
    words = ["the", "summary", "and", "very", "ok", "is", "that", "really", "-", "yes"]
    for i in range(10):
        g = rng.choice(goods)
        w = rng.choice(words[:8])
        add(id=f"repetition/word-loop-{i}", label="repetition", form="real", mechanism="word-loop",
            content=g["content"] + " " + " ".join([w] * rng.randint(15, 200)), input_text=transcript_for(g["content"], rng, 10),
            also=("inflation",), lang=g["lang"])
    for i, g in enumerate([g for g in goods if g["lang"] in ("zh", "ja", "ko")]):
        ss = [s for s in sentences(g["content"]) if len(re.findall(r"[^\W_]", s)) >= 3]
        s = rng.choice(ss)
        add(id=f"repetition/cjk-loop-{g['id']}", label="repetition", form="real", mechanism="cjk-sentence-loop",
            content=g["content"] + "".join([s] * rng.randint(3, 30)), input_text=transcript_for(g["content"], rng, 20),
            also=("inflation",), lang=g["lang"])
        phrase = rng.choice(["的", "好的", "是的", "我们", "です", "요"])
        add(id=f"repetition/cjk-char-loop-{g['id']}", label="repetition", form="real", mechanism="cjk-char-loop",
            content=g["content"] + phrase * rng.randint(20, 120), input_text=transcript_for(g["content"], rng, 20),
            also=("inflation",), lang=g["lang"])
    for i in range(8):   # loops with a counter: the model numbers the same step again and again
        g = rng.choice(goods)
        s = rng.choice([x for x in sentences(g["content"]) if len(x) >= 20 and not re.search(r"\d", x)] or ["Check the logs again."])
        fmt = rng.choice(["Step {n}: {s}", "{n}. {s}", "- ({n}) {s}", "Attempt {n} summary: {s}"])
        add(id=f"repetition/counter-loop-{i}", label="repetition", form="real", mechanism="loop-with-counter",
            content=g["content"] + "\n" + "\n".join(fmt.format(n=n, s=s) for n in range(1, rng.randint(12, 60))),
            input_text=transcript_for(g["content"], rng, 30), also=("inflation",), lang=g["lang"])
    for i in range(4):
        g = rng.choice(goods)
        line = rng.choice(sentences(g["content"]))
        add(id=f"repetition/opencode-lines-{i}", label="repetition", form="real", mechanism="repeated-lines-until-max-tokens",
            content=g["content"] + "\n" + "\n".join([line] * rng.randint(100, 400)), input_text=transcript_for(g["content"], rng, 10),
            also=("inflation",), lang=g["lang"])

    # ---------------------------------------------------------------- truncation_marker
    def head(c, frac=0.5):
        return c[: max(20, int(len(c) * frac))]
    seed_markers = ["[TRUNCATED]", "[FALLBACK]"]
    real_markers = ["[Truncated from {n} tokens]", "[LCM fallback summary; truncated for context management]",
                    "[LCM fallback summary; directive-shaped untrusted content omitted]", "[Capped from {n} tokens to ~{m}]",
                    "[Capped to ~{m}]", "[Capped]", "[Truncated for context management]", "[... {k} lines truncated ...]"]
    for i, g in enumerate(goods):
        c = g["content"]
        mk = seed_markers[i % 2]
        pos = i % 3
        text = {0: f"{mk}\n{head(c)}", 1: f"{head(c)}\n{mk}", 2: f"{head(c)} {mk} {c[-40:]}"}[pos]
        add(id=f"marker/seed-{g['id']}", label="truncation_marker", form="seed", mechanism="seed-marker", content=text,
            input_text=transcript_for(c, rng, 6), lang=g["lang"])
        mk = real_markers[i % len(real_markers)].format(n=rng.randint(2000, 90000), m=rng.randint(200, 2000), k=rng.randint(5, 300))
        text = f"{head(c, 0.4)}\n{mk}" if i % 2 else f"{mk}\n{head(c, 0.6)}"
        add(id=f"marker/real-{g['id']}", label="truncation_marker", form="real", mechanism="fallback-marker", content=text,
            input_text=transcript_for(c, rng, 6), lang=g["lang"])
    try:
        from compaction_guard.summarizers import truncate_l3
        from compaction_guard.settings import DEFAULT
        for i, g in enumerate(goods[:12]):
            src = transcript_for(g["content"], rng, 3)
            add(id=f"marker/guard-l3-{g['id']}", label="truncation_marker", form="real", mechanism="guard-own-l3-note",
                content=truncate_l3(src, DEFAULT).text, input_text=src, lang=g["lang"])
    except ImportError:
        pass

    # ---------------------------------------------------------------- stale
    # A summary stored again unchanged is stale when the history since the last compaction holds what it
    # lacks: each of these histories ends with a turn that brings new specifics (no random draw: every
    # other item stays as it was). The same summary after a turn that only restates it is good (below).
    def news(i: int) -> str:
        return (f"\nuser: one more thing since then: ticket NEW-{4100 + i} moved to 2026-12-{i % 28 + 1:02d}, "
                f"keep the flag FEATURE_{i}_ENABLED=true.\nassistant: Noted: NEW-{4100 + i}, 2026-12-{i % 28 + 1:02d}, "
                f"FEATURE_{i}_ENABLED=true.")
    for i, g in enumerate(goods):
        c = g["content"]
        if i % 2 == 0:
            add(id=f"stale/previous-{g['id']}", label="stale", form="seed", mechanism="previous-equals-content",
                content=c, previous=c, input_text=transcript_for(c, rng) + news(i), lang=g["lang"])
        else:
            add(id=f"stale/previous-ws-{g['id']}", label="stale", form="real", mechanism="previous-equals-after-whitespace",
                content=c, previous="  " + re.sub(r"\s+", lambda m: rng.choice([" ", "  ", "\n", "\t "]), c) + "\n",
                input_text=history_for(g, rng) + news(i), lang=g["lang"])
        if i % 3 == 0:
            other = rng.choice(goods)["content"]
            add(id=f"stale/dag-node-{g['id']}", label="stale", form="real", mechanism="dag-node-equals-earlier-node",
                content=c, context=[other, re.sub(r"\n", "\n\n", c)], input_text=transcript_for(c, rng), lang=g["lang"])
    for i, g in enumerate(goods):
        if i % 4 == 0:      # stored again unchanged after a turn that restated it: the summary still (issue 58)
            c = g["content"]
            add(id=f"good/unchanged-{g['id']}", label="good", form="good", mechanism="unchanged-after-restating-turn",
                content=c, previous=c, input_text=f"user: can you confirm where we stand?\nassistant: {c}",
                lang=g["lang"])
    return samples


if __name__ == "__main__":
    from collections import Counter
    s = build()
    print(len(s), Counter((x.label, x.form) for x in s))
