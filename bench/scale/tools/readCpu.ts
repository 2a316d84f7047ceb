// CPU of a mixed replay and of its parts, per operation (`process.cpuUsage`, user + system), in one process:
//   node --import tsx scale/tools/readCpu.ts [ROUNDS] [FILE]     (started in bench/)
// Writes format.ts's agent log (10,000 events) to FILE once (kept when FILE is given and exists), then alternates,
// ROUNDS times: kernel.replay, the floor (bare ordered SELECT + JSON.parse), readEvents of the whole run, readEvents in
// pages of 256 and of 1,024, Verify.verifyEvents. Prints the median CPU of each in ms. For A/B between builds: run it
// on one FILE with the old and the new `dist`, alternated.
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { type Event, EventStore, Kernel, Pricing, ToolRegistry, Verify } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, tenant } from "../../fixtures.js"
import { median } from "../../lib.js"
import { agent, script, TURNS } from "../format.js"

const rounds = Number(process.argv[2] ?? "8")
const filename = process.argv[3] ?? join(mkdtempSync(join(tmpdir(), "artana-replay-cpu-")), "bench.db")
const fresh = !existsSync(filename)
const layer = Layer.provideMerge(
  Kernel.layer({ prices: { "bench-model": Pricing.free } }),
  Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer(script(TURNS)), ToolRegistry.layer([echo]))
)
const cpu = (f: () => void): number => {
  const before = process.cpuUsage()
  f()
  const d = process.cpuUsage(before)
  return (d.user + d.system) / 1000
}
const program = Effect.gen(function*() {
  const kernel = yield* Kernel.Kernel
  const store = yield* EventStore.EventStore
  if (fresh) yield* kernel.execute(agent, { runId: "agent", tenant, input: { turns: TURNS } })
  const Sqlite = SqliteStore.driver()
  const floor = new Sqlite(filename)
  const all = floor.prepare(`SELECT * FROM events WHERE tenant_id = ? AND run_id = ? ORDER BY seq`)
  const times: Record<string, Array<number>> = { replay: [], floor: [], read: [], read256: [], read1024: [], verify: [] }
  const pages = (size: number) =>
    Effect.gen(function*() {
      let from = 1
      for (;;) {
        const page = yield* store.readEvents(tenant.tenantId, "agent", from, size)
        if (page.length < size) return
        from = page[page.length - 1]!.seq + 1
      }
    })
  const run = <A, E>(effect: Effect.Effect<A, E>): A => Effect.runSync(effect)
  for (let round = 0; round <= rounds; round++) {
    const r0 = process.cpuUsage()
    yield* kernel.replay(agent, { tenantId: tenant.tenantId, runId: "agent" })
    const r1 = process.cpuUsage(r0)
    const f = cpu(() => {
      for (const row of all.all(tenant.tenantId, "agent") as Array<{ payload: string }>) JSON.parse(row.payload)
    })
    let events: ReadonlyArray<Event.Event> = []
    const read = cpu(() => {
      events = run(store.readEvents(tenant.tenantId, "agent"))
    })
    const read256 = cpu(() => run(pages(256)))
    const read1024 = cpu(() => run(pages(1024)))
    const verify = cpu(() => {
      if (!Verify.verifyEvents("agent", events).ok) throw new Error("does not verify")
    })
    if (round === 0) continue
    times.replay!.push((r1.user + r1.system) / 1000)
    times.floor!.push(f)
    times.read!.push(read)
    times.read256!.push(read256)
    times.read1024!.push(read1024)
    times.verify!.push(verify)
  }
  floor.close()
  const out = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Number(median(v).toFixed(1))]))
  process.stdout.write(`${JSON.stringify({ ...out, ratio: Number((out.replay! / out.floor!).toFixed(2)) })}\n`)
})
await Effect.runPromise(Effect.scoped(Effect.provide(program, layer)))
