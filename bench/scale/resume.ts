// `pnpm bench scale` group: resuming a long run, and a durable step in a store of many runs.
//   resume_100k_rss_over_baseline_mb  peak RSS of a process resuming a run paused after 100,000 memoized steps, minus
//                                     that of a process that only opens the store and reads the run's record (MB)
//   resume_100k_vs_floor              that resume's time against a bare ordered SELECT of the same rows + JSON.parse
//                                     of each payload, each in a fresh process, interleaved
//   step_at_100k_runs_vs_empty        a run of one durable step on a SQLite file holding 100,000 runs, against one
//                                     on an empty file, interleaved in one process
// The long run is TestLog.LongRun (written fast, through the store's append in large batches, with a valid chain).
import { spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { Kernel, ModelPort, ToolRegistry, Workflow } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "../fixtures.js"
import { median, nowUs, progress, type Row } from "../lib.js"

const STEPS = 100_000
const RESUME_ROUNDS = 3
const RUNS = 100_000
const STEP_ROUNDS = 200

const BENCH_DIR = fileURLToPath(new URL("../", import.meta.url))
const CHILD = fileURLToPath(new URL("../long-run.child.ts", import.meta.url))

const Measured = Schema.Struct({ ms: Schema.optional(Schema.Number), rows: Schema.optional(Schema.Number), peakRssMb: Schema.Number })

/** Runs long-run.child.ts in a process of its own; what it measured. */
const child = (...args: ReadonlyArray<string>) => {
  const out = spawnSync(process.execPath, ["--import", "tsx", CHILD, ...args], { cwd: BENCH_DIR, encoding: "utf8", maxBuffer: 1 << 24 })
  const line = out.stdout.trim().split("\n").pop() ?? ""
  if (out.status !== 0) throw new Error(`long-run.child.ts ${args.join(" ")} exited with ${out.status ?? out.signal}\n${out.stderr.slice(-4000)}`)
  return Schema.decodeUnknownSync(Schema.parseJson(Measured))(line)
}

const resumeRows = (dir: string): ReadonlyArray<Row> => {
  const written = join(dir, "long.db")
  progress(`resume_100k: writing a run paused after ${STEPS} steps`)
  child("write", written, "long", String(STEPS))
  const rss: Array<number> = []
  const baseline: Array<number> = []
  const resume: Array<number> = []
  const floor: Array<number> = []
  for (let round = 0; round < RESUME_ROUNDS; round++) {
    progress(`resume_100k round ${round + 1}/${RESUME_ROUNDS}`)
    const db = join(dir, `round-${round}.db`)
    copyFileSync(written, db)
    baseline.push(child("open", db, "long").peakRssMb)
    const floorRun = child("floor", db, "long")
    if (floorRun.rows !== STEPS + 2) throw new Error(`the floor read ${floorRun.rows} rows`)
    floor.push(floorRun.ms ?? 0)
    const resumed = child("resume", db, "long")
    rss.push(resumed.peakRssMb)
    resume.push(resumed.ms ?? 0)
    rmSync(db, { force: true })
  }
  const over = median(rss) - median(baseline)
  return [
    {
      metric: "resume_100k_rss_over_baseline_mb",
      value: over,
      unit: "MB",
      baseline: "peak RSS of a process that only opens the store and reads the run's record",
      baselineValue: median(baseline),
      ratio: median(rss) / median(baseline),
      detail: { resume_peak_rss_mb: median(rss), baseline_peak_rss_mb: median(baseline), events: STEPS + 2, rounds: RESUME_ROUNDS, target_max_mb: 64 }
    },
    {
      metric: "resume_100k_vs_floor",
      value: median(resume) / median(floor),
      unit: "ratio",
      baseline: "bare ordered SELECT of the run's rows + JSON.parse of each payload (own process)",
      baselineValue: median(floor) * 1000,
      ratio: median(resume) / median(floor),
      detail: { resume_median_us: median(resume) * 1000, floor_median_us: median(floor) * 1000, rounds: RESUME_ROUNDS, target_max_ratio: 1.5 }
    }
  ]
}

/**
 * Fills `db` with `RUNS` runs: one run written by the kernel, copied in SQL (every table with a `run_id` column, its
 * ids suffixed) so that the file holds what that many runs hold, in seconds.
 */
export const fill = (db: string) => {
  const Sqlite = SqliteStore.driver()
  const sqlite = new Sqlite(db)
  const Name = Schema.Array(Schema.Struct({ name: Schema.String }))
  const tables = Schema.decodeUnknownSync(Name)(sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all())
  const columnsOf = (table: string) => Schema.decodeUnknownSync(Name)(sqlite.prepare(`SELECT name FROM pragma_table_info(?)`).all(table)).map((c) => c.name)
  // The runs first, their heads at 0: the store's head trigger moves them as each run's events are inserted in order.
  const copied = tables.map((t) => ({ name: t.name, columns: columnsOf(t.name) }))
    .filter((t) => t.columns.includes("run_id"))
    .sort((a, b) => Number(b.columns.includes("head_seq")) - Number(a.columns.includes("head_seq")))
  const ids = new Set(["run_id", "root_run_id", "event_id", "id"])
  sqlite.exec("BEGIN")
  for (const { name, columns } of copied) {
    const select = columns.map((c) => (ids.has(c) ? `${c} || '-' || n.i` : c === "head_seq" ? "0" : c)).join(", ")
    const order = columns.includes("seq") ? "ORDER BY n.i, seq" : ""
    sqlite.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) ` +
        `INSERT INTO ${name} (${columns.join(", ")}) SELECT ${select} FROM ${name}, n WHERE run_id = 'template' ${order}`
    ).run(RUNS - 1)
  }
  sqlite.exec("COMMIT")
  sqlite.close()
}

const stepRows = async (dir: string): Promise<ReadonlyArray<Row>> => {
  const oneStep = Workflow.make({
    name: "one-step",
    input: Schema.Number,
    output: Schema.Number,
    run: (n, ctx) => ctx.step("double", Effect.succeed(n * 2), Schema.Number)
  })
  const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("no model") })
  const kernelOn = (filename: string) =>
    Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([])))
  const empty = join(dir, "empty.db")
  const full = join(dir, "full.db")
  progress(`step_at_100k_runs: writing ${RUNS} runs`)
  await Effect.runPromise(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(oneStep, { runId: "template", tenant, input: 1 })), kernelOn(full)))
  fill(full)
  const empties = ManagedRuntime.make(kernelOn(empty))
  const fulls = ManagedRuntime.make(kernelOn(full))
  const step = (i: number) =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const t0 = nowUs()
      const done = yield* kernel.execute(oneStep, { runId: `step-${i}`, tenant, input: i })
      const t1 = nowUs()
      if (done.status !== "completed") throw new Error("the step did not complete")
      return t1 - t0
    })
  const onEmpty: Array<number> = []
  const onFull: Array<number> = []
  try {
    progress(`step_at_100k_runs: ${STEP_ROUNDS} runs of one step on each file, interleaved`)
    for (let i = 0; i < STEP_ROUNDS; i++) {
      // Alternating which goes first: neither always follows the other's commit.
      const fullFirst = i % 2 === 1
      const b0 = fullFirst ? await fulls.runPromise(step(i)) : 0
      const a = await empties.runPromise(step(i))
      const b = fullFirst ? b0 : await fulls.runPromise(step(i))
      if (i >= 10) {
        onEmpty.push(a)
        onFull.push(b)
      }
    }
  } finally {
    await empties.dispose()
    await fulls.dispose()
  }
  return [{
    metric: "step_at_100k_runs_vs_empty",
    value: median(onFull) / median(onEmpty),
    unit: "ratio",
    baseline: "the same run of one durable step on an empty SQLite file",
    baselineValue: median(onEmpty),
    ratio: median(onFull) / median(onEmpty),
    detail: { full_median_us: median(onFull), empty_median_us: median(onEmpty), runs_stored: RUNS, rounds: onFull.length, target_max_ratio: 1.1 }
  }]
}

export default async (): Promise<ReadonlyArray<Row>> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-resume-"))
  try {
    return [...resumeRows(dir), ...(await stepRows(dir))]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
