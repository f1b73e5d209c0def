// A small opencode plugin (no imports, so no npm install is needed) that records what it receives:
// every bus event (type and properties, long strings trimmed) and the compaction-related hooks, as
// JSON lines appended to $OC_REC_LOG. Optional behaviour, switched by environment variables:
//   OC_REC_INJECT=1  after a compaction whose summary text is empty or shorter than 40 characters,
//                    put a note in front of the model on the next main turn (through
//                    experimental.chat.system.transform and experimental.chat.messages.transform);
//                    the pending note is kept in $OC_REC_STATE/<session>.json between processes.
//   OC_REC_SHELL=1   in experimental.session.compacting (awaited), run shell commands with a bounded
//                    time (ctx.$, Bun.spawn's timeout, child_process.spawnSync's timeout) and record
//                    how long they took; on session.compacted, one short synchronous command.
import fs from "fs"
import path from "path"
import { spawnSync } from "child_process"

const LOG = process.env.OC_REC_LOG
const STATE = process.env.OC_REC_STATE
const NOTE = "compaction-guard: the last compaction of this session failed its check (the summary was empty or too short). " +
  "Ask the user to restate the task; identifiers from before the compaction may be lost."

function trim(v, depth = 0) {
  if (typeof v === "string") return v.length > 400 ? v.slice(0, 400) + `…[${v.length} chars]` : v
  if (Array.isArray(v)) return depth > 6 ? `[array ${v.length}]` : v.slice(0, 30).map((x) => trim(x, depth + 1))
  if (v && typeof v === "object") {
    if (depth > 6) return "{…}"
    const out = {}
    for (const [k, x] of Object.entries(v)) out[k] = trim(x, depth + 1)
    return out
  }
  return v
}

function log(hook, data) {
  if (!LOG) return
  try {
    fs.appendFileSync(LOG, JSON.stringify({ t: Date.now(), pid: process.pid, hook, ...trim(data) }) + "\n")
  } catch {}
}

const summaries = new Map() // summary assistant message id -> {sessionID, text}

function stateFile(sessionID) {
  return STATE ? path.join(STATE, `${sessionID}.json`) : undefined
}
function readState(sessionID) {
  const f = stateFile(sessionID)
  try { return f ? JSON.parse(fs.readFileSync(f, "utf8")) : {} } catch { return {} }
}
function writeState(sessionID, s) {
  const f = stateFile(sessionID)
  if (f) { fs.mkdirSync(STATE, { recursive: true }); fs.writeFileSync(f, JSON.stringify(s)) }
}

function boundedShell(label, cmd, ms) {
  const t0 = Date.now()
  try {
    const r = spawnSync("/bin/sh", ["-c", cmd], { timeout: ms, encoding: "utf8", killSignal: "SIGKILL" })
    log("shell", { via: "child_process.spawnSync", label, cmd, timeout_ms: ms, elapsed_ms: Date.now() - t0,
      status: r.status, signal: r.signal, error: r.error ? String(r.error) : undefined, stdout: r.stdout })
  } catch (e) {
    log("shell", { via: "child_process.spawnSync", label, cmd, elapsed_ms: Date.now() - t0, threw: String(e) })
  }
}

async function bunSpawn(label, cmd, ms) {
  const t0 = Date.now()
  try {
    const p = Bun.spawn(["/bin/sh", "-c", cmd], { timeout: ms, killSignal: "SIGKILL", stdout: "pipe", stderr: "pipe" })
    const code = await p.exited
    const out = await new Response(p.stdout).text()
    log("shell", { via: "Bun.spawn", label, cmd, timeout_ms: ms, elapsed_ms: Date.now() - t0, exitCode: code,
      signalCode: p.signalCode, stdout: out })
  } catch (e) {
    log("shell", { via: "Bun.spawn", label, cmd, elapsed_ms: Date.now() - t0, threw: String(e) })
  }
}

