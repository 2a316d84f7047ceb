// CPU per durable step (not part of `pnpm bench kernel`; run by hand with `npx tsx kernel/stepCpu.ts [steps] [store] [rounds] [kinds] [synchronous]`
// in bench/): process.cpuUsage over many steps of one run, for a tool step (`ctx.tool`, two-phase), a one-commit tool
// step and a memoized `ctx.step`, on a SQLite file at synchronous=NORMAL ("sqlite"; `full` as the fifth argument: FULL) or
// the in-memory store ("memory"). At FULL, wall minus CPU is the time a step waits for its commits' fsyncs.
// Each kind runs warm-up steps first, then STEPS measured ones; the figure is (user + system) CPU / steps, in us (the system share printed too: an fsync is system CPU).
// Profile it with `node --cpu-prof --import tsx kernel/stepCpu.ts`.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, echoOneCommit, tenant } from "../fixtures.js"

const STEPS = Number(process.argv[2] ?? 5000)
const STORE = process.argv[3] ?? "sqlite"
const ROUNDS = Number(process.argv[4] ?? 3)
const SYNCHRONOUS = process.argv[6] === "full" ? "full" : "normal"

const allKinds = ["tool", "tool_one_commit", "step"] as const
type Kind = typeof allKinds[number]
const kinds: ReadonlyArray<Kind> = process.argv[5] === undefined || process.argv[5] === "all" ? allKinds : allKinds.filter((k) => process.argv[5]!.split(",").includes(k))
const Value = Schema.Struct({ ok: Schema.Boolean, i: Schema.Number })

const bench = Workflow.make({
  name: "bench.stepCpu",
  input: Schema.Struct({ n: Schema.Number, kind: Schema.Literal(...allKinds) }),
  output: Schema.Number,
  run: ({ kind, n }, ctx) =>
    Effect.gen(function*() {
      for (let i = 0; i < n; i++) {
        if (kind === "tool") yield* ctx.tool(echo, { i, note: "a durable step of the benchmark" })
        else if (kind === "tool_one_commit") yield* ctx.tool(echoOneCommit, { i, note: "a durable step of the benchmark" })
        else yield* ctx.step(`s`, Effect.succeed({ ok: true, i }), Value)
      }
      return n
    })
})

const dir = mkdtempSync(join(tmpdir(), "artana-stepcpu-"))
try {
  const store = STORE === "memory" ? EventStore.layerMemory : SqliteStore.layer({ filename: join(dir, "cpu.db"), synchronous: SYNCHRONOUS })
  const layer = Layer.provideMerge(Kernel.layer(), Layer.mergeAll(store, ScriptedModel.layer([]), ToolRegistry.layer([echo, echoOneCommit])))
  const program = Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const results: Record<string, Array<number>> = {}
    const walls: Record<string, Array<number>> = {}
    const systems: Record<string, Array<number>> = {}
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of kinds) {
        yield* kernel.execute(bench, { runId: `warm-${kind}-${round}`, tenant, input: { n: 500, kind } })
        const c0 = process.cpuUsage()
        const t0 = performance.now()
        yield* kernel.execute(bench, { runId: `run-${kind}-${round}`, tenant, input: { n: STEPS, kind } })
        const wall = (performance.now() - t0) * 1000 / STEPS
        const c1 = process.cpuUsage(c0)
        ;(results[kind] ??= []).push((c1.user + c1.system) / STEPS)
        ;(systems[kind] ??= []).push(c1.system / STEPS)
        ;(walls[kind] ??= []).push(wall)
      }
    }
    return { results, systems, walls }
  })
  const { results, systems, walls } = await Effect.runPromise(Effect.provide(program, layer))
  for (const kind of kinds) {
    const all = results[kind as Kind]!.map((v) => v.toFixed(1))
    const min = Math.min(...results[kind as Kind]!)
    const wall = walls[kind as Kind]!.map((v) => v.toFixed(1))
    const system = systems[kind as Kind]!.map((v) => v.toFixed(1))
    console.log(`${STORE}${STORE === "sqlite" ? ` ${SYNCHRONOUS}` : ""} ${kind}: ${min.toFixed(1)} us CPU per step (rounds: ${all.join(", ")}; of which system: ${system.join(", ")}; wall: ${wall.join(", ")})`)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
