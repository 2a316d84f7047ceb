// CPU of the chain check's material + SHA-256 over a replay's events, two ways alternated in one process: the
// material concatenated (a rope that hashing flattens) and joined from one reused array (flat). Not a bench group.
//   node --import tsx scale/tools/materialCpu.ts [ROUNDS]     (started in bench/)
import { hash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { EventStore, Kernel, Pricing, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, stepsWorkflow, tenant } from "../../fixtures.js"
import { median } from "../../lib.js"
import { agent, script } from "../format.js"

const rounds = Number(process.argv[2] ?? "20")
type Ev = { eventId: string; runId: string; tenantId: string; seq: number; timestamp: number; type: string; stepKey: string; prevHash: string; hash: string; text: string }
// eslint-disable-next-line no-control-regex
const ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/
const quote = (t: string) => (ESCAPED.test(t) ? JSON.stringify(t) : `"${t}"`)
const unquoted = (t: string) => (ESCAPED.test(t) ? JSON.stringify(t).slice(1, -1) : t)
const STORED = "artana:v2:"
const concatenated = () => {
  let runId: string | undefined, runPart = "", tenantId: string | undefined, tenantPart = ""
  const typeParts = new Map<string, string>()
  return (e: Ev) => {
    if (e.runId !== runId) { runId = e.runId; runPart = ',"runId":' + quote(runId) + ',"seq":' }
    if (e.tenantId !== tenantId) { tenantId = e.tenantId; tenantPart = ',"tenantId":' + quote(tenantId) + ',"timestamp":' }
    let typePart = typeParts.get(e.type)
    if (typePart === undefined) { typePart = ',"type":' + quote(e.type) + "}"; typeParts.set(e.type, typePart) }
    return STORED + e.prevHash + '{"eventId":' + quote(e.eventId) + ',"payload":' + e.text + ',"prevHash":' + ('"' + e.prevHash + '"') + runPart +
      String(e.seq) + ',"stepKey":' + quote(e.stepKey) + tenantPart + String(e.timestamp) + typePart
  }
}
const joined = () => {
  let runId: string | undefined, runPart = "", tenantId: string | undefined
  const typeParts = new Map<string, string>()
  const parts = [STORED, "", '{"eventId":"', "", '","payload":', "", ',"prevHash":"', "", "", "", ',"stepKey":"', "", "", "", ""]
  return (e: Ev) => {
    if (e.runId !== runId) { runId = e.runId; runPart = '"' + ',"runId":' + quote(runId) + ',"seq":' }
    if (e.tenantId !== tenantId) { tenantId = e.tenantId; parts[12] = '","tenantId":' + quote(tenantId) + ',"timestamp":' }
    let typePart = typeParts.get(e.type)
    if (typePart === undefined) { typePart = ',"type":' + quote(e.type) + "}"; typeParts.set(e.type, typePart) }
    parts[1] = e.prevHash; parts[3] = unquoted(e.eventId); parts[5] = e.text; parts[7] = e.prevHash; parts[8] = runPart
    parts[9] = String(e.seq); parts[11] = unquoted(e.stepKey); parts[13] = String(e.timestamp); parts[14] = typePart
    const t = parts.join("")
    parts[5] = ""
    return t
  }
}
const dir = mkdtempSync(join(tmpdir(), "artana-material-cpu-"))
try {
  const filename = join(dir, "bench.db")
  const steps = stepsWorkflow("bench.steps")
  const layer = Layer.provideMerge(
    Kernel.layer({ prices: { "bench-model": Pricing.free } }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer(script(2000)), ToolRegistry.layer([echo]))
  )
  const logs = await Effect.runPromise(Effect.scoped(Effect.provide(Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    yield* kernel.execute(agent, { runId: "agent", tenant, input: { turns: 2000 } })
    yield* kernel.execute(steps, { runId: "tools", tenant, input: { n: 5000 } })
    const store = yield* EventStore.EventStore
    return { agent: yield* store.readEvents(tenant.tenantId, "agent"), tools: yield* store.readEvents(tenant.tenantId, "tools") }
  }), layer)))
  const Sqlite = SqliteStore.driver()
  const db = new Sqlite(filename)
  const texts = (runId: string) => (db.prepare(`SELECT payload FROM events WHERE tenant_id = ? AND run_id = ? ORDER BY seq`).all(tenant.tenantId, runId) as Array<{ payload: string }>).map((r) => r.payload)
  const evs = (runId: "agent" | "tools"): Array<Ev> => { const t = texts(runId); return logs[runId].map((e, i) => ({ ...e, text: t[i]! })) }
  const sets = { agent: evs("agent"), tools: evs("tools") }
  db.close()
  const run = (make: () => (e: Ev) => string, events: Array<Ev>) => {
    const m = make()
    const c0 = process.cpuUsage()
    let ok = 0
    for (const e of events) if (hash("sha256", m(e), "hex") === e.hash) ok++
    const c = process.cpuUsage(c0)
    if (ok !== events.length) throw new Error(`${ok} of ${events.length} matched`)
    return (c.user + c.system) / 1000
  }
  const out: Record<string, Array<number>> = { agent_concat: [], agent_join: [], tools_concat: [], tools_join: [] }
  for (let r = 0; r < rounds; r++) {
    for (const set of ["agent", "tools"] as const) {
      if (r % 2 === 0) { out[`${set}_concat`]!.push(run(concatenated, sets[set])); out[`${set}_join`]!.push(run(joined, sets[set])) }
      else { out[`${set}_join`]!.push(run(joined, sets[set])); out[`${set}_concat`]!.push(run(concatenated, sets[set])) }
    }
  }
  console.log(JSON.stringify(Object.fromEntries(Object.entries(out).map(([k, v]) => [k, { median: Math.round(median(v) * 10) / 10, least: Math.round(Math.min(...v) * 10) / 10 }]))))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
