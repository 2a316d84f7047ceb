// CPU of a replay against its floor, for A/B work on the replay path (in tools/, which `pnpm bench scale` does not
// run as a group): writes the mixed agent log of `replay_mixed_10k_vs_floor` (format.ts) and the tool-only run of
// `replay_10k_vs_floor` (5,000 `ctx.tool` steps) to one SQLite file, then, after WARMUP replays of each, ROUNDS rounds
// of: replay of each / the bare ordered SELECT + JSON.parse floor, CPU by `process.cpuUsage` (user + system). Prints
// the median CPU of each and the ratio, one JSON line.
//   node --import tsx scale/tools/replayCpu.ts [ROUNDS] [WARMUP]     (started in bench/)
// PROFILE=FILE writes a CPU profile of the measured rounds (`node:inspector`, 200 us sampling) to FILE.
// ONLY=agent|tools replays only that run, and no floor (for profiles). In place of the replay, and no floor: ONLY=read
// reads the agent run through the store's readEvents in pages of 512 (no replay, no verification), ONLY=readsync the
// same with a fiber per page (Effect.runSync), ONLY=barepages the driver's bare statement in pages of 512 + JSON.parse.
// GC_EACH=1 (with node --expose-gc) runs a full collection before each round, outside the measured span.
// SWITCH=NAME (with ONLY=agent): the flag NAME set in half the rounds (A B B A), their replays reported as switched_mixed_*.
// GC_MARKS=1 prints "GC_MARK start/end" around the measured rounds (to cut a --trace-gc-nvp log).
// ALLOC_PROFILE=FILE writes a sampling heap profile of everything the measured rounds allocated (collected or not);
// with SURVIVORS=1, of what outlived a young collection only (what the collector copied and promoted).
// mixed_main_ms / mixed_main_min_ms: the main thread's own CPU of the mixed replays (Linux), without the verify worker's.
// Run it alternately from two builds of core (old, new) to compare them; `--cpu-prof` profiles the built `dist`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { performance, PerformanceObserver } from "node:perf_hooks"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { EventStore, Kernel, Pricing, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, stepsWorkflow, tenant } from "../../fixtures.js"
import { median } from "../../lib.js"
import { agent, script } from "../format.js"

const rounds = Number(process.argv[2] ?? "10")
const warmup = Number(process.argv[3] ?? "3")
const TURNS = 2000
const STEPS = 5000

// The collector's work during the measured replays: young collections (scavenges), their wall time, and the rest.
const gc = { scavenges: 0, scavengeMs: 0, otherMs: 0, from: Infinity, to: Infinity }
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.startTime < gc.from || entry.startTime > gc.to) continue
    const kind = (entry as { readonly detail?: { readonly kind?: number } }).detail?.kind
    if (kind === 1) {
      gc.scavenges++
      gc.scavengeMs += entry.duration
    } else gc.otherMs += entry.duration
  }
}).observe({ entryTypes: ["gc"] })

// The main thread's own CPU time in ms (Linux: the first field of /proc/thread-self/schedstat, ns on the CPU), or NaN.
// `process.cpuUsage` counts every thread of the process: the verify worker's hashing and the collector's helpers too.
const mainThreadMs = (): number => {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1e6
  } catch {
    return Number.NaN
  }
}
const mainOfMixed: Array<number> = []
const mainOfSwitched: Array<number> = []

const cpuMs = (f: () => void): number => {
  const c0 = process.cpuUsage()
  f()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000
}

