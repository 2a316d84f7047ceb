// Effect nodes a durable tool step runs (by hand, in bench/: `node kernel/opCount.mjs [tool|tool_one_commit] [sqlite|memory]`):
// a supervisor with op supervision on counts every node the runtime evaluates during one run of 1,000 steps, less
// those of a run of none, per step, by kind of node (the function it runs, for the kinds that hold one). Deterministic,
// unlike CPU time on a loaded machine: the figure to compare builds with (a copy of bench/ beside an older build
// measures that build, see runCpu.mjs). Plain JS on the built dist.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime, RuntimeFlags, RuntimeFlagsPatch, Schema, Supervisor } from "effect"
import { EventStore, Kernel, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant, tools } from "./stepTools.mjs"

const KIND = process.argv[2] ?? "tool"
const STORE = process.argv[3] ?? "sqlite"
const N = 1000
const steps = Workflow.make({
  name: "bench.opCount",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  run: ({ n }, ctx) =>
    Effect.gen(function*() {
      for (let i = 0; i < n; i++) yield* ctx.tool(tools[KIND], { i, note: "a durable step of the benchmark" })
      return n
    })
})

const text = (f) => String(f).slice(0, 100).replace(/\s+/g, " ")
const label = (e) => {
  switch (e._op) {
    case "Sync":
    case "WithRuntime":
    case "Async":
      return `${e._op} ${text(e.effect_instruction_i0)}`
    case "OnSuccess":
    case "OnFailure":
      return `${e._op} ${text(e.effect_instruction_i1)}`
    case "OnSuccessAndFailure":
      return `${e._op} success: ${text(e.effect_instruction_i2)}`
    case "Commit":
      return `${e._op} ${text(e.commit)}`
    default:
      return e._op
  }
}
let counting = false
const counts = new Map()
class Counter extends Supervisor.AbstractSupervisor {
  value = Effect.void
  onEffect(_fiber, effect) {
    if (!counting) return
    const k = label(effect)
    counts.set(k, (counts.get(k) ?? 0) + 1)
  }
}
const supervisor = new Counter()
const dir = mkdtempSync(join(tmpdir(), "artana-opcount-"))
const store = STORE === "memory" ? EventStore.layerMemory : SqliteStore.layer({ filename: join(dir, "ops.db"), synchronous: "normal" })
const runtime = ManagedRuntime.make(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(store, ScriptedModel.layer([]), ToolRegistry.layer(Object.values(tools)))))
const run = async (runId, n) => {
  counts.clear()
  counting = true
  await runtime.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(steps, { runId, tenant, input: { n } })).pipe(
    Effect.supervised(supervisor),
    Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
  ))
  counting = false
  return new Map(counts)
}
try {
  await run("warm", 50)
  const none = await run("none", 0)
  const many = await run("many", N)
  const sum = (m) => [...m.values()].reduce((a, b) => a + b, 0)
  console.log(`${STORE} ${KIND}: ${((sum(many) - sum(none)) / N).toFixed(1)} Effect nodes per step (a run of no steps: ${sum(none)})`)
  const rows = [...many].map(([k, v]) => [k, (v - (none.get(k) ?? 0)) / N]).filter(([, v]) => v >= 0.5).sort((a, b) => b[1] - a[1])
  for (const [k, v] of rows) console.log(`${v.toFixed(1).padStart(6)}  ${k}`)
} finally {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
}
