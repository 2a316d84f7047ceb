// `pnpm bench postgres`: durable tool steps on PostgreSQL with 1, 4 and 8 workers, against the floor of bare
// INSERT commits of the same rows at the same concurrency, on the same server, interleaved round by round.
//
// steps_vs_floor_wN: Artana's wall time per durable tool step with N runs stepping at once (each step commits
//   ToolRequested before the handler and ToolCompleted after) / the floor's wall time for the durable work a step
//   needs: the same two rows, each in a commit of its own, written by N bare `pg` clients at once.
// commits_per_step_wN: write transactions per tool step, counted by the server (transaction ids assigned).
// steps_one_commit_vs_floor_wN, commits_per_step_one_commit_wN: the same with the tool's `durability: "one-commit"`
//   (request and outcome appended together after the handler), against one bare commit of the step's two rows (one
//   two-row INSERT), as `pnpm bench kernel`'s one-commit floor is one transaction of the two rows; in the same rounds.
// Each round runs both modes and both floors, the floors first in every other round (so neither side always follows
//   the other); a row's value is the median over the rounds of that round's ratio (step / its floor), so a burst of
//   load from other processes weighs on one round's pair, not on one side of every comparison. The detail also
//   gives the ratio of the medians, the Node process's CPU per step (`process.cpuUsage`) and the statements sent
//   per step (each one round trip to the server).
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
const ROUNDS = 15
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

/** An event's columns (migration 12: under its run's surrogate key, its type the payload's `_tag`). */
const COLUMNS = ["run_key", "seq", "event_id", "timestamp", "step_key", "payload", "prev_hash", "hash"] as const

/** A floor run's key in the twin table: negative, so never a store's run's. */
let floorKeys = 0
const floorKey = (): number => --floorKeys

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

type Row = BenchResult["rows"][number]

/**
 * The floors at `workers` connections: each writes, on a bare `pg` client of its own, the rows a run of each mode wrote
 * (`sample`), into a twin table: the two-phase run's one commit per row, the one-commit run's one two-row INSERT per step.
 * `run()` gives each floor's wall time and Node CPU per step.
 */
const floorsAt = async (url: string, workers: number, sample: { readonly twoPhase: Array<Record<string, unknown>>; readonly oneCommit: Array<Record<string, unknown>> }) => {
  const clients = await Promise.all(Array.from({ length: workers }, async () => {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    return c
  }))
  const tuple = (offset: number) => `(${COLUMNS.map((_, i) => `$${offset + i + 1}`).join(",")})`
  const insertOne = `INSERT INTO floor_events (${COLUMNS.join(",")}) VALUES ${tuple(0)}`
  const insertTwo = `INSERT INTO floor_events (${COLUMNS.join(",")}) VALUES ${tuple(0)}, ${tuple(COLUMNS.length)}`
  const valuesOf = (row: Record<string, unknown>, runKey: number) => COLUMNS.map((c) => (c === "run_key" ? runKey : row[c]))
  const [twoSteps, oneSteps] = [workers * (sample.twoPhase.length / 2), workers * Math.floor(sample.oneCommit.length / 2)]
  const run = async () => {
    const [c0, t0] = [cpuUs(), nowUs()]
    await Promise.all(clients.map(async (client) => {
      const runKey = floorKey()
      for (const row of sample.twoPhase) await client.query(insertOne, valuesOf(row, runKey))
    }))
    const [t1, c1] = [nowUs(), cpuUs()]
    await Promise.all(clients.map(async (client) => {
      const runKey = floorKey()
      for (let i = 0; i + 1 < sample.oneCommit.length; i += 2) {
        await client.query(insertTwo, [...valuesOf(sample.oneCommit[i]!, runKey), ...valuesOf(sample.oneCommit[i + 1]!, runKey)])
      }
    }))
    const [t2, c2] = [nowUs(), cpuUs()]
    return { twoUs: (t1 - t0) / twoSteps, oneUs: (t2 - t1) / oneSteps, twoCpu: (c1 - c0) / twoSteps, oneCpu: (c2 - c1) / oneSteps }
  }
  return { run, end: () => Promise.all(clients.map((c) => c.end())) }
}

