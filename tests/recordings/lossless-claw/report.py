#!/usr/bin/env python3
"""Print what each recorded case stored and asked: python3 report.py [case ...]"""
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for case in sys.argv[1:] or json.loads((HERE / "data/manifest.json").read_text())["cases"]:
    R = json.loads((HERE / f"data/{case}-rows.json").read_text())
    L = json.loads((HERE / f"data/{case}-requests.json").read_text())
    print(f"######## {case}")
    for q in L:
        if q["kind"] != "turn":
            print(f"  req {q['server']:4} {q['phase']:16} {q['kind']:16} model={q['model']} status={q['status']} "
                  f"answer_chars={len(q['answer'])} max_completion_tokens={q['body'].get('max_completion_tokens')}")
    pend = {r["canonical_summary_id"]: r for r in R.get("pending_summary_nodes", []) if r.get("canonical_summary_id")}
    for s in R.get("summaries", []):
        p = pend.get(s["summary_id"])
        via = f"pending-worker ({p['node_id']} {p['status']})" if p else "forced/sweep (compaction.ts)"
        print(f"  sum {s['summary_id']} {s['kind']} d{s['depth']} tok={s['token_count']} src_msg_tok={s['source_message_token_count']} "
              f"desc_tok={s['descendant_token_count']} model={s['model']} via={via}\n      {s['content'][:160]!r}")
    for r in R.get("summary_parents", []):
        print(f"  parent {r}")
    for r in R.get("pending_summary_nodes", []):
        if r.get("canonical_summary_id") is None:
            print(f"  pending(no canonical) {r['node_id']} {r['kind']} d{r['depth']} {r['status']} tok={r['token_count']} "
                  f"retry={r.get('retry_count')} failure={r.get('failure_summary')!r} content={str(r.get('content'))[:100]!r}")
