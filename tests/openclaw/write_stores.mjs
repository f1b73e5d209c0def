// Write OpenClaw stores with OpenClaw's own code (npm `openclaw`, pinned by
// scripts/setup_openclaw.sh), for tests/test_openclaw_real.py.
//
//   OPENCLAW_HOME=... node write_stores.mjs <openclaw package dir> <plan.json>
//
// The plan is a list of steps; the state directory is the one OpenClaw resolves from the
// environment. Each step:
//   {"op": "session", "agent", "key", "session", "entries": [...]}
//       entries, appended in order with SessionManager (src/agents/sessions/session-manager.ts):
//         {"ref", "user": text} | {"ref", "assistant": text}
//         {"ref", "custom": customType, "data": {...}}               a `custom` entry (a model snapshot)
//         {"ref", "reset": reason, "firstKept": ref}                  appendResetBoundary
//         {"branch": ref}                                             branch(): go back to an earlier entry
//         {"ref", "branchSummary": text, "from": ref}                  branchWithSummary()
//         {"ref", "compaction": summary | {"openclaw": "truncated" | "partial" | "context-truncated" |
//                                          "with-files", ...}, "firstKept": ref,
//          "tokensBefore": n, "tokensAfter": n}
//   {"op": "counters", "agent", "key", "entry": {...}}                upsertSessionEntry (session_nodes)
//   {"op": "delete", "agent", "key"}                                   deleteSessionEntry, archiving the transcript
//   {"op": "cold", "afterDays": n}                                     OpenClaw's cold-tier maintenance, run as if
//                                                                      n+1 days had passed
// Prints {"refs": {ref: entry id}, "markers": {...}} on stdout: the ids OpenClaw gave, and the
// marker texts as OpenClaw's code writes them.
import fs from "node:fs";
import path from "node:path";

const [, , pkg, planFile] = process.argv;
const dist = path.join(pkg, "dist");
const sdk = await import(path.join(dist, "plugin-sdk", "agent-sessions.js"));
const store = await import(path.join(dist, "plugin-sdk", "session-store-runtime.js"));

// OpenClaw's hashed module names change between builds: find them by what they hold.
function moduleHolding(prefix, needle) {
  const name = fs.readdirSync(dist).find((n) => n.startsWith(prefix) && n.endsWith(".mjs")
    && fs.readFileSync(path.join(dist, n), "utf8").includes(needle));
  if (!name) throw new Error(`no ${prefix}*.mjs holding ${needle} in ${dist}`);
  return path.join(dist, name);
}
function exported(file, local) {
  // the alias a bundled module exports `local` under: `export { local as x, ... }`
  const text = fs.readFileSync(file, "utf8");
  const m = text.match(new RegExp(`\\b${local} as (\\w+)\\b`));
  if (!m) throw new Error(`${file} does not export ${local}`);
  return m[1];
}
function constant(file, name) {
  const text = fs.readFileSync(file, "utf8");
  const m = text.match(new RegExp(`const ${name} = ("(?:[^"\\\\]|\\\\.)*");`));
  if (!m) throw new Error(`${file} has no ${name}`);
  return JSON.parse(m[1]);
}

const compactionFile = moduleHolding("compaction-", "const SUMMARY_TRUNCATED_MARKER");
const compactionMod = await import(compactionFile);
const capCompactionSummary = compactionMod[exported(compactionFile, "capCompactionSummary")];
const formatFileOperations = compactionMod[exported(compactionFile, "formatFileOperations")];
const MAX_CHARS = compactionMod[exported(compactionFile, "MAX_COMPACTION_SUMMARY_CHARS")];
const builtinFile = moduleHolding("builtin-openclaw-", "const CONTEXT_TRUNCATED_MARKER");
const CONTEXT_TRUNCATED_MARKER = constant(builtinFile, "CONTEXT_TRUNCATED_MARKER");
// summarizeChunks' partial summary, as its template literal writes it
const partialTemplate = fs.readFileSync(builtinFile, "utf8").match(/partial\.partialSummary = `\$\{summary\}(.*?)`;/)[1];
function partialSummary(summary, completed, total) {
  return summary + partialTemplate.replaceAll("\\n", "\n")
    .replace("${completedChunks}", String(completed)).replace("${chunks.length}", String(total))
    .replace("${completedChunks + 1}", String(completed + 1)).replace("${chunks.length}", String(total));
}

