// `pnpm bench postgres`: durable tool steps on PostgreSQL with 1, 4 and 8 workers, against the floor of bare
// single-row INSERT commits at the same concurrency, on the same server, interleaved round by round.
//
// steps_vs_floor_wN: Artana's wall time per durable tool step with N runs stepping at once (each step commits
//   ToolRequested before the handler and ToolCompleted after) / the floor's wall time for the commits a step
//   needs (2), measured with N bare `pg` clients each doing autocommit INSERTs of the same rows.
// commits_per_step_wN: write transactions per tool step, counted by the server (transaction ids assigned).
//
// The server: ARTANA_BENCH_PG_URL when set, else a throwaway cluster with PostgreSQL's durable defaults
// (fsync and synchronous_commit on), started from /usr/lib/postgresql/*/bin and removed after.
import { Effect, Exit, Layer, Scope } from "effect"
import pg from "pg"
import { Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { echo, stepsWorkflow, tenant } from "./fixtures.js"
import { type BenchResult, median, nowUs, progress } from "./lib.js"

const CONCURRENCY = [1, 4, 8] as const
const STEPS_PER_RUN = 200
/** Rounds per concurrency; the medians are taken over them (two cores shared with the server make single rounds vary by half). */
const ROUNDS = 11
/** Steps run before measuring, so that both sides are measured JIT-compiled. */
const WARMUP_STEPS = 3000


const steps = stepsWorkflow("bench.steps")

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
          Layer.mergeAll(PostgresStore.layer({ url, pool: { max: workers + 2 } }), ScriptedModel.layer([]), ToolRegistry.layer([echo]))
        )
        const runtime = await Effect.runPromise(Scope.extend(Layer.toRuntime(layer), scope))
        const execute = (runId: string) =>
          Effect.runPromise(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(steps, { runId, tenant, input: { n: STEPS_PER_RUN } })), runtime))
        for (let done = 0; done < WARMUP_STEPS; done += STEPS_PER_RUN) await execute(`warm-${workers}-${done}`)
        // The tables' statistics, as autovacuum gathers them within a minute of a table's first rows in any database
        // (this bench is shorter than that). Without them the planner may check a run's fence through another index
        // that starts with tenant_id and filter every run of the tenant (seen in EXPLAIN on a fresh database).
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

        const stepUs: Array<number> = []
        const commitUs: Array<number> = []
        const commitsPerStep: Array<number> = []
        for (let round = 0; round < ROUNDS; round++) {
          progress(`w${workers} round ${round + 1}/${ROUNDS}: ${workers} x ${STEPS_PER_RUN} durable steps, then ${workers} x ${sample.length} bare commits`)
          const before = await xid(admin)
          const t0 = nowUs()
          await Promise.all(Array.from({ length: workers }, (_, w) => execute(`r${round}-w${workers}-${w}`)))
          const t1 = nowUs()
          const after = await xid(admin)
          const totalSteps = workers * STEPS_PER_RUN
          stepUs.push((t1 - t0) / totalSteps)
          commitsPerStep.push((after - before - 1) / totalSteps)

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

        const step = median(stepUs)
        const floor = 2 * median(commitUs)
        const commits = median(commitsPerStep)
        rows.push({
          metric: `steps_vs_floor_w${workers}`,
          value: step / floor,
          unit: "ratio",
          baseline: `2 bare pg single-row INSERT commits per step, ${workers} connection(s) at once`,
          baselineValue: floor,
          ratio: step / floor,
          detail: { step_us: step, steps_per_second: 1e6 / step, floor_us: floor, rounds: ROUNDS, steps_per_round: workers * STEPS_PER_RUN, target_max_ratio: 1.5 }
        })
        rows.push({
          metric: `commits_per_step_w${workers}`,
          value: commits,
          unit: "commits",
          baseline: "target: at most 2 commits per tool step",
          baselineValue: 2,
          ratio: commits / 2
        })
      }
    } finally {
      await admin.end()
    }
    return { name: "postgres", machine, rows }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
