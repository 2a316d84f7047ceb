// CPU of the store's read of format.ts's mixed agent log (10,000 events) as a replay reads it, with its
// `ModelRequested` payloads left as stored text (core's `internal/lazyPayload.ts`), against the same read decoding
// every payload (in tools/, which `pnpm bench scale` does not run as a group). Writes the log once, then ROUNDS rounds
// of `readEvents` in pages of 512, the two kinds in the order A B B A, CPU by `process.cpuUsage`. Prints the median and
// least of each (ms), one JSON line. The flag a replay sets is core's internal `FiberRef`, found by its global key.
//   node --import tsx scale/tools/lazyReadCpu.ts [ROUNDS]     (started in bench/)
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, FiberRef, Layer } from "effect"
import { globalValue } from "effect/GlobalValue"
import { EventStore, Kernel, Pricing, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, tenant } from "../../fixtures.js"
import { median } from "../../lib.js"
import { agent, script, TURNS } from "../format.js"

const rounds = Number(process.argv[2] ?? "40")
const replayRead = globalValue("@artana/core/lazyPayload/replayRead", () => FiberRef.unsafeMake(false))

const dir = mkdtempSync(join(tmpdir(), "artana-lazy-read-"))
const filename = join(dir, "bench.db")
try {
  const layer = Layer.provideMerge(
    Kernel.layer({ prices: { "bench-model": Pricing.free } }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer(script(TURNS)), ToolRegistry.layer([echo]))
  )
  await Effect.runPromise(Effect.scoped(Effect.provide(
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(agent, { runId: "agent", tenant, input: { turns: TURNS } })
      const store = yield* EventStore.EventStore
      const pages = Effect.gen(function*() {
        for (let from = 1;;) {
          const page = yield* store.readEvents(tenant.tenantId, "agent", from, 512)
          if (page.length === 0) return
          from = page[page.length - 1]!.seq + 1
        }
      })
      const read = (lazy: boolean) =>
        Effect.suspend(() => {
          const c0 = process.cpuUsage()
          return Effect.map(Effect.locally(pages, replayRead, lazy), () => {
            const c = process.cpuUsage(c0)
            return (c.user + c.system) / 1000
          })
        })
      for (let i = 0; i < 4; i++) yield* Effect.zip(read(true), read(false))
      const lazy: Array<number> = []
      const eager: Array<number> = []
      for (let round = 0; round < rounds; round++) {
        const on = round % 4 === 1 || round % 4 === 2
        ;(on ? lazy : eager).push(yield* read(on))
      }
      const m = (xs: Array<number>) => Math.round(median(xs) * 10) / 10
      console.log(JSON.stringify({ lazy_ms: m(lazy), lazy_min_ms: Math.min(...lazy), eager_ms: m(eager), eager_min_ms: Math.min(...eager) }))
    }),
    layer
  )))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
