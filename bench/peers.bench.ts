// `pnpm bench peers`: Artana against its peers on the same durable-step workload, side by side in one process,
// round by round (the order flips each round; medians over ROUNDS rounds).
//
// The workload: a run of STEPS durable steps that do no work of their own, so what is measured is what durability
// costs each framework per step, at equal durability (every step's record committed and fsynced before the next).
//
// SQLite (one file each, WAL, synchronous=FULL, the same driver):
//   sqlite_langgraph_over_artana: LangGraph.js per step / Artana per step. LangGraph: a `StateGraph` whose one
//     node loops STEPS super-steps, checkpointed by `SqliteSaver` with `durability: "sync"` (each super-step's
//     checkpoint written before the next). Artana: a workflow of STEPS `ctx.tool` calls of an idempotent tool
//     with the default two-phase log (ToolRequested committed before the handler, ToolCompleted after: two
//     commits a step). Target: at least 3.
//   sqlite_langgraph_over_artana_one_commit: the same against the tool's one-commit durability (request and outcome
//     in one commit after the handler, as LangGraph checkpoints after its node).
// PostgreSQL (one throwaway cluster with durable defaults; DBOS in a database of its own):
//   pg_dbos_over_artana_one_commit_wN: DBOS Transact per step / Artana per step with the tool's one-commit
//     durability (request and outcome in one commit after the handler: one commit a step, as DBOS's `runStep`
//     checkpoint), N workflows at once. Target: at least 1.8 at 1 and at 8.
//   pg_dbos_over_artana_two_phase_wN: the same against Artana's default two-phase log (two commits a step).
//     Target: at least 1 at 8 (no slower than DBOS).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DBOS } from "@dbos-inc/dbos-sdk"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"
import { Effect, Exit, Layer, ManagedRuntime, Scope } from "effect"
import pg from "pg"
import { Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { echo, echoOneCommit, stepsWorkflow, tenant } from "./fixtures.js"
import { type BenchResult, median, nowUs, progress } from "./lib.js"

const STEPS = 100
const ROUNDS = 9
const WARMUP_RUNS = 5
const CONCURRENCY = [1, 8] as const

const twoPhase = stepsWorkflow("bench.peers.two_phase")
const oneCommit = stepsWorkflow("bench.peers.one_commit", echoOneCommit)

/** Runs `workers` runs of `workflow` at once on `runtime`; microseconds per step. */
const artanaRound = async <R, E>(
  runtime: ManagedRuntime.ManagedRuntime<R | Kernel.Kernel, E>,
  workflow: typeof twoPhase,
  prefix: string,
  workers: number
): Promise<number> => {
  const t0 = nowUs()
  await Promise.all(Array.from({ length: workers }, (_, w) =>
    runtime.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(workflow, { runId: `${prefix}-${w}`, tenant, input: { n: STEPS } })))))
  return (nowUs() - t0) / (workers * STEPS)
}

/** Alternates `sides` round by round (flipping the order each round); the median microseconds per step of each. */
const interleaved = async (label: string, sides: ReadonlyArray<(round: number) => Promise<number>>): Promise<Array<number>> => {
  const times = sides.map(() => [] as Array<number>)
  for (let round = 0; round < ROUNDS; round++) {
    progress(`${label}: round ${round + 1}/${ROUNDS}`)
    const order = round % 2 === 0 ? sides.map((_, i) => i) : sides.map((_, i) => sides.length - 1 - i)
    for (const i of order) times[i]!.push(await sides[i]!(round))
  }
  return times.map(median)
}

const sqlite = async (dir: string): Promise<Array<BenchResult["rows"][number]>> => {
  const runtime = ManagedRuntime.make(
    Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename: join(dir, "artana.db") }), ScriptedModel.layer([]), ToolRegistry.layer([echo, echoOneCommit])))
  )
  const saver = SqliteSaver.fromConnString(join(dir, "langgraph.db"))
  saver.db.pragma("journal_mode = WAL")
  saver.db.pragma("synchronous = FULL")
  const State = Annotation.Root({ i: Annotation<number>(), n: Annotation<number>() })
  const graph = new StateGraph(State)
    .addNode("step", (s: typeof State.State) => ({ i: s.i + 1 }))
    .addEdge(START, "step")
    .addConditionalEdges("step", (s: typeof State.State) => (s.i >= s.n ? END : "step"))
    .compile({ checkpointer: saver })
  const langgraph = async (thread: string): Promise<number> => {
    const t0 = nowUs()
    await graph.invoke({ i: 0, n: STEPS }, { configurable: { thread_id: thread }, recursionLimit: STEPS + 10, durability: "sync" })
    return (nowUs() - t0) / STEPS
  }
  try {
    for (let i = 0; i < WARMUP_RUNS; i++) {
      await artanaRound(runtime, twoPhase, `warm-${i}`, 1)
      await artanaRound(runtime, oneCommit, `warm1-${i}`, 1)
      await langgraph(`warm-${i}`)
    }
    const [artana, one, peer] = await interleaved("sqlite: Artana (two-phase, one-commit) vs LangGraph.js", [
      (round) => artanaRound(runtime, twoPhase, `r${round}`, 1),
      (round) => artanaRound(runtime, oneCommit, `r1-${round}`, 1),
      (round) => langgraph(`r${round}`)
    ])
    const detail = { artana_two_phase_step_us: artana!, artana_one_commit_step_us: one!, langgraph_step_us: peer!, steps_per_run: STEPS, rounds: ROUNDS, synchronous: "FULL" }
    return [{
      metric: "sqlite_langgraph_over_artana",
      value: peer! / artana!,
      unit: "ratio",
      baseline: "LangGraph.js StateGraph + SqliteSaver (durability sync), per super-step",
      baselineValue: peer!,
      ratio: peer! / artana!,
      detail: { ...detail, target_min_ratio: 3 }
    }, {
      metric: "sqlite_langgraph_over_artana_one_commit",
      value: peer! / one!,
      unit: "ratio",
      baseline: "LangGraph.js StateGraph + SqliteSaver (durability sync), per super-step",
      baselineValue: peer!,
      ratio: peer! / one!,
      detail
    }]
  } finally {
    saver.db.close()
    await runtime.dispose()
  }
}