/** One mode's rows at `workers`: the ratio (median of the rounds' ratios) and the commits per step. */
const rowsOf = (workers: number, mode: "" | "_one_commit", m: Measured, floorUs: Array<number>, floorCpu: Array<number>, baseline: string): Array<Row> => {
  const commitsPerStep = mode === "" ? 2 : 1
  const step = median(m.stepUs)
  const floor = median(floorUs)
  const roundRatios = m.stepUs.map((us, round) => us / floorUs[round]!)
  const ratio = median(roundRatios)
  const commits = median(m.commitsPerStep)
  return [{
    metric: `steps${mode}_vs_floor_w${workers}`,
    value: ratio,
    unit: "ratio",
    baseline: `${baseline}, ${workers} connection(s) at once`,
    baselineValue: floor,
    ratio,
    detail: {
      step_us: step,
      steps_per_second: 1e6 / step,
      floor_us: floor,
      ratio_of_medians: step / floor,
      round_ratios: roundRatios.map((r) => r.toFixed(2)).join(" "),
      node_cpu_us_per_step: median(m.cpuUs),
      floor_node_cpu_us_per_step: median(floorCpu),
      statements_per_step: median(m.statements),
      rounds: ROUNDS,
      steps_per_round: workers * STEPS_PER_RUN,
      target_max_ratio: 1.5
    }
  }, {
    metric: `commits_per_step${mode}_w${workers}`,
    value: commits,
    unit: "commits",
    baseline: `target: at most ${commitsPerStep} commit${commitsPerStep > 1 ? "s" : ""} per tool step`,
    baselineValue: commitsPerStep,
    ratio: commits / commitsPerStep
  }]
}

/** Both modes and their floors at `workers` runs at once, interleaved round by round. */
const measureAt = async (url: string, admin: pg.Client, scope: Scope.Scope, workers: number): Promise<Array<Row>> => {
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
  // The floors write the very rows a run of each mode wrote, into a twin table, over `workers` bare connections.
  await admin.query(`CREATE TABLE IF NOT EXISTS floor_events (LIKE events INCLUDING DEFAULTS INCLUDING INDEXES)`)
  const toolRows = async (runId: string): Promise<Array<Record<string, unknown>>> =>
    (await admin.query(`SELECT ${COLUMNS.join(",")} FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = $1) AND payload::json->>'_tag' LIKE 'Tool%' ORDER BY seq`, [runId])).rows
  const floors = await floorsAt(url, workers, { twoPhase: await toolRows(`warm-${workers}-0`), oneCommit: await toolRows(`warm1-${workers}-0`) })

  const [twoPhase, oneCommit] = [measured(), measured()]
  const floor = { twoUs: new Array<number>(), oneUs: new Array<number>(), twoCpu: new Array<number>(), oneCpu: new Array<number>() }
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
  const measureFloors = async () => {
    const f = await floors.run()
    floor.twoUs.push(f.twoUs)
    floor.oneUs.push(f.oneUs)
    floor.twoCpu.push(f.twoCpu)
    floor.oneCpu.push(f.oneCpu)
  }
  for (let round = 0; round < ROUNDS; round++) {
    progress(`w${workers} round ${round + 1}/${ROUNDS}: ${workers} x ${STEPS_PER_RUN} durable steps (two-phase, then one-commit) and their floors`)
    // The floors go first in every other round, so neither side always runs right after the other.
    if (round % 2 === 1) await measureFloors()
    await measure(twoPhase, (w) => execute(`r${round}-w${workers}-${w}`))
    await measure(oneCommit, (w) => execute(`r1-${round}-w${workers}-${w}`, stepsOneCommit))
    if (round % 2 === 0) await measureFloors()
  }
  await floors.end()
  return [
    ...rowsOf(workers, "", twoPhase, floor.twoUs, floor.twoCpu, "the step's 2 rows, 1 bare pg INSERT commit each"),
    ...rowsOf(workers, "_one_commit", oneCommit, floor.oneUs, floor.oneCpu, "the step's 2 rows in 1 bare pg INSERT commit")
  ]
}

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const url = await Effect.runPromise(Scope.extend(server(), scope))
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    const rows: Array<Row> = []
    try {
      for (const workers of CONCURRENCY) rows.push(...await measureAt(url, admin, scope, workers))
    } finally {
      await admin.end()
    }
    return { name: "postgres", machine, rows }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