export const Recorder = async (ctx) => {
  log("init", { directory: ctx.directory, worktree: ctx.worktree, has$: typeof ctx.$, bun: typeof Bun })
  return {
    event: async ({ event }) => {
      log("event", { type: event.type, properties: event.properties })
      const p = event.properties || {}
      if (event.type === "message.updated" && p.info && p.info.summary === true && p.info.role === "assistant") {
        const cur = summaries.get(p.info.id) || { sessionID: p.info.sessionID, text: "" }
        cur.finish = p.info.finish
        summaries.set(p.info.id, cur)
      }
      if (event.type === "message.part.updated" && p.part && p.part.type === "text" && summaries.has(p.part.messageID)) {
        summaries.get(p.part.messageID).text = p.part.text || ""
      }
      if (event.type === "session.compacted") {
        const sid = p.sessionID
        const last = [...summaries.values()].filter((s) => s.sessionID === sid).at(-1)
        const text = last ? last.text : ""
        const bad = text.trim().length < 40
        log("verdict", { sessionID: sid, summary_chars: text.length, bad })
        if (process.env.OC_REC_INJECT === "1" && bad) writeState(sid, { pending: NOTE })
        // event handlers are not awaited: `opencode run` may exit before async work here ends, and
        // synchronous work here blocks opencode itself; so only a short synchronous command here
        if (process.env.OC_REC_SHELL === "1") boundedShell("on session.compacted", "echo shell-ok", 2000)
      }
    },
    "chat.message": async (input, output) => {
      log("chat.message", { input, message: output.message, parts: output.parts })
    },
    "chat.params": async (input, output) => {
      log("chat.params", { sessionID: input.sessionID, agent: input.agent, model: input.model && input.model.id,
        provider: input.provider && input.provider.info && input.provider.info.id, output })
    },
    "experimental.session.compacting": async (input, output) => {
      log("experimental.session.compacting", { input, output })
      if (process.env.OC_REC_SHELL === "1") {   // this hook is awaited before the compaction request
        const t0 = Date.now()
        try {
          const r = await ctx.$`echo via-bunshell`.quiet().nothrow()
          log("shell", { via: "ctx.$", stdout: r.stdout.toString(), exitCode: r.exitCode, elapsed_ms: Date.now() - t0 })
        } catch (e) { log("shell", { via: "ctx.$", threw: String(e) }) }
        await bunSpawn("quick", "echo bun-spawn-ok", 2000)
        await bunSpawn("slow", "sleep 5; echo should-not-print", 1000)
        boundedShell("slow", "sleep 5; echo should-not-print", 1000)
        log("shell", { via: "done", total_ms: Date.now() - t0 })
      }
    },
    "experimental.compaction.autocontinue": async (input, output) => {
      log("experimental.compaction.autocontinue", { sessionID: input.sessionID, agent: input.agent,
        overflow: input.overflow, message: input.message, output })
    },
    "experimental.text.complete": async (input, output) => {
      log("experimental.text.complete", { input, output })
    },
    "experimental.chat.messages.transform": async (input, output) => {
      const msgs = output.messages || []
      log("experimental.chat.messages.transform", { count: msgs.length,
        messages: msgs.map((m) => ({ role: m.info.role, id: m.info.id, summary: m.info.summary, agent: m.info.agent,
          parts: m.parts.map((x) => ({ type: x.type, text: x.text })) })) })
      if (process.env.OC_REC_INJECT === "1" && msgs.length) {
        const sid = msgs[msgs.length - 1].info.sessionID
        const st = readState(sid)
        const last = msgs[msgs.length - 1]
        if (st.pending && last.info.role === "user" && !last.info.summary) {
          last.parts.push({ id: "prt_guard_note", sessionID: sid, messageID: last.info.id, type: "text", synthetic: true,
            text: "[messages.transform] " + st.pending })
          log("inject", { via: "experimental.chat.messages.transform", sessionID: sid })
        }
      }
    },
    "experimental.chat.system.transform": async (input, output) => {
      log("experimental.chat.system.transform", { sessionID: input.sessionID, model: input.model && input.model.id,
        system_count: output.system.length, system_chars: output.system.join("").length })
      if (process.env.OC_REC_INJECT === "1" && input.sessionID) {
        const st = readState(input.sessionID)
        if (st.pending) {
          output.system.push("[system.transform] " + st.pending)
          log("inject", { via: "experimental.chat.system.transform", sessionID: input.sessionID })
        }
      }
    },
  }
}
