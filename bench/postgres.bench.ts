// `pnpm bench postgres`: durable tool steps on PostgreSQL with 1, 4 and 8 workers, against the floor of bare
// single-row INSERT commits at the same concurrency, on the same server, interleaved round by round.
//
// steps_vs_floor_wN: Artana's wall time per durable tool step with N runs stepping at once (each step commits
//   ToolRequested before the handler and ToolCompleted after) / the floor's wall time for the commits a step
//   needs (2), measured with N bare `pg` clients each doing autocommit INSERTs of the same rows.
// commits_per_step_wN: write transactions per tool step, counted by the server (transaction ids assigned).
// steps_one_commit_vs_floor_wN, commits_per_step_one_commit_wN: the same with the tool's `durability: "one-commit"`
//   (request and outcome appended together after the handler), against one bare commit per step; in the same rounds.
// Each row's detail also gives the Node process's CPU per step (`process.cpuUsage`) and the statements sent per step
// (each one round trip to the server).
//
// The server: ARTANA_BENCH_PG_URL when set, else a throwaway cluster with PostgreSQL's durable defaults
// (fsync and synchronous_commit on), started from /usr/lib/postgresql/*/bin and removed after.
import { Effect, Exit, Layer, Scope } from "effect"
import pg from "pg"
import { Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { echo, echoOneCommit, stepsWorkflow, tenant } from "./fixtures.js"
import { type BenchResult, median, nowUs, progress } from "./lib.js"
import { statements } from "./postgres/statements.js"

const CONCURRENCY = [1, 4, 8] as const
const STEPS_PER_RUN = 200
/** Rounds per concurrency; the medians are taken over them (two cores shared with the server make single rounds vary by half). */
const ROUNDS = 11
/** Steps run before measuring, so that both sides are measured JIT-compiled. */
const WARMUP_STEPS = 3000


const steps = stepsWorkflow("bench.steps")
const stepsOneCommit = stepsWorkflow("bench.steps_one_commit", echoOneCommit)

const cpuUs = (): number => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

/** One mode's measurements over the rounds, per step. */
interface Measured {
  readonly stepUs: Array<number>
  readonly commitsPerStep: Array<number>
  readonly cpuUs: Array<number>
  readonly statements: Array<number>
}
const measured = (): Measured => ({ stepUs: [], commitsPerStep: [], cpuUs: [], statements: [] })

const COLUMNS = ["run_id", "seq", "event_id", "tenant_id", "timestamp", "type", "step_key", "payload", "prev_hash", "hash"] as const

/** Write transactions the server committed since `before` (each assigns a transaction id; reading one assigns one). */
const xid = async (client: pg.Client): Promise<number> => Number((await client.query("SELECT txid_current() AS x")).rows[0].x)

const server = (): Effect.Effect<string, PgTest.PgTestError, Scope.Scope> => {
  const given = process.env.ARTANA_BENCH_PG_URL
  if (given !== undefined && given !== "") return Effect.succeed(given)
  const binaries = PgTest.findBinaries()
  if (binaries === undefined) {
    return Effect.fail(new PgTest.PgTestError({ message: "no PostgreSQL server binaries under /usr/lib/postgresql: install Debian's postgresql package, or set ARTANA_BENCH_PG_URL" }))
  }
  progress(`starting a throwaway PostgreSQL ${binaries.version} cluster (durable defaults)`)
  return Effect.map(PgTest.startCluster(binaries, { durable: true }), (cluster) => cluster.url)
}

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const url = await Effect.runPromise(Scope.extend(server(), scope))
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    const rows: Array<BenchResult["rows"][number]> = []
    try {
      for (const workers of CONCURRENCY) {
        const layer = Layer.provideMerge(
          Kernel.layer(),
          Layer.mergeAll(PostgresStore.layer({ url, pool: { max: workers + 2 } }), ScriptedModel.layer([]), ToolRegistry.layer([echo, echoOneCommit]))
        )
        const runtime = await Effect.runPromise(Scope.extend(Layer.toRuntime(layer), scope))
        const execute = (runId: string, workflow = steps) =>
          Effect.runPromise(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(workflow, { runId, tenant, input: { n: STEPS_PER_RUN } })), runtime))
        for (let done = 0; done < WARMUP_STEPS; done += STEPS_PER_RUN) {
          await execute(`warm-${workers}-${done}`)
          await execute(`warm1-${workers}-${done}`, stepsOneCommit)
        }
        // The tables' statistics, as autovacuum gathers them within a minute of a table's first rows in any database
        // (this bench is shorter than that). The appends' plans do not depend on them (the fence index, see
        // store-postgres's test/fencePlan.test.ts); the reads do.
        await admin.query("ANALYZE")
        // The floor writes the very rows a run wrote, into a twin table, over `workers` bare connections.
        await admin.query(`CREATE TABLE IF NOT EXISTS floor_events (LIKE events INCLUDING DEFAULTS INCLUDING INDEXES)`)
        const sample = (await admin.query(`SELECT ${COLUMNS.join(",")} FROM events WHERE run_id = $1 AND type LIKE 'Tool%' ORDER BY seq`, [`warm-${workers}-0`])).rows
        const clients = await Promise.all(Array.from({ length: workers }, async () => {
          const c = new pg.Client({ connectionString: url })
          await c.connect()
          return c
        }))
        const insert = `INSERT INTO floor_events (${COLUMNS.join(",")}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(",")})`

        const twoPhase = measured()
        const oneCommit = measured()
        const commitUs: Array<number> = []
        const totalSteps = workers * STEPS_PER_RUN
        const measure = async (into: Measured, run: (w: number) => Promise<unknown>) => {
          const before = await xid(admin)
          const [c0, q0, t0] = [cpuUs(), statements(), nowUs()]
          await Promise.all(Array.from({ length: workers }, (_, w) => run(w)))
          const [t1, c1, q1] = [nowUs(), cpuUs(), statements()]
          const after = await xid(admin)
          into.stepUs.push((t1 - t0) / totalSteps)
          into.cpuUs.push((c1 - c0) / totalSteps)
          into.statements.push((q1 - q0) / totalSteps)
          into.commitsPerStep.push((after - before - 1) / totalSteps)
        }
        for (let round = 0; round < ROUNDS; round++) {
          progress(`w${workers} round ${round + 1}/${ROUNDS}: ${workers} x ${STEPS_PER_RUN} durable steps (two-phase, then one-commit), then ${workers} x ${sample.length} bare commits`)
          await measure(twoPhase, (w) => execute(`r${round}-w${workers}-${w}`))
          await measure(oneCommit, (w) => execute(`r1-${round}-w${workers}-${w}`, stepsOneCommit))

          const t2 = nowUs()
          await Promise.all(clients.map(async (client, w) => {
            for (const row of sample) {
              await client.query(insert, COLUMNS.map((c) => (c === "run_id" ? `floor-${round}-${workers}-${w}` : row[c])))
            }
          }))
          const t3 = nowUs()
          commitUs.push((t3 - t2) / (workers * sample.length))
        }
        await Promise.all(clients.map((c) => c.end()))

        const commit = median(commitUs)
        for (const [mode, m, commitsPerStep] of [["", twoPhase, 2], ["_one_commit", oneCommit, 1]] as const) {
          const step = median(m.stepUs)
          const floor = commitsPerStep * commit
          rows.push({
            metric: `steps${mode}_vs_floor_w${workers}`,
            value: step / floor,
            unit: "ratio",
            baseline: `${commitsPerStep} bare pg single-row INSERT commit${commitsPerStep > 1 ? "s" : ""} per step, ${workers} connection(s) at once`,
            baselineValue: floor,
            ratio: step / floor,
            detail: {
              step_us: step,
              steps_per_second: 1e6 / step,
              floor_us: floor,
              node_cpu_us_per_step: median(m.cpuUs),
              statements_per_step: median(m.statements),
              rounds: ROUNDS,
              steps_per_round: totalSteps,
              target_max_ratio: 1.5
            }
          })
          const commits = median(m.commitsPerStep)
          rows.push({
            metric: `commits_per_step${mode}_w${workers}`,
            value: commits,
            unit: "commits",
            baseline: `target: at most ${commitsPerStep} commit${commitsPerStep > 1 ? "s" : ""} per tool step`,
            baselineValue: commitsPerStep,
            ratio: commits / commitsPerStep
          })
        }
      }
    } finally {
      await admin.end()
    }
    return { name: "postgres", machine, rows }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