function summaryOf(spec) {
  if (typeof spec === "string") return spec;
  const body = spec.text ?? "";
  switch (spec.openclaw) {
    case "truncated":       // longer than OpenClaw's budget: cut by its own function, marker and all
      return capCompactionSummary(body.repeat(Math.ceil((MAX_CHARS * 1.3) / Math.max(1, body.length))), MAX_CHARS);
    case "partial":
      return partialSummary(body, spec.completed ?? 1, spec.total ?? 3);
    case "context-truncated":
      return body + CONTEXT_TRUNCATED_MARKER + (spec.after ?? "");
    case "with-files":
      return body + formatFileOperations(spec.readFiles ?? [], spec.modifiedFiles ?? []);
    default:
      throw new Error(`unknown summary kind ${spec.openclaw}`);
  }
}

const refs = {};
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const plan = JSON.parse(fs.readFileSync(planFile, "utf8"));
for (const step of plan) {
  const agentId = step.agent ?? "main";
  if (step.op === "session") {
    const storePath = store.resolveStorePath(undefined, { agentId });
    const sm = sdk.SessionManager.open({ agentId, sessionId: step.session, sessionKey: step.key, storePath }, "/tmp");
    for (const e of step.entries) {
      let id;
      const now = Date.now();
      if (e.user !== undefined) {
        id = sm.appendMessage({ role: "user", content: [{ type: "text", text: e.user }], timestamp: now });
      } else if (e.assistant !== undefined) {
        id = sm.appendMessage({ role: "assistant", content: [{ type: "text", text: e.assistant }],
          api: "openai-completions", provider: "scripted", model: "scripted", usage, stopReason: "stop", timestamp: now });
      } else if (e.custom !== undefined) {
        id = sm.appendCustomEntry(e.custom, e.data ?? {});
      } else if (e.branch !== undefined) {
        sm.branch(refs[e.branch]);
      } else if (e.branchSummary !== undefined) {
        id = sm.branchWithSummary(refs[e.from], e.branchSummary);
      } else if (e.reset !== undefined) {
        id = sm.appendResetBoundary(e.reset, e.firstKept ? refs[e.firstKept] : undefined);
      } else if (e.compaction !== undefined) {
        const details = e.details ?? { readFiles: [], modifiedFiles: [] };
        id = sm.appendCompaction(summaryOf(e.compaction), refs[e.firstKept], e.tokensBefore, details, false, undefined,
          e.tokensAfter);
      } else {
        throw new Error(`unknown entry ${JSON.stringify(e)}`);
      }
      if (e.ref) refs[e.ref] = id;
    }
    sm.flushPendingPersistence?.();
  } else if (step.op === "counters") {
    await store.upsertSessionEntry({ agentId, sessionKey: step.key, entry: { updatedAt: Date.now(), ...step.entry } });
  } else if (step.op === "delete") {
    const ok = await store.deleteSessionEntry({ agentId, sessionKey: step.key, archiveTranscript: true });
    if (!ok) throw new Error(`could not delete ${step.key}`);
  } else if (step.op === "cold") {
    const coldFile = moduleHolding("session-cold-storage-", "async function runSessionColdStorageMaintenance");
    const cold = await import(coldFile);
    const run = cold[exported(coldFile, "runSessionColdStorageMaintenance")];
    const real = Date.now;
    Date.now = () => real() + ((step.afterDays ?? 30) + 1) * 86400e3;
    try {
      const r = await run({ config: { session: { maintenance: { coldStorage: { enabled: true, afterDays: step.afterDays ?? 30 } } } } });
      if (!r.archivedTranscripts) throw new Error("cold storage archived nothing");
    } finally {
      Date.now = real;
    }
  } else {
    throw new Error(`unknown step ${step.op}`);
  }
}
const markers = {
  summary_truncated: constant(compactionFile, "SUMMARY_TRUNCATED_MARKER"),
  context_truncated: CONTEXT_TRUNCATED_MARKER,
  partial_example: partialSummary("", 1, 3).trim(),
};
process.stdout.write(JSON.stringify({ refs, markers }) + "\n");
process.exit(0);
