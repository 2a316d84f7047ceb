// CPU per durable tool step at N concurrent runs on PostgreSQL (default 8, two-phase; MODE=one for the tool's one-commit
// durability): ROUNDS rounds of N runs x 200 steps after a warm-up; per step, the medians of the Node process's CPU
// (`process.cpuUsage`), of the server's (the pool's backends, from /proc) and of their sum (on two cores shared by
// both, what the eight-run wall time follows), the statements sent, and the wall time per step (of the N runs together). A throwaway cluster with fsync off: CPU is
// what is measured. For A/B decisions, run it alternately on each build. Not a row of `pnpm bench postgres`.
// Run: `cd bench && npx tsx postgres/stepCpu.ts`; a profile: `node --cpu-prof --import tsx postgres/stepCpu.ts`.
import { Effect, Exit, Layer, Scope } from "effect"
import pg from "pg"
import { Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { echo, echoOneCommit, stepsWorkflow, tenant } from "../fixtures.js"
import { median } from "../lib.js"
import { nodeCpuUs, serverCpuUs } from "./cpu.js"
import { statements } from "./statements.js"

const WORKERS = Number(process.env.WORKERS ?? 8)
const STEPS = 200
const ROUNDS = Number(process.env.ROUNDS ?? 9)
const workflow = process.env.MODE === "one" ? stepsWorkflow("cpu.steps1", echoOneCommit) : stepsWorkflow("cpu.steps")
const url = process.env.ARTANA_BENCH_PG_URL

const scope = Effect.runSync(Scope.make())
const server = url !== undefined && url !== "" ? url : await Effect.runPromise(Scope.extend(Effect.map(PgTest.startCluster(PgTest.findBinaries()!), (c) => c.url), scope))
const layer = Layer.provideMerge(
  Kernel.layer(),
  Layer.mergeAll(PostgresStore.layer({ url: server, pool: { max: WORKERS, idleTimeout: "1 hour" }, applicationName: "stepcpu" }), ScriptedModel.layer([]), ToolRegistry.layer([echo, echoOneCommit]))
)
const runtime = await Effect.runPromise(Scope.extend(Layer.toRuntime(layer), scope))
const execute = (runId: string) =>
  Effect.runPromise(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(workflow, { runId, tenant, input: { n: STEPS } })), runtime))
const tag = `${process.pid}`
for (let i = 0; i < 4; i++) await Promise.all(Array.from({ length: WORKERS }, (_, w) => execute(`warm-${tag}-${i}-${w}`)))
const admin = new pg.Client({ connectionString: server })
await admin.connect()
const backends = (await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'stepcpu'")).rows.map((r) => Number(r.pid))
await admin.end()
const cpu: Array<number> = [], serverCpu: Array<number> = [], total: Array<number> = [], sent: Array<number> = [], wall: Array<number> = []
for (let round = 0; round < ROUNDS; round++) {
  const [c0, s0, q0, t0] = [nodeCpuUs(), serverCpuUs(backends), statements(), performance.now()]
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => execute(`r-${tag}-${round}-${w}`)))
  const [node, srv] = [(nodeCpuUs() - c0) / (WORKERS * STEPS), (serverCpuUs(backends) - s0) / (WORKERS * STEPS)]
  cpu.push(node)
  serverCpu.push(srv)
  total.push(node + srv)
  sent.push((statements() - q0) / (WORKERS * STEPS))
  wall.push((performance.now() - t0) * 1000 / (WORKERS * STEPS))
}
console.log(`w${WORKERS} ${process.env.MODE === "one" ? "one-commit" : "two-phase"}: node cpu per step median ${median(cpu).toFixed(0)} us, least ${Math.min(...cpu).toFixed(0)} us; server ${median(serverCpu).toFixed(0)} us; both ${median(total).toFixed(0)} us (least ${Math.min(...total).toFixed(0)}); statements ${median(sent).toFixed(2)}; wall per step ${median(wall).toFixed(0)} us`)
await Effect.runPromise(Scope.close(scope, Exit.void))
