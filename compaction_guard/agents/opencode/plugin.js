// compaction-resilience-guard: checks every compaction summary opencode stores, and tells the model
// when one failed its check. Written by `compaction-guard install opencode`;
// `compaction-guard uninstall opencode` removes this file and nothing else.
//
// - When opencode has stored a summary (`message.updated`, an assistant message with `summary: true`
//   and `finish` or `error` set), it runs `compaction-guard hook opencode` once, bounded in time: the
//   guard reads the summary and the conversation it replaced from opencode's database (read-only),
//   checks it and records the verdict (`compaction-guard --agent opencode --status`).
// - After a failed one, the session's next model call gets the guard's warning as a system message,
//   once; every later call of that session, while that summary is its newest, a one-line note.
//   Not the compaction call itself.
// Nothing here throws into opencode: a problem goes to the guard's hook.log.
import { spawnSync } from "child_process"
import fs from "fs"
import path from "path"

const GUARD = __GUARD__
const STATE = __STATE__
const LIMIT_MS = 15000

function markPath(session) {
  return path.join(STATE, "failed", session.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 120) || "_")
}

function log(line) {
  try {
    fs.mkdirSync(STATE, { recursive: true })
    fs.appendFileSync(path.join(STATE, "hook.log"), `${new Date().toISOString()} plugin: ${line}\n`)
  } catch (e) {}
}

function guard(payload) {
  try {
    const r = spawnSync(GUARD[0], GUARD.slice(1), {
      input: JSON.stringify(payload), timeout: LIMIT_MS, killSignal: "SIGKILL", encoding: "utf8",
      stdio: ["pipe", "pipe", "ignore"], maxBuffer: 1 << 20,
    })
    if (r.error || r.status !== 0) log(`the guard did not answer (${r.error || "status " + r.status})`)
    return r.stdout ? JSON.parse(r.stdout) : {}
  } catch (e) {
    log(String(e))
    return {}
  }
}

export const CompactionResilienceGuard = async () => {
  const checked = new Set()
  const compacting = new Set()
  const warnings = new Map()
  return {
    "experimental.session.compacting": async (input) => {
      try { if (input && input.sessionID) compacting.add(input.sessionID) } catch (e) {}
    },
    event: async ({ event }) => {
      try {
        if (event.type === "session.compacted") {
          compacting.delete(event.properties && event.properties.sessionID)
          return
        }
        if (event.type !== "message.updated") return
        const info = event.properties && event.properties.info
        if (!info || info.role !== "assistant" || info.summary !== true || !(info.finish || info.error)) return
        compacting.delete(info.sessionID)
        if (checked.has(info.id)) return
        checked.add(info.id)
        const verdict = guard({ event: "compacted", session_id: info.sessionID, message_id: info.id })
        if (typeof verdict.warning === "string" && verdict.warning) warnings.set(info.sessionID, verdict.warning)
        else warnings.delete(info.sessionID)
      } catch (e) { log(String(e)) }
    },
    "experimental.chat.system.transform": async (input, output) => {
      try {
        const session = input && input.sessionID
        if (!session || compacting.has(session)) return
        const mark = markPath(session)
        if (!fs.existsSync(mark)) return
        const m = JSON.parse(fs.readFileSync(mark, "utf8"))
        let text = m.told ? "" : warnings.get(session) || guard({ event: "warning", session_id: session }).warning
        if (text) {
          fs.writeFileSync(mark, JSON.stringify({ ...m, told: true }))
          warnings.delete(session)
        } else {
          text = m.note
        }
        if (typeof text === "string" && text) output.system.push(text)
      } catch (e) { log(String(e)) }
    },
  }
}
