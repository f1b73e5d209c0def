// OpenClaw's own compaction audit (src/agents/agent-hooks/compaction-safeguard-quality.ts), run on
// cases the tests give: `node audit.mjs <openclaw package dir> < cases.json`.
//
// The functions are not exported from OpenClaw's bundle, so this takes their region of the
// bundle as it is (`//#region src/agents/agent-hooks/compaction-safeguard-quality.ts` to the
// next region), imports what it imports from the same bundle, and exports what the tests call:
//   {"op": "audit", "params": {...auditSummaryQuality's params}}      -> {ok, reasons}
//   {"op": "identifiers", "text": "..."}                               -> [identifiers]
//   {"op": "instructions", "custom": "...", "latest": "..."}           -> the structure instructions
//   {"op": "fallback", "previous": "..."}                              -> buildStructuredFallbackSummary
// Prints one JSON array of results on stdout.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [, , pkg] = process.argv;
const dist = path.join(pkg, "dist");
const bundleName = fs.readdirSync(dist).find((n) => n.startsWith("builtin-openclaw-") && n.endsWith(".mjs")
  && fs.readFileSync(path.join(dist, n), "utf8").includes("function auditSummaryQuality"));
const bundle = fs.readFileSync(path.join(dist, bundleName), "utf8");
const start = bundle.indexOf("//#region src/agents/agent-hooks/compaction-safeguard-quality.ts");
const end = bundle.indexOf("//#region", start + 10);
const region = bundle.slice(start, end);
const defined = new Set([...region.matchAll(/^(?:function|const|let|class) ([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]));
const words = new Set([...region.matchAll(/\b([A-Za-z_$][\w$]*)\b/g)].map((m) => m[1]));
const imports = [];
for (const line of bundle.split("\n")) {
  const m = line.match(/^import \{(.*)\} from "(.*)";$/);
  if (!m) continue;
  const names = [];
  for (const part of m[1].split(",")) {
    const [exported, local] = part.trim().split(" as ").map((s) => s.trim());
    const name = local ?? exported;
    if (words.has(name) && !defined.has(name)) names.push(local ? `${exported} as ${local}` : exported);
  }
  if (names.length) imports.push(`import { ${names.join(", ")} } from ${JSON.stringify(path.join(dist, m[2]))};`);
}
const file = path.join(os.tmpdir(), `openclaw-audit-${process.pid}.mjs`);
fs.writeFileSync(file, `${imports.join("\n")}\n${region}\nexport { auditSummaryQuality, extractOpaqueIdentifiers, `
  + `buildCompactionStructureInstructions, buildStructuredFallbackSummary, hasAskOverlap };\n`);
let mod;
try {
  mod = await import(file);
} finally {
  fs.unlinkSync(file);
}
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const out = cases.map((c) => {
  switch (c.op) {
    case "audit": return mod.auditSummaryQuality(c.params);
    case "identifiers": return mod.extractOpaqueIdentifiers(c.text);
    case "overlap": return mod.hasAskOverlap(c.summary, c.ask);
    case "instructions": return mod.buildCompactionStructureInstructions(c.custom, c.policy ? { identifierPolicy: c.policy } : undefined, c.latest);
    case "fallback": return mod.buildStructuredFallbackSummary(c.previous);
    default: throw new Error(`unknown op ${c.op}`);
  }
});
// exit once the pipe has taken it all (an exit right after a large write cuts it at 64 KB)
process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
