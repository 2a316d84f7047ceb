// step_vs_floor_normal (part of `pnpm bench kernel`): one durable tool step (two-phase: ToolRequested committed
// before the handler, ToolCompleted after) on a store opened with `synchronous: "normal"` / two bare INSERT+COMMITs of
// the very rows the step wrote, into a twin table of the same file at synchronous=NORMAL (WAL). As step_vs_floor,
// on a file of its own: the floor runs inside the workflow right after each step, so the two are interleaved one to one.
// At NORMAL a commit does not wait for the disk, so the ratio is the CPU a step costs over the bare statements'.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { Kernel, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, tenant } from "../fixtures.js"
import { type BenchResult, median, nowUs, progress } from "../lib.js"

const STEPS = 3000
const WARMUP = 200

export const normal = async (): Promise<BenchResult["rows"][number]> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-normal-"))
  const filename = join(dir, "bench.db")
  const layer = Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(SqliteStore.layer({ filename, synchronous: "normal" }), ScriptedModel.layer([]), ToolRegistry.layer([echo]))
  )
  const Sqlite = SqliteStore.driver()
  const floor = new Sqlite(filename)
  try {
    floor.pragma("journal_mode = WAL")
    floor.pragma("synchronous = NORMAL")
    const stepTimes: Array<number> = []
    const floorTimes: Array<number> = []
    const program = Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      // Creates the store's tables, then the floor's twin table with the same columns.
      yield* kernel.callTool({ runId: "warm", tenant, tool: "echo", args: { i: 0, note: "warm" } })
      const table = (floor.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%events'`).get() as { name: string }).name
      floor.exec(`CREATE TABLE floor_events AS SELECT * FROM ${table} WHERE 0`)
      floor.exec(`CREATE UNIQUE INDEX floor_pk ON floor_events (run_id, seq)`)
      // By the events' key (tenant, run, seq): a read by run_id alone scans the whole table, and that scan, between two
      // measured steps, evicted the CPU's caches and doubled the next step's CPU (measured: 200 against 90 us at NORMAL).
      const lastTwo = floor.prepare(`SELECT * FROM ${table} WHERE tenant_id = ? AND run_id = ? ORDER BY seq DESC LIMIT 2`)
      const columns = lastTwo.columns().map((c) => c.name)
      const insert = floor.prepare(`INSERT INTO floor_events (${columns.join(",")}) VALUES (${columns.map(() => "?").join(",")})`)
      progress(`step_vs_floor_normal: ${STEPS} durable tool steps at synchronous=NORMAL, each followed by its floor`)
      const steps = Workflow.make({
        name: "bench.steps.normal",
        input: Schema.Struct({ n: Schema.Number }),
        output: Schema.Number,
        run: ({ n }, ctx) =>
          Effect.gen(function*() {
            for (let i = 0; i < n; i++) {
              const t0 = nowUs()
              yield* ctx.tool(echo, { i, note: "a durable step of the benchmark" })
              const t1 = nowUs()
              const rows = (lastTwo.all(tenant.tenantId, ctx.runId) as Array<Record<string, unknown>>).reverse()
              const t2 = nowUs()
              for (const row of rows) insert.run(...columns.map((c) => (c === "run_id" ? `floor-${String(row[c])}` : row[c])))
              const t3 = nowUs()
              if (i >= WARMUP) {
                stepTimes.push(t1 - t0)
                floorTimes.push(t3 - t2)
              }
            }
            return n
          })
      })
      yield* kernel.execute(steps, { runId: "steps", tenant, input: { n: STEPS } })
    })
    await Effect.runPromise(Effect.provide(program, layer))
    const step = median(stepTimes)
    const stepFloor = median(floorTimes)
    return {
      metric: "step_vs_floor_normal",
      value: step / stepFloor,
      unit: "ratio",
      baseline: `2 bare ${SqliteStore.driverName} INSERT+COMMITs of the step's rows (synchronous=NORMAL, WAL)`,
      baselineValue: stepFloor,
      ratio: step / stepFloor,
      detail: { step_median_us: step, floor_median_us: stepFloor, steps: stepTimes.length, target_max_ratio: 2.5 }
    }
  } finally {
    floor.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
