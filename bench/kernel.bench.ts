// `pnpm bench kernel`: the cost of durability on SQLite, against the floor of what the same bytes cost bare.
//
// step_vs_floor: one durable tool step (ToolRequested committed before the handler, ToolCompleted after)
//   / two bare better-sqlite3 INSERT+COMMITs of the very rows the step wrote, into a twin table of the same
//   file at the same synchronous setting. The floor runs inside the workflow right after each step, so the
//   two are interleaved one to one.
// step_one_commit_vs_floor: the same step of a tool with `durability: "one-commit"` (request and outcome appended
//   together after the handler) / one bare transaction of its two rows; run right after each two-phase step.
// commits_per_step: appends (each one SQLite transaction) per tool step: 2 two-phase, 1 with one commit.
// replay_10k_vs_floor: replaying a 10,000-event run (kernel.replay reads the log, verifies its hash chain over the
//   stored bytes, and re-runs the code over it, executing nothing) / a bare ordered SELECT of the same rows +
//   JSON.parse of each payload. Alternated, 15 rounds each. The verification's share is measured on its own
//   (Verify.verifyEvents over the same 10,000 events read back, timed in each round) and reported in the row's detail.
// concurrent_100_vs_floor: durable steps/s of 100 runs at once on one file / bare one-event commits/s (kernel/concurrent.ts).
// concurrent_100_vs_floor_slow_flush: the same on a disk whose flush takes 8 ms, as the (kernel/slowFlush.ts).
// step_vs_floor_normal: step_vs_floor on a store opened with synchronous=NORMAL, against its floor at NORMAL (kernel/normal.ts).
// resume_10k_vs_floor: a crashed 10,000-event run resumed to its first new step / the same bare read (kernel/resume.ts).
// Both floors run on the store's own driver (node:sqlite on Node 24+, better-sqlite3 12 on Node 20 and 22; the
//   baseline names it).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, ToolRegistry, Verify, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, echoOneCommit, tenant } from "./fixtures.js"
import { concurrent } from "./kernel/concurrent.js"
import { normal } from "./kernel/normal.js"
import { resume10k } from "./kernel/resume.js"
import { concurrentOnSlowDisk } from "./kernel/slowFlush.js"
import { type BenchResult, median, nowUs, progress } from "./lib.js"

const STEPS = 2000
const WARMUP = 100
const REPLAY_STEPS = 5000 // two events each: 10,000 step events
const ROUNDS = 15


