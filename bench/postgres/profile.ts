// Where a durable step's time goes on PostgreSQL: per step, the Node process's CPU (`process.cpuUsage`), the
// server's CPU (the pool's backends, from /proc), the statements sent (each one round trip), and the wall time,
// for 1 and 8 concurrent runs, in both durability modes, beside the floors' bare INSERT commits (one row each, and
// two rows each: what a one-commit step writes).
// Not a row of `pnpm bench postgres`: the measurement behind packages/store-postgres/README.md ("Performance").
// Run: `cd bench && npx tsx postgres/profile.ts` (add `--cpu-prof` through NODE_OPTIONS for a profile).
import { Effect, Exit, Layer, Scope } from "effect"
import pg from "pg"
import { Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { echo, echoOneCommit, stepsWorkflow, tenant } from "../fixtures.js"
import { median, nowUs } from "../lib.js"
import { nodeCpuUs, serverCpuUs } from "./cpu.js"
import { statements } from "./statements.js"

const STEPS = 200
const ROUNDS = Number(process.env.ROUNDS ?? 7)
const WORKERS = [1, 8] as const
const MODES = { two_phase: stepsWorkflow("profile.steps"), one_commit: stepsWorkflow("profile.steps1", echoOneCommit) }


const cpuUs = nodeCpuUs
const userUs = () => process.cpuUsage().user

const scope = Effect.runSync(Scope.make())
const url = await Effect.runPromise(Scope.extend(Effect.map(PgTest.startCluster(PgTest.findBinaries()!, { durable: true }), (c) => c.url), scope))
const admin = new pg.Client({ connectionString: url })
await admin.connect()
const pidsOf = async (app: string) => (await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [app])).rows.map((r) => Number(r.pid))

for (const workers of WORKERS) {
  const layer = Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(PostgresStore.layer({ url, pool: { max: workers, idleTimeout: "1 hour" }, applicationName: `profile${workers}` }), ScriptedModel.layer([]), ToolRegistry.layer([echo, echoOneCommit]))
  )
  const runtime = await Effect.runPromise(Scope.extend(Layer.toRuntime(layer), scope))
  const execute = (workflow: typeof MODES.two_phase, runId: string) =>
    Effect.runPromise(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(workflow, { runId, tenant, input: { n: STEPS } })), runtime))
  // Warmed up at full concurrency, so every connection of the pool is open (and its backend counted below).
  for (const [mode, workflow] of Object.entries(MODES)) {
    for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: workers }, (_, w) => execute(workflow, `warm-${mode}-${workers}-${i}-${w}`)))
  }
  const floorClients = await Promise.all(Array.from({ length: workers }, async () => {
    const c = new pg.Client({ connectionString: url, application_name: `floor${workers}` })
    await c.connect()
    return c
  }))
  await admin.query("CREATE TABLE IF NOT EXISTS floor_events (LIKE events INCLUDING DEFAULTS INCLUDING INDEXES)")
  const sample = (await admin.query("SELECT run_key, seq, event_id, timestamp, step_key, payload, prev_hash, hash FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = $1) ORDER BY seq LIMIT 3 OFFSET 1", [`warm-two_phase-${workers}-0-0`])).rows
  const backends = await pidsOf(`profile${workers}`)
  const floorBackends = await pidsOf(`floor${workers}`)
  const stats: Record<string, { wall: Array<number>; cpu: Array<number>; user: Array<number>; server: Array<number>; statements: Array<number> }> = {}
  const record = (name: string, steps: number, wall: number, cpu: number, user: number, server: number, sent: number) => {
    const s = (stats[name] ??= { wall: [], cpu: [], user: [], server: [], statements: [] })
    s.wall.push(wall / steps)
    s.cpu.push(cpu / steps)
    s.user.push(user / steps)
    s.server.push(server / steps)
    s.statements.push(sent / steps)
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mode, workflow] of Object.entries(MODES)) {
      const [c0, u0, s0, q0, t0] = [cpuUs(), userUs(), serverCpuUs(backends), statements(), nowUs()]
      await Promise.all(Array.from({ length: workers }, (_, w) => execute(workflow, `r${round}-${mode}-${workers}-${w}`)))
      record(mode, workers * STEPS, nowUs() - t0, cpuUs() - c0, userUs() - u0, serverCpuUs(backends) - s0, statements() - q0)
    }
    const [c0, u0, s0, q0, t0] = [cpuUs(), userUs(), serverCpuUs(floorBackends), statements(), nowUs()]
    await Promise.all(floorClients.map(async (client, w) => {
      for (let i = 0; i < STEPS; i++) {
        const row = sample[i % sample.length]
        await client.query("INSERT INTO floor_events (run_key, seq, event_id, timestamp, step_key, payload, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)", [-(1 + 2 * (round * 10_000 + workers * 100 + w)), i, row.event_id, row.timestamp, row.step_key, row.payload, row.prev_hash, row.hash])
      }
    }))
    record("floor_commit", workers * STEPS, nowUs() - t0, cpuUs() - c0, userUs() - u0, serverCpuUs(floorBackends) - s0, statements() - q0)
    const [c1, u1, s1, q1, t1] = [cpuUs(), userUs(), serverCpuUs(floorBackends), statements(), nowUs()]
    await Promise.all(floorClients.map(async (client, w) => {
      for (let i = 0; i < STEPS; i++) {
        const [a, b] = [sample[0], sample[1]]
        await client.query(
          "INSERT INTO floor_events (run_key, seq, event_id, timestamp, step_key, payload, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8), ($1,$9,$10,$11,$12,$13,$14,$15)",
          [-(2 + 2 * (round * 10_000 + workers * 100 + w)), 2 * i, a.event_id, a.timestamp, a.step_key, a.payload, a.prev_hash, a.hash, 2 * i + 1, b.event_id, b.timestamp, b.step_key, b.payload, b.prev_hash, b.hash]
        )
      }
    }))
    record("floor_2rows", workers * STEPS, nowUs() - t1, cpuUs() - c1, userUs() - u1, serverCpuUs(floorBackends) - s1, statements() - q1)
  }
  await Promise.all(floorClients.map((c) => c.end()))
  for (const [name, s] of Object.entries(stats)) {
    console.log(`w${workers} ${name.padEnd(12)} wall ${median(s.wall).toFixed(0).padStart(5)} us  node cpu ${median(s.cpu).toFixed(0).padStart(4)} us (user ${median(s.user).toFixed(0).padStart(4)}) server cpu ${median(s.server).toFixed(0).padStart(4)} us  statements ${median(s.statements).toFixed(2)}`)
  }
}
await admin.end()
await Effect.runPromise(Scope.close(scope, Exit.void))