const dir = mkdtempSync(join(tmpdir(), "artana-replay-cpu-"))
const filename = join(dir, "bench.db")
try {
  const steps = stepsWorkflow("bench.steps")
  const layer = Layer.provideMerge(
    Kernel.layer({ prices: { "bench-model": Pricing.free } }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer(script(TURNS)), ToolRegistry.layer([echo]))
  )
  const program = Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    yield* kernel.execute(agent, { runId: "agent", tenant, input: { turns: TURNS } })
    yield* kernel.execute(steps, { runId: "tools", tenant, input: { n: STEPS } })
  })
  await Effect.runPromise(Effect.scoped(Effect.provide(program, layer)))
  const replayLayer = Layer.provideMerge(
    Kernel.layer({ prices: { "bench-model": Pricing.free } }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([echo]))
  )
  const Sqlite = SqliteStore.driver()
  const floor = new Sqlite(filename)
  const all = floor.prepare(`SELECT * FROM events WHERE tenant_id = ? AND run_id = ? ORDER BY seq`)
  const pageStmt = floor.prepare(`SELECT * FROM events WHERE tenant_id = ? AND run_id = ? AND seq >= ? ORDER BY seq LIMIT 512`)
  const bare = (runId: string) => {
    let parsed = 0
    for (const row of all.all(tenant.tenantId, runId) as Array<{ payload: string }>) parsed += JSON.parse(row.payload) === null ? 0 : 1
    if (parsed === 0) throw new Error("the floor read nothing")
  }
  const results = await Effect.runPromise(Effect.scoped(Effect.provide(
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      // The store's read alone, in the replay's pages (ONLY=read): what the read keeps alive across young collections.
      const readPages = (runId: string): Effect.Effect<void, unknown> =>
        Effect.gen(function*() {
          let from = 1
          for (;;) {
            const page = yield* store.readEvents(tenant.tenantId, runId, from, 512)
            if (page.length === 0) return
            from = page[page.length - 1]!.seq + 1
          }
        })
      // The same in plain loops: a fiber per page (ONLY=readsync), and the driver's bare statement in pages of 512 +
      // JSON.parse, nothing kept (ONLY=barepages).
      const readSync = () => {
        for (let from = 1;;) {
          const page = Effect.runSync(store.readEvents(tenant.tenantId, "agent", from, 512))
          if (page.length === 0) return
          from = page[page.length - 1]!.seq + 1
        }
      }
      const barePages = () => {
        for (let from = 1;;) {
          const rows = pageStmt.all(tenant.tenantId, "agent", from) as Array<{ seq: number; payload: string }>
          if (rows.length === 0) return
          for (const row of rows) JSON.parse(row.payload)
          from = rows[rows.length - 1]!.seq + 1
        }
      }
      const cpuOf = (effect: Effect.Effect<void, unknown>) =>
        Effect.suspend(() => {
          const c0 = process.cpuUsage()
          return Effect.map(effect, () => {
            const c = process.cpuUsage(c0)
            return (c.user + c.system) / 1000
          })
        })
      const completed = (runId: string) => (r: { readonly status: string }) =>
        r.status === "completed" ? Effect.void : Effect.dieMessage(`replay of ${runId} ended ${r.status}`)
      const replay = (runId: "agent" | "tools"): Effect.Effect<void, unknown> =>
        runId === "agent"
          ? Effect.flatMap(kernel.replay(agent, { tenantId: tenant.tenantId, runId }), completed(runId))
          : Effect.flatMap(kernel.replay(steps, { tenantId: tenant.tenantId, runId }), completed(runId))
      const timed = (runId: "agent" | "tools", main = mainOfMixed) =>
        Effect.suspend(() => {
          const t0 = mainThreadMs()
          return Effect.tap(cpuOf(replay(runId)), () => {
            if (runId === "agent") main.push(mainThreadMs() - t0)
          })
        })
      for (let i = 0; i < warmup; i++) {
        yield* replay("agent")
        yield* replay("tools")
      }
      const profile = process.env["PROFILE"]
      const session = profile === undefined ? undefined : new Session()
      if (session !== undefined) {
        session.connect()
        yield* Effect.promise(async () => {
          await session.post("Profiler.enable")
          await session.post("Profiler.setSamplingInterval", { interval: 200 })
          await session.post("Profiler.start")
        })
      }
      const allocProfile = process.env["ALLOC_PROFILE"]
      const heap = allocProfile === undefined ? undefined : new Session()
      if (heap !== undefined) {
        heap.connect()
        yield* Effect.promise(() =>
          heap.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env["SURVIVORS"] === undefined })
        )
      }
      const out = { switched: [] as Array<number>, mixed: [] as Array<number>, mixedFloor: [] as Array<number>, tools: [] as Array<number>, toolsFloor: [] as Array<number> }
      const only = process.env["ONLY"]
      gc.from = performance.now()
      if (process.env["GC_MARKS"] !== undefined) console.log("GC_MARK start")
      for (let round = 0; round < rounds; round++) {
        // GC_EACH=1 (with node --expose-gc): a full collection before each round, out of the measured span.
        const full = (globalThis as { gc?: () => void }).gc
        if (process.env["GC_EACH"] !== undefined && full !== undefined) {
          gc.to = performance.now()
          full()
          gc.from = performance.now()
        }
        if (only === "read" || only === "readsync" || only === "barepages") {
          out.mixed.push(only === "read" ? yield* cpuOf(readPages("agent")) : cpuMs(only === "readsync" ? readSync : barePages))
          continue
        }
        // SWITCH=NAME: the environment flag NAME set ("1") in rounds 1, 2, 5, 6, ... (A B B A: a round's place after a
        // collection favours neither side), unset in the others, and the mixed replays of each side reported apart (a
        // temporary variant of a build that reads the flag, A/B within one process).
        const flag = process.env["SWITCH"]
        if (flag !== undefined) {
          const on = round % 4 === 1 || round % 4 === 2
          if (on) process.env[flag] = "1"
          else delete process.env[flag]
          if (on) {
            out.switched.push(yield* timed("agent", mainOfSwitched))
            continue
          }
        }
        if (only !== "tools") out.mixed.push(yield* timed("agent"))
        if (only === undefined) out.mixedFloor.push(cpuMs(() => bare("agent")))
        if (only !== "agent") out.tools.push(yield* timed("tools"))
        if (only === undefined) out.toolsFloor.push(cpuMs(() => bare("tools")))
      }
      gc.to = performance.now()
      if (process.env["GC_MARKS"] !== undefined) console.log("GC_MARK end")
      // The observer is told of collections after them.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
      if (heap !== undefined && allocProfile !== undefined) {
        const taken = yield* Effect.promise(() => heap.post("HeapProfiler.stopSampling"))
        writeFileSync(allocProfile, JSON.stringify(taken.profile))
        heap.disconnect()
      }
      if (session !== undefined && profile !== undefined) {
        const taken = yield* Effect.promise(() => session.post("Profiler.stop"))
        writeFileSync(profile, JSON.stringify(taken.profile))
        session.disconnect()
      }
      return out
    }),
    replayLayer
  )))
  floor.close()
  const m = (xs: Array<number>) => Math.round(median(xs) * 10) / 10
  console.log(JSON.stringify({
    mixed_ms: m(results.mixed),
    mixed_floor_ms: m(results.mixedFloor),
    mixed_ratio: Math.round(median(results.mixed) / median(results.mixedFloor) * 100) / 100,
    tools_ms: m(results.tools),
    tools_floor_ms: m(results.toolsFloor),
    tools_ratio: Math.round(median(results.tools) / median(results.toolsFloor) * 100) / 100,
    mixed_min_ms: Math.min(...results.mixed),
    // The main thread's CPU of the mixed replays (the worker's hashing left out), median and least.
    mixed_main_ms: m(mainOfMixed),
    mixed_main_min_ms: Math.round(Math.min(...mainOfMixed) * 10) / 10,
    ...(results.switched.length === 0 ? {} : {
      switched_mixed_ms: m(results.switched),
      switched_mixed_min_ms: Math.min(...results.switched),
      switched_main_ms: m(mainOfSwitched),
      switched_main_min_ms: Math.round(Math.min(...mainOfSwitched) * 10) / 10
    }),
    tools_min_ms: Math.min(...results.tools),
    // Per measured round (its replays and floors).
    gc_scavenges_per_round: Math.round(gc.scavenges / rounds * 10) / 10,
    gc_scavenge_ms_per_round: Math.round(gc.scavengeMs / rounds * 10) / 10,
    gc_other_ms_per_round: Math.round(gc.otherMs / rounds * 10) / 10
  }))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
