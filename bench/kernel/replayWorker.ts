// The verified read's workers against each other, alternated in one process (not a row of `pnpm bench kernel`): a run
// of 10,000 step events (5,000 durable tool steps, completed) is written once; each round replays it (`kernel.replay`,
// one runtime, as `replay_10k_vs_floor` does) once each way, in alternating order, then resumes a fresh copy of a crashed
// run of the same length (`resume_10k_vs_floor`'s shape) each way, and reads the floor (bare ordered SELECT +
// JSON.parse). For each: wall time, the main thread's CPU and its time runnable but off a CPU ("queued":
// `/proc/self/task/PID/schedstat`, Linux), and the process's CPU (`process.cpuUsage`, every thread). MODE `verify` (the
// default): the verify worker (`verifyWorker.use`) on or off, the store's read-ahead worker off; `ahead`: the read-ahead
// worker (`readWorker.use`: it reads and hashes the pages on its own connection) on or off, the verify worker on.
// Prints medians, the events the verify worker hashed and the pages the read-ahead worker read, one JSON line.
//   node --import tsx kernel/replayWorker.ts [ROUNDS] [verify|ahead]     (started in bench/)
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { EventStore, Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { crashed, crashingWorkflow } from "./crashed.js"
import { echo, stepsWorkflow, tenant } from "../fixtures.js"
import { median } from "../lib.js"

const rounds = Number(process.argv[2] ?? "10")
const STEPS = 5000
const steps = stepsWorkflow("bench.steps")

const crashing = crashingWorkflow()

const layerOn = (filename: string) =>
  Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([echo])))

type Runtime = ManagedRuntime.ManagedRuntime<Kernel.Kernel | EventStore.EventStore, unknown>


/** The main thread's schedstat: ms on a CPU, and ms runnable but waiting for one (other threads and processes ran). */
const schedstat = () => readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ").map((ns) => Number(ns) / 1e6)
const processCpu = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1000
}

interface Sample {
  wall: number
  main: number
  /** The main thread's time runnable but off a CPU. */
  queued: number
  all: number
}
const timed = async (f: () => Promise<unknown>): Promise<Sample> => {
  const w0 = performance.now()
  const [m0 = 0, q0 = 0] = schedstat()
  const a0 = processCpu()
  await f()
  const [m1 = 0, q1 = 0] = schedstat()
  return { wall: performance.now() - w0, main: m1 - m0, queued: q1 - q0, all: processCpu() - a0 }
}
// The built core's worker module: the same instance \`@artana/core\` loads (its real path).
const VerifyWorker: { use: (on: boolean) => void; hashedSoFar: () => number } = await import(
  new URL("../../packages/core/dist/internal/verifyWorker.js", import.meta.url).href
)
const ReadWorker: { use: (on: boolean) => void; pagesSoFar: () => number } = await import(
  new URL("../../packages/core/dist/internal/readWorker.js", import.meta.url).href
)
const mode = process.argv[3] ?? "verify"
if (mode !== "verify" && mode !== "ahead") throw new Error("usage: replayWorker.ts [ROUNDS] [verify|ahead]")
const useWorker = (on: boolean) => {
  if (mode === "verify") {
    VerifyWorker.use(on)
    ReadWorker.use(false)
  } else {
    VerifyWorker.use(true)
    ReadWorker.use(on)
  }
}

const dir = mkdtempSync(join(tmpdir(), "artana-replay-worker-"))
try {
  const Sqlite = SqliteStore.driver()
  // The completed run (replays) and the crashed one (resumes), written once.
  const file = join(dir, "runs.db")
  const writer: Runtime = ManagedRuntime.make(layerOn(file))
  await writer.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(steps, { runId: "long", tenant, input: { n: STEPS } })))
  await crashed(writer, Effect.flatMap(Kernel.Kernel, (k) => k.execute(crashing, { runId: "crashed", tenant, input: { n: STEPS } })))
  await writer.dispose()
  const crashedFile = join(dir, "crashed.db")
  const source = new Sqlite(file)
  source.exec(`VACUUM INTO '${crashedFile}'`)
  source.close()
  const replayer: Runtime = ManagedRuntime.make(layerOn(file))
  const replay = () =>
    replayer.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.replay(steps, { tenantId: tenant.tenantId, runId: "long" }))).then((r) => {
      if (r.status !== "completed") throw new Error("the replay did not complete")
    })
  const floorDb = new Sqlite(file)
  const all = floorDb.prepare(`SELECT * FROM events WHERE tenant_id = ? AND run_id = ? ORDER BY seq`)
  const floor = async () => {
    let parsed = 0
    for (const row of all.all(tenant.tenantId, "long") as Array<{ payload: string }>) parsed += JSON.parse(row.payload) === null ? 0 : 1
    if (parsed < STEPS * 2) throw new Error(`the floor read ${parsed} rows`)
  }
  const resume = async (copy: string) => {
    const seed = new Sqlite(crashedFile)
    seed.exec(`VACUUM INTO '${copy}'`)
    seed.close()
    const runtime: Runtime = ManagedRuntime.make(layerOn(copy))
    await runtime.runPromise(Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "crashed")))
    const sample = await timed(() => crashed(runtime, Effect.flatMap(Kernel.Kernel, (k) => k.resume({ tenantId: tenant.tenantId, runId: "crashed", workflow: crashing }))))
    await runtime.dispose()
    for (const suffix of ["", "-wal", "-shm"]) rmSync(copy + suffix, { force: true })
    return sample
  }
  const samples: Record<string, Array<Sample>> = { replay_worker: [], replay_inline: [], resume_worker: [], resume_inline: [], floor: [] }
  const warmup = 2
  for (let round = 0; round < rounds + warmup; round++) {
    const order = round % 2 === 0 ? [true, false] : [false, true]
    const got: Record<string, Sample> = {}
    for (const on of order) {
      useWorker(on)
      got[on ? "replay_worker" : "replay_inline"] = await timed(replay)
    }
    for (const on of order) {
      useWorker(on)
      got[on ? "resume_worker" : "resume_inline"] = await resume(join(dir, `r-${round}-${on}.db`))
    }
    got["floor"] = await timed(floor)
    if (round >= warmup) for (const [k, v] of Object.entries(got)) samples[k]!.push(v)
  }
  floorDb.close()
  await replayer.dispose()
  const out: Record<string, number> = {}
  for (const [k, xs] of Object.entries(samples)) {
    out[`${k}_wall`] = Math.round(median(xs.map((s) => s.wall)) * 10) / 10
    out[`${k}_main`] = Math.round(median(xs.map((s) => s.main)) * 10) / 10
    out[`${k}_queued`] = Math.round(median(xs.map((s) => s.queued)) * 10) / 10
    out[`${k}_all`] = Math.round(median(xs.map((s) => s.all)) * 10) / 10
  }
  out["events_hashed_by_worker"] = VerifyWorker.hashedSoFar()
  out["pages_read_ahead"] = ReadWorker.pagesSoFar()
  console.log(JSON.stringify(out))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
