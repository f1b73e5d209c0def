// OpenClaw's own compaction (packages/agent-core/src/harness/compaction/compaction.ts, `compact`)
// run on the preparations the tests give, its summarizer reached over HTTP on 127.0.0.1:
//   node compact_empty.mjs <openclaw package dir> <OpenAI-compatible base URL> < cases.json
// Each case: {messages, previousSummary?, tokensBefore, temperature, max_tokens, seed, repeat_penalty?}.
// `messages` are agent messages (user: {role, content}, assistant: {role, content: [{type: "text", text}]});
// an empty list is the trigger of openclaw#133408 (the normal path summarizes an empty
// conversation). OpenClaw builds the request (its system prompt, `<conversation>` block, prompt and
// token budget), the local model answers through the `completeSimple` runtime hook OpenClaw's
// hosts fill, and OpenClaw's own code turns the answer into the summary it stores.
// `turnPrefix` (messages): a split turn's prefix, summarized with OpenClaw's turn-prefix prompt.
// With "-" for the URL nothing is asked: each request is recorded (`requests`) and answered "ok"
// (scripts/make_compaction_vocabulary.py reads OpenClaw's prompts this way).
// Prints one JSON array on stdout: {summary, system, prompt, requests, reply, finish_reason, error}.
import fs from "node:fs";
import path from "node:path";

const [, , pkg, baseUrl] = process.argv;
const dist = path.join(pkg, "dist");
const name = fs.readdirSync(dist).find((n) => n.endsWith(".mjs")
  && fs.readFileSync(path.join(dist, n), "utf8").includes("async function compact(preparation, model, apiKey"));
if (!name) {
  process.stderr.write(`no compaction module in ${dist}: is this OpenClaw 2026.9?\n`);
  process.exit(2);
}
const file = path.join(dist, name);
const source = fs.readFileSync(file, "utf8");
const exported = Object.fromEntries([...source.match(/^export \{(.*)\};$/m)[1].matchAll(/(\w+) as (\w+)/g)]
  .map((m) => [m[1], m[2]]));
const mod = await import(file);
const compact = mod[exported.compact];
const createFileOps = mod[exported.createFileOps];
const settings = mod[exported.DEFAULT_COMPACTION_SETTINGS];

const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const out = [];
for (const c of cases) {
  const seen = { requests: [] };
  const runtime = {
    async completeSimple(model, context, options) {
      const user = context.messages[0].content.map((b) => b.text).join("");
      seen.requests.push({ system: context.systemPrompt, prompt: user });
      seen.system ??= context.systemPrompt;
      seen.prompt ??= user;
      if (baseUrl === "-") {
        return { role: "assistant", content: [{ type: "text", text: "ok" }], stopReason: "stop",
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 } };
      }
      const body = {
        messages: [{ role: "system", content: context.systemPrompt }, { role: "user", content: user }],
        max_tokens: Math.min(options.maxTokens, c.max_tokens), temperature: c.temperature, seed: c.seed,
        stream: false,
      };
      if (c.repeat_penalty) Object.assign(body, { repeat_penalty: c.repeat_penalty, top_p: 0.9 });
      const resp = await fetch(`${baseUrl}/chat/completions`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
      });
      const data = await resp.json();
      const choice = data.choices?.[0];
      seen.reply = choice?.message?.content ?? "";
      seen.finish_reason = choice?.finish_reason;
      return {
        role: "assistant", content: seen.reply ? [{ type: "text", text: seen.reply }] : [],
        stopReason: resp.ok ? "stop" : "error", errorMessage: resp.ok ? undefined : JSON.stringify(data),
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
      };
    },
  };
  const preparation = {
    firstKeptEntryId: "kept-1", messagesToSummarize: c.messages.map((m) => ({ timestamp: 0, ...m })),
    turnPrefixMessages: (c.turnPrefix ?? []).map((m) => ({ timestamp: 0, ...m })), isSplitTurn: Boolean(c.turnPrefix), tokensBefore: c.tokensBefore, previousSummary: c.previousSummary,
    fileOps: createFileOps(), settings,
  };
  const model = { id: "local", provider: "local", api: "openai-completions", maxTokens: c.max_tokens, reasoning: false };
  const result = await compact(preparation, model, "sk-local", {}, undefined, undefined, undefined, undefined, runtime);
  out.push({ ...seen, summary: result.ok ? result.value.summary : null, error: result.ok ? null : String(result.error?.message) });
}
// exit once the pipe has taken it all (an exit right after a large write cuts it at 64 KB)
process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
