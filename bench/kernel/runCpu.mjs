// CPU of a run's start and end (by hand, in bench/: `node kernel/runCpu.mjs MODE ROUNDS`; plain JS on the built
// dist, so a copy of bench/ beside an older build measures that build, and `node --cpu-prof` profiles it).
// MODE seq: SEQ runs of STEPS steps one after the other, SQLite NORMAL, CPU per run (us).
// MODE conc: 100 runs x 10 steps at once, SQLite FULL, CPU per durable step (us) and steps/s, as concurrent_100.
// Arguments: MODE ROUNDS [STEPS] [SEQ]; a warm-up round first. KEEP_DB=1 keeps the file and prints its path.
// A/B against another build: copy packages/core and packages/store-sqlite (with dist), bench/node_modules and this
// file into a directory whose node_modules links to this repo's, and run both copies alternately.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { performance } from "node:perf_hooks"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const MODE = process.argv[2] ?? "seq"
const ROUNDS = Number(process.argv[3] ?? 5)
const STEPS = Number(process.argv[4] ?? (MODE === "seq" ? 0 : 10))
const SEQ = Number(process.argv[5] ?? 1000)
const tenant = Tenant.TenantContext.make({ tenantId: "bench", capabilities: [], budgetUsdLimit: 1 })
const echo = Tool.make({
  name: "echo",
  description: "Returns its input",
  parameters: Schema.Struct({ i: Schema.Number, note: Schema.String }),
  idempotent: true,
  handler: (args) => Effect.succeed({ ok: true, i: args.i })
})
const steps = Workflow.make({
  name: "bench.runCpu",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  run: ({ n }, ctx) =>
    Effect.gen(function*() {
      for (let i = 0; i < n; i++) yield* ctx.tool(echo, { i, note: "a durable step of the benchmark" })
      return n
    })
})

const dir = mkdtempSync(join(tmpdir(), "artana-runcpu-"))
const runtime = ManagedRuntime.make(Layer.provideMerge(
  Kernel.layer(),
  Layer.mergeAll(SqliteStore.layer({ filename: join(dir, "cpu.db"), synchronous: MODE === "seq" ? "normal" : "full" }), ScriptedModel.layer([]), ToolRegistry.layer([echo]))
))
const one = (runId) => runtime.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(steps, { runId, tenant, input: { n: STEPS } })))
const cpu = []
const walls = []
try {
  for (let r = -1; r < ROUNDS; r++) {
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    if (MODE === "seq") {
      for (let i = 0; i < SEQ; i++) await one(`s${r}-${i}`)
    } else {
      await Promise.all(Array.from({ length: 100 }, (_, i) => one(`c${r}-${i}`)))
    }
    const c = process.cpuUsage(c0)
    const per = MODE === "seq" ? SEQ : 100 * STEPS
    if (r >= 0) {
      cpu.push((c.user + c.system) / per)
      walls.push(MODE === "seq" ? (performance.now() - t0) * 1000 / per : per / ((performance.now() - t0) / 1000))
    }
  }
} finally {
  await runtime.dispose()
  if (process.env.KEEP_DB === undefined) rmSync(dir, { recursive: true, force: true })
  else console.log(join(dir, "cpu.db"))
}
const sorted = [...cpu].sort((a, b) => a - b)
console.log(`${MODE} steps=${STEPS}: CPU us per ${MODE === "seq" ? "run" : "step"} min ${sorted[0].toFixed(1)} median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} (rounds ${cpu.map((v) => v.toFixed(0)).join(", ")}); ${MODE === "seq" ? "wall us/run" : "steps/s"} ${walls.map((v) => v.toFixed(0)).join(", ")}`)