export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-"))
  const filename = join(dir, "bench.db")
  try {
    // The store, counting its appends: each is one commit (one transaction) on SQLite.
    let commits = 0
    const counted = Layer.effect(
      EventStore.EventStore,
      Effect.map(EventStore.EventStore, (store): EventStore.Service => ({
        ...store,
        append: (request) => Effect.zipLeft(store.append(request), Effect.sync(() => commits++))
      }))
    ).pipe(Layer.provide(SqliteStore.layer({ filename })))
    const layer = Layer.provideMerge(
      Kernel.layer(),
      Layer.mergeAll(counted, ScriptedModel.layer([]), ToolRegistry.layer([echo, echoOneCommit]))
    )
    // The floor runs on the store's own driver (node:sqlite or better-sqlite3 12, by the Node.js version).
    const Sqlite = SqliteStore.driver()
    const floor = new Sqlite(filename)
    floor.pragma("journal_mode = WAL")
    floor.pragma("synchronous = FULL")

    const stepTimes: Array<number> = []
    const floorTimes: Array<number> = []
    const oneCommitTimes: Array<number> = []
    const oneCommitFloorTimes: Array<number> = []
    const commitsPerStep = { twoPhase: new Set<number>(), oneCommit: new Set<number>() }
    const program = Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      // Creates the store's tables, then the floor's twin table with the same columns.
      yield* kernel.callTool({ runId: "warm", tenant, tool: "echo", args: { i: 0, note: "warm" } })
      const table = eventsTable(floor)
      floor.exec(`CREATE TABLE floor_events AS SELECT * FROM ${table} WHERE 0`)
      floor.exec(`CREATE UNIQUE INDEX floor_pk ON floor_events (run_id, seq)`)
      // By the events' key (tenant, run, seq): a read by run_id alone scans the whole table, and that scan, between two
      // measured steps, evicted the CPU's caches and doubled the next step's CPU (measured: 200 against 90 us at NORMAL).
      const lastTwo = floor.prepare(`SELECT * FROM ${table} WHERE tenant_id = ? AND run_id = ? ORDER BY seq DESC LIMIT 2`)
      const columns = (lastTwo.columns()).map((c) => c.name)
      const insert = floor.prepare(`INSERT INTO floor_events (${columns.join(",")}) VALUES (${columns.map(() => "?").join(",")})`)
      const insertBoth = (rows: ReadonlyArray<Record<string, unknown>>) => {
        floor.exec("BEGIN")
        for (const row of rows) insert.run(...columns.map((c) => (c === "run_id" ? `floor-${String(row[c])}` : row[c])))
        floor.exec("COMMIT")
      }

      progress(`step_vs_floor: ${STEPS} durable tool steps of each kind, each followed by its floor`)
      const steps = Workflow.make({
        name: "bench.steps",
        input: Schema.Struct({ n: Schema.Number, floor: Schema.Boolean }),
        output: Schema.Number,
        run: ({ floor: withFloor, n }, ctx) =>
          Effect.gen(function*() {
            for (let i = 0; i < n; i++) {
              const c0 = commits
              const t0 = nowUs()
              yield* ctx.tool(echo, { i, note: "a durable step of the benchmark" })
              const t1 = nowUs()
              if (!withFloor) continue
              commitsPerStep.twoPhase.add(commits - c0)
              const rows = lastTwo.all(tenant.tenantId, ctx.runId) as Array<Record<string, unknown>>
              const t2 = nowUs()
              for (const row of rows.reverse()) insert.run(...columns.map((c) => (c === "run_id" ? `floor-${String(row[c])}` : row[c])))
              const t3 = nowUs()
              // The same step logged in one commit, against one bare transaction of its two rows.
              const c1 = commits
              const t4 = nowUs()
              yield* ctx.tool(echoOneCommit, { i, note: "a durable step of the benchmark" })
              const t5 = nowUs()
              commitsPerStep.oneCommit.add(commits - c1)
              const both = (lastTwo.all(tenant.tenantId, ctx.runId) as Array<Record<string, unknown>>).reverse()
              const t6 = nowUs()
              insertBoth(both)
              const t7 = nowUs()
              if (i >= WARMUP) {
                stepTimes.push(t1 - t0)
                floorTimes.push(t3 - t2)
                oneCommitTimes.push(t5 - t4)
                oneCommitFloorTimes.push(t7 - t6)
              }
            }
            return n
          })
      })
      yield* kernel.execute(steps, { runId: "steps", tenant, input: { n: STEPS, floor: true } })

      progress(`replay_10k_vs_floor: writing a run of ${REPLAY_STEPS * 2} step events`)
      yield* kernel.execute(steps, { runId: "long", tenant, input: { n: REPLAY_STEPS, floor: false } })
      const store = yield* EventStore.EventStore
      const eventCount = (yield* store.readEvents(tenant.tenantId, "long")).length
      // By the events' key, as the store reads a run (a read by run_id alone scans the table).
      const all = floor.prepare(`SELECT * FROM ${table} WHERE tenant_id = ? AND run_id = ? ORDER BY seq`)
      const replayTimes: Array<number> = []
      const readTimes: Array<number> = []
      const verifyTimes: Array<number> = []
      for (let round = 0; round < ROUNDS; round++) {
        progress(`replay round ${round + 1}/${ROUNDS}`)
        const t0 = nowUs()
        const replayed = yield* kernel.replay(steps, { tenantId: tenant.tenantId, runId: "long" })
        const t1 = nowUs()
        if (replayed.status !== "completed") throw new Error("replay did not complete")
        const rows = all.all(tenant.tenantId, "long") as Array<{ payload: string }>
        let parsed = 0
        for (const row of rows) parsed += JSON.parse(row.payload) === null ? 0 : 1
        const t2 = nowUs()
        if (parsed !== eventCount) throw new Error(`floor read ${parsed} rows, expected ${eventCount}`)
        const read = yield* store.readEvents(tenant.tenantId, "long")
        const t3 = nowUs()
        if (!Verify.verifyEvents("long", read).ok) throw new Error("the benchmark's own log does not verify")
        const t4 = nowUs()
        if (round > 0) {
          replayTimes.push(t1 - t0)
          readTimes.push(t2 - t1)
          verifyTimes.push(t4 - t3)
        }
      }
      return { eventCount, replayTimes, readTimes, verifyTimes }
    })
    const { eventCount, readTimes, replayTimes, verifyTimes } = await Effect.runPromise(Effect.provide(program, layer))
    floor.close()
    const concurrency = await concurrent()
    const onSlowDisk = await concurrentOnSlowDisk()
    const atNormal = await normal()
    const resumed = await resume10k()

    const step = median(stepTimes)
    const stepFloor = median(floorTimes)
    const oneCommit = median(oneCommitTimes)
    const oneCommitFloor = median(oneCommitFloorTimes)
    const commitsOf = (set: ReadonlySet<number>) => (set.size === 1 ? [...set][0]! : Math.max(...set))
    const replay = median(replayTimes)
    const replayFloor = median(readTimes)
    const verification = median(verifyTimes)
    return {
      name: "kernel",
      machine,
      rows: [
        {
          metric: "step_vs_floor",
          value: step / stepFloor,
          unit: "ratio",
          baseline: `2 bare ${SqliteStore.driverName} INSERT+COMMITs of the step's rows (synchronous=FULL, WAL)`,
          baselineValue: stepFloor,
          ratio: step / stepFloor,
          detail: { step_median_us: step, floor_median_us: stepFloor, steps: stepTimes.length, target_max_ratio: 1.5 }
        },
        {
          metric: "step_one_commit_vs_floor",
          value: oneCommit / oneCommitFloor,
          unit: "ratio",
          baseline: `1 bare ${SqliteStore.driverName} transaction of the step's two rows (synchronous=FULL, WAL)`,
          baselineValue: oneCommitFloor,
          ratio: oneCommit / oneCommitFloor,
          detail: {
            step_median_us: oneCommit,
            floor_median_us: oneCommitFloor,
            vs_two_phase_step: oneCommit / step,
            steps: oneCommitTimes.length
          }
        },
        {
          metric: "commits_per_step",
          value: commitsOf(commitsPerStep.twoPhase),
          unit: "commits",
          baseline: "an idempotent tool step, two-phase (the default); ratio: with durability one-commit / two-phase",
          baselineValue: commitsOf(commitsPerStep.twoPhase),
          ratio: commitsOf(commitsPerStep.oneCommit) / commitsOf(commitsPerStep.twoPhase),
          detail: { two_phase: commitsOf(commitsPerStep.twoPhase), one_commit: commitsOf(commitsPerStep.oneCommit) }
        },
        {
          metric: "replay_10k_vs_floor",
          value: replay / replayFloor,
          unit: "ratio",
          baseline: `bare ordered SELECT of the run's rows (${SqliteStore.driverName}) + JSON.parse of each payload`,
          baselineValue: replayFloor,
          ratio: replay / replayFloor,
          detail: {
            replay_median_us: replay,
            floor_median_us: replayFloor,
            verification_median_us: verification,
            verification_share_of_replay: verification / replay,
            events: eventCount,
            rounds: replayTimes.length,
            // The targets: 1.5 on Node 20, 2 on Node 22.14+ and 24 (their JSON.parse floor is faster).
            target_max_ratio: Number(process.versions.node.split(".")[0]) >= 22 ? 2 : 1.5
          }
        },
        concurrency,
        ...(onSlowDisk === undefined ? [] : [onSlowDisk]),
        atNormal,
        resumed
      ]
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The store's events table (its name carries the configured prefix). */
const eventsTable = (db: SqliteStore.Database): string => {
  const row = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%events' AND name NOT LIKE 'floor%'`).get() as
    | { name: string }
    | undefined
  if (row === undefined) throw new Error("the store's events table was not found")
  return row.name
}
