// continue_as_new_handover_ms: what `ctx.continueAsNew` costs, from the call to the first line of the successor's
//   code (encoding the input, the handover transaction that ends the run and starts its successor, the lineage's
//   spend read for the successor's budget), on a SQLite file at the store's durability, against one durable step
//   (`ctx.step`, one commit) taken in each run of the same chain: interleaved one to one. The ratio is reported.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { Kernel, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "../fixtures.js"
import { median, nowUs, progress, type Row } from "../lib.js"

const RUNS = 400
const WARMUP = 20

const p90 = (xs: ReadonlyArray<number>): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)] ?? 0

export default async (): Promise<ReadonlyArray<Row>> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-handover-"))
  try {
    const handovers: Array<number> = []
    const steps: Array<number> = []
    // Set by a run just before it continues; read by its successor's first line.
    let handedOverAt: number | undefined
    const chain = Workflow.make({
      name: "bench.handover",
      input: Schema.Number,
      output: Schema.Number,
      run: (n, ctx) =>
        Effect.gen(function*() {
          if (handedOverAt !== undefined && n > WARMUP) handovers.push(nowUs() - handedOverAt)
          const before = nowUs()
          yield* ctx.step("work", Effect.succeed(n), Schema.Number)
          if (n > WARMUP) steps.push(nowUs() - before)
          if (n >= RUNS + WARMUP) return n
          handedOverAt = nowUs()
          return yield* ctx.continueAsNew(n + 1)
        })
    })
    const layer = Layer.provideMerge(
      Kernel.layer(),
      Layer.mergeAll(SqliteStore.layer({ filename: join(dir, "bench.db") }), ScriptedModel.layer([]), ToolRegistry.layer([]))
    )
    progress(`continue_as_new_handover_ms: a chain of ${RUNS + WARMUP} runs, one step and one handover each`)
    await Effect.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(chain, { runId: "handover", tenant, input: 0 })).pipe(Effect.provide(layer)))
    const handover = median(handovers) / 1000
    const step = median(steps) / 1000
    return [{
      metric: "continue_as_new_handover_ms",
      value: handover,
      unit: "ms",
      baseline: "one durable step (ctx.step, one commit), same chain, interleaved",
      baselineValue: step,
      ratio: handover / step,
      detail: { handovers: handovers.length, handover_p90_ms: p90(handovers) / 1000, step_p90_ms: p90(steps) / 1000 }
    }]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