const postgres = async (url: string): Promise<Array<BenchResult["rows"][number]>> => {
  const rows: Array<BenchResult["rows"][number]> = []
  // DBOS keeps its system tables in a database of its own on the same server.
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query("CREATE DATABASE dbos_bench")
  await admin.end()
  const dbosUrl = new URL(url)
  dbosUrl.pathname = "/dbos_bench"
  DBOS.setConfig({ name: "artana-bench", systemDatabaseUrl: dbosUrl.toString(), logLevel: "error", runAdminServer: false })
  const stepOnce = async () => ({ ok: true })
  const dbosSteps = DBOS.registerWorkflow(async (n: number) => {
    for (let i = 0; i < n; i++) await DBOS.runStep(stepOnce, { name: "echo" })
    return n
  }, { name: "bench_steps" })
  await DBOS.launch()
  const dbos = async (prefix: string, workers: number): Promise<number> => {
    const t0 = nowUs()
    await Promise.all(Array.from({ length: workers }, async (_, w) => {
      const handle = await DBOS.startWorkflow(dbosSteps, { workflowID: `${prefix}-${w}` })(STEPS)
      await handle.getResult()
    }))
    return (nowUs() - t0) / (workers * STEPS)
  }
  try {
    for (const workers of CONCURRENCY) {
      const runtime = ManagedRuntime.make(
        Layer.provideMerge(
          Kernel.layer(),
          Layer.mergeAll(PostgresStore.layer({ url, pool: { max: workers + 2 } }), ScriptedModel.layer([]), ToolRegistry.layer([echo, echoOneCommit]))
        )
      )
      try {
        for (let i = 0; i < WARMUP_RUNS; i++) {
          await artanaRound(runtime, twoPhase, `warm2-${workers}-${i}`, workers)
          await artanaRound(runtime, oneCommit, `warm1-${workers}-${i}`, workers)
          await dbos(`warm-${workers}-${i}`, workers)
        }
        const [two, one, peer] = await interleaved(`postgres w${workers}: Artana (two-phase, one-commit) vs DBOS Transact`, [
          (round) => artanaRound(runtime, twoPhase, `r2-${workers}-${round}`, workers),
          (round) => artanaRound(runtime, oneCommit, `r1-${workers}-${round}`, workers),
          (round) => dbos(`r-${workers}-${round}`, workers)
        ])
        const detail = { artana_two_phase_step_us: two!, artana_one_commit_step_us: one!, dbos_step_us: peer!, workflows: workers, steps_per_run: STEPS, rounds: ROUNDS }
        rows.push({
          metric: `pg_dbos_over_artana_one_commit_w${workers}`,
          value: peer! / one!,
          unit: "ratio",
          baseline: `DBOS Transact runStep per step, ${workers} workflow(s) at once (one commit a step, as Artana's one-commit)`,
          baselineValue: peer!,
          ratio: peer! / one!,
          detail: { ...detail, target_min_ratio: 1.8 }
        })
        rows.push({
          metric: `pg_dbos_over_artana_two_phase_w${workers}`,
          value: peer! / two!,
          unit: "ratio",
          baseline: `DBOS Transact runStep per step, ${workers} workflow(s) at once (Artana here commits twice a step)`,
          baselineValue: peer!,
          ratio: peer! / two!,
          detail: workers === 8 ? { ...detail, target_min_ratio: 1 } : detail
        })
      } finally {
        await runtime.dispose()
      }
    }
  } finally {
    await DBOS.shutdown()
  }
  return rows
}

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-peers-"))
  const scope = Effect.runSync(Scope.make())
  try {
    const rows = await sqlite(dir)
    const given = process.env.ARTANA_BENCH_PG_URL
    let url = given
    if (url === undefined || url === "") {
      const binaries = PgTest.findBinaries()
      if (binaries === undefined) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql: install Debian's postgresql package, or set ARTANA_BENCH_PG_URL")
      progress(`starting a throwaway PostgreSQL ${binaries.version} cluster (durable defaults)`)
      url = await Effect.runPromise(Scope.extend(Effect.map(PgTest.startCluster(binaries, { durable: true }), (c) => c.url), scope))
    }
    rows.push(...(await postgres(url)))
    return { name: "peers", machine, rows }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(dir, { recursive: true, force: true })
  }
}
