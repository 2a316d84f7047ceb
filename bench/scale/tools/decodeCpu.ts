// CPU of turning the mixed agent log's stored payloads into events, by event type (in tools/, which `pnpm bench scale`
// does not run as a group): writes format.ts's agent log (10,000 events), reads each row's type and payload text with
// the store's driver, then alternates ROUNDS times, per type: `JSON.parse` of the texts, and `Event.decodeStoredPayload`
// (the payload guard a store's read runs) of the parsed values. Prints, per type, the events, their mean payload text
// length, the median and least CPU (`process.cpuUsage`, user + system) of each per replay's worth of events, and how
// many payloads the guard vouched for (the rest took the schema's own decoding). Shows what a lazily parsed or lazily
// guarded payload type could save a replay at most.
//   node --import tsx scale/tools/decodeCpu.ts [ROUNDS]     (started in bench/)
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { Event, Kernel, Pricing, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, tenant } from "../../fixtures.js"
import { median } from "../../lib.js"
import { agent, script, TURNS } from "../format.js"

const rounds = Number(process.argv[2] ?? "15")
const Rows = Schema.Array(Schema.Struct({ type: Schema.String, payload: Schema.String }))

const cpuMs = (f: () => void): number => {
  const c0 = process.cpuUsage()
  f()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000
}

const dir = mkdtempSync(join(tmpdir(), "artana-decode-cpu-"))
const filename = join(dir, "bench.db")
try {
  const layer = Layer.provideMerge(
    Kernel.layer({ prices: { "bench-model": Pricing.free } }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer(script(TURNS)), ToolRegistry.layer([echo]))
  )
  await Effect.runPromise(Effect.scoped(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(agent, { runId: "agent", tenant, input: { turns: TURNS } })), layer)))
  const Sqlite = SqliteStore.driver()
  const db = new Sqlite(filename)
  const rows = Schema.decodeUnknownSync(Rows)(db.prepare(`SELECT type, payload FROM events WHERE tenant_id = ? AND run_id = ? ORDER BY seq`).all(tenant.tenantId, "agent"))
  db.close()
  const types = [...new Set(rows.map((r) => r.type))]
  const out: Array<Record<string, unknown>> = []
  for (const type of types) {
    const texts = rows.filter((r) => r.type === type).map((r) => r.payload)
    const parsed: Array<unknown> = texts.map((t) => JSON.parse(t))
    let vouched = 0
    for (const value of parsed) {
      const decoded = Event.decodeStoredPayload(type, value)
      if (decoded._tag === "Right" && decoded.right === value) vouched++
    }
    const parse: Array<number> = []
    const guard: Array<number> = []
    for (let round = 0; round < rounds; round++) {
      const p = () => {
        for (const t of texts) JSON.parse(t)
      }
      const g = () => {
        for (const value of parsed) Event.decodeStoredPayload(type, value)
      }
      if (round % 2 === 0) {
        parse.push(cpuMs(p))
        guard.push(cpuMs(g))
      } else {
        guard.push(cpuMs(g))
        parse.push(cpuMs(p))
      }
    }
    const r = (x: number) => Math.round(x * 100) / 100
    out.push({
      type,
      events: texts.length,
      mean_chars: Math.round(texts.reduce((n, t) => n + t.length, 0) / texts.length),
      parse_ms: r(median(parse)),
      parse_min_ms: r(Math.min(...parse)),
      guard_ms: r(median(guard)),
      guard_min_ms: r(Math.min(...guard)),
      vouched
    })
  }
  for (const row of out) console.log(JSON.stringify(row))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
