// concurrent_100_vs_floor (part of `pnpm bench kernel`): durable tool steps per second of RUNS runs stepping at once
// on one SQLite file (synchronous=FULL, WAL) / bare INSERT commits per second, one event each, of the same rows on
// the same file: the one-commit-per-event floor. Appends made together are group-committed (one transaction, a
// savepoint each), so concurrency buys throughput. Rounds alternate Artana and the floor; medians.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, stepsWorkflow, tenant } from "../fixtures.js"
import { type BenchResult, median, nowUs, progress } from "../lib.js"

const RUNS = 100
const STEPS = 10
const ROUNDS = 5
/**
 * Rounds run before the measured ones, not counted. The kernel's code is still being compiled by V8 during the first
 * few (CPU per step fell round by round until about the sixth: 434, 319, 311, 285, 325, then ~236 us; bench/kernel
 * README), and the row is about steady state: what a server that has run for a while sustains.
 */
const WARMUP = 5
/** Floor commits per round: at ~100 fsyncs a second, a round of a second or two. */
const FLOOR_COMMITS = 200

const steps = stepsWorkflow("bench.concurrent")

/** The row, named `metric` (slowFlush.ts measures it again in a process whose disk flushes slowly). */
export const concurrent = async (metric = "concurrent_100_vs_floor"): Promise<BenchResult["rows"][number]> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-concurrent-"))
  const filename = join(dir, "bench.db")
  // Every commit of the store's appends, with the number of appends it made durable (the group's size).
  const commits = { count: 0, appends: 0 }
  const onGroupCommit = (appends: number) => {
    commits.count++
    commits.appends += appends
  }
  const runtime = ManagedRuntime.make(
    Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename, onGroupCommit }), ScriptedModel.layer([]), ToolRegistry.layer([echo])))
  )
  const Sqlite = SqliteStore.driver()
  const floor = new Sqlite(filename)
  try {
    // Per round: steps/s, and the commits and appends it made (hardware-independent: how well the appends grouped).
    const grouping: Array<{ readonly commits: number; readonly appends: number; readonly cpuUs: number }> = []
    const round = async (prefix: string) => {
      const before = { ...commits }
      const c0 = process.cpuUsage()
      const t0 = nowUs()
      await Promise.all(Array.from({ length: RUNS }, (_, r) =>
        runtime.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(steps, { runId: `${prefix}-${r}`, tenant, input: { n: STEPS } })))))
      const perSecond = (RUNS * STEPS) / ((nowUs() - t0) / 1e6)
      const cpu = process.cpuUsage(c0)
      grouping.push({ commits: commits.count - before.count, appends: commits.appends - before.appends, cpuUs: cpu.user + cpu.system })
      return perSecond
    }
    for (let w = 0; w < WARMUP; w++) {
      progress(`concurrent_100_vs_floor warm-up ${w + 1}/${WARMUP}`)
      await round(w === 0 ? "warm" : `warm${w}`)
    }
    floor.pragma("journal_mode = WAL")
    floor.pragma("synchronous = FULL")
    const table = (floor.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%events'`).get() as { name: string }).name
    floor.exec(`CREATE TABLE floor_events AS SELECT * FROM ${table} WHERE 0`)
    floor.exec(`CREATE UNIQUE INDEX floor_pk ON floor_events (run_id, seq)`)
    const rows = floor.prepare(`SELECT * FROM ${table} WHERE run_id = 'warm-0' ORDER BY seq`).all() as Array<Record<string, unknown>>
    const columns = Object.keys(rows[0]!)
    const insert = floor.prepare(`INSERT INTO floor_events (${columns.join(",")}) VALUES (${columns.map(() => "?").join(",")})`)
    const floorRound = (r: number) => {
      const t0 = nowUs()
      for (let i = 0; i < FLOOR_COMMITS; i++) {
        const row = rows[i % rows.length]!
        insert.run(...columns.map((c) => (c === "run_id" ? `floor-${r}-${Math.floor(i / rows.length)}` : row[c])))
      }
      return FLOOR_COMMITS / ((nowUs() - t0) / 1e6)
    }
    const artana: Array<number> = []
    const bare: Array<number> = []
    for (let r = 0; r < ROUNDS; r++) {
      progress(`concurrent_100_vs_floor round ${r + 1}/${ROUNDS}: ${RUNS} runs x ${STEPS} durable steps at once, then ${FLOOR_COMMITS} bare commits`)
      if (r % 2 === 0) {
        artana.push(await round(`r${r}`))
        bare.push(floorRound(r))
      } else {
        bare.push(floorRound(r))
        artana.push(await round(`r${r}`))
      }
    }
    const measured = grouping.slice(WARMUP) // the warm-up rounds' aside
    const totalCommits = measured.reduce((n, g) => n + g.commits, 0)
    const totalAppends = measured.reduce((n, g) => n + g.appends, 0)
    const stepsMeasured = measured.length * RUNS * STEPS
    const stepsPerSecond = median(artana)
    const commitsPerSecond = median(bare)
    return {
      metric,
      value: stepsPerSecond / commitsPerSecond,
      unit: "ratio",
      baseline: `bare ${SqliteStore.driverName} INSERT commits per second, one event each (synchronous=FULL, WAL)`,
      baselineValue: commitsPerSecond,
      ratio: stepsPerSecond / commitsPerSecond,
      detail: {
        steps_per_second: stepsPerSecond,
        floor_commits_per_second: commitsPerSecond,
        // Hardware-independent: commits (each one fsync at FULL) per durable step, and appends per commit (the mean
        // group's size). Without grouping, 2 commits a step (a run's start and end add ~2 per run, 0.2 a step here).
        commits_per_step: totalCommits / stepsMeasured,
        appends_per_step: totalAppends / stepsMeasured,
        mean_group_size: totalAppends / totalCommits,
        // The process's CPU per durable step (the runs' starts and ends included): what bounds steps/s once commits group.
        cpu_us_per_step: median(measured.map((g) => g.cpuUs / (RUNS * STEPS))),
        runs: RUNS,
        steps_per_run: STEPS,
        rounds: ROUNDS,
        warmup_rounds: WARMUP,
        target_min_ratio: 5
      }
    }
  } finally {
    floor.close()
    await runtime.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}
