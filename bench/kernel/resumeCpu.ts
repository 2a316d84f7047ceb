// CPU of `resume_10k_vs_floor`'s resume against its floor, for A/B work on the resume path (not a row of `pnpm bench
// kernel`): the crashed run of `resume.ts` (5,000 durable tool steps, then a crash) is written once; each round
// resumes a fresh copy of it (opened beforehand, as the bench does) to its first new step, and reads the floor (bare
// ordered SELECT + JSON.parse) of that copy, CPU by `process.cpuUsage` (user + system, the claim's commit included).
// Prints the median CPU of each and the ratio, one JSON line. `replay_ms`: `kernel.replay` of the same crashed log in each
// round, on a copy and a runtime of its own (as cold as the resume's), so `resume_ms - replay_ms` is what a resume adds
// to reading, verifying and re-running the log (its claim and commit); not measured with PROFILE (0).
//   node --import tsx kernel/resumeCpu.ts [ROUNDS]     (started in bench/)
// PROFILE=FILE writes a CPU profile of the measured resumes (`node:inspector`, 200 us sampling) to FILE.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause, Effect, Exit, Layer, ManagedRuntime } from "effect"
import { EventStore, Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { crashed, crashingWorkflow } from "./crashed.js"
import { echo, tenant } from "../fixtures.js"
import { median } from "../lib.js"

const rounds = Number(process.argv[2] ?? "10")
const STEPS = 5000

/** CPU used when the code reached its first new step in the current execution. */
let reachedCpu: NodeJS.CpuUsage | undefined
let reachedAt = 0

const crashing = crashingWorkflow(() => (reachedCpu = process.cpuUsage(), reachedAt = performance.now()))

const layerOn = (filename: string) =>
  Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([echo])))


const ms = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000

const dir = mkdtempSync(join(tmpdir(), "artana-resume-cpu-"))
try {
  const crashedFile = join(dir, "crashed.db")
  const writer = ManagedRuntime.make(layerOn(join(dir, "write.db")))
  await crashed(writer, Effect.flatMap(Kernel.Kernel, (k) => k.execute(crashing, { runId: "crashed", tenant, input: { n: STEPS } })))
  await writer.dispose()
  const Sqlite = SqliteStore.driver()
  const source = new Sqlite(join(dir, "write.db"))
  source.exec(`VACUUM INTO '${crashedFile}'`)
  source.close()
  const profile = process.env["PROFILE"]
  const session = profile === undefined ? undefined : new Session()
  const resumes: Array<number> = []
  const floors: Array<number> = []
  const walls: Array<number> = []
  const floorWalls: Array<number> = []
  const replays: Array<number> = []
  const warmup = 2
  /** A fresh copy of the crashed run's file, with a runtime opened on it (the run's row read once, as the bench does). */
  const opened = async (copy: string) => {
    const seed = new Sqlite(crashedFile)
    seed.exec(`VACUUM INTO '${copy}'`)
    seed.close()
    const runtime = ManagedRuntime.make(layerOn(copy))
    await runtime.runPromise(Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "crashed")))
    return runtime
  }
  const removed = (copy: string) => {
    rmSync(copy, { force: true })
    rmSync(`${copy}-wal`, { force: true })
    rmSync(`${copy}-shm`, { force: true })
  }
  /** CPU of `kernel.replay` of the crashed log, on a copy and a runtime of its own (as cold as the resume's). */
  const replayCpu = async (copy: string) => {
    const runtime = await opened(copy)
    const c0 = process.cpuUsage()
    const replayed = await runtime.runPromiseExit(Effect.flatMap(Kernel.Kernel, (k) => k.replay(crashing, { tenantId: tenant.tenantId, runId: "crashed" })))
    const c = ms(process.cpuUsage(c0))
    // The replay ends where the log does: every recorded step replayed, its code asks for the crashed step, which the
    // log does not hold (a replay runs no new step), and it fails there.
    if (Exit.isSuccess(replayed) || !Cause.pretty(replayed.cause).includes('the code asked for step "after-crash"')) {
      throw new Error(`the replay did not end at the crashed step: ${Exit.isSuccess(replayed) ? "it succeeded" : Cause.pretty(replayed.cause)}`)
    }
    await runtime.dispose()
    removed(copy)
    return c
  }
  for (let round = 0; round < rounds + warmup; round++) {
    const p = session === undefined ? await replayCpu(join(dir, `replay-${round}.db`)) : 0
    const copy = join(dir, `round-${round}.db`)
    const runtime = await opened(copy)
    const floor = new Sqlite(copy)
    const all = floor.prepare(`SELECT * FROM events WHERE tenant_id = ? AND run_id = ? AND seq <= ? ORDER BY seq`)
    const bare = () => {
      const fw0 = performance.now()
      const c0 = process.cpuUsage()
      let parsed = 0
      for (const row of all.all(tenant.tenantId, "crashed", STEPS * 2 + 1) as Array<{ payload: string }>) parsed += JSON.parse(row.payload) === null ? 0 : 1
      const c = ms(process.cpuUsage(c0))
      floorWalls.push(performance.now() - fw0)
      if (parsed !== STEPS * 2 + 1) throw new Error(`the floor read ${parsed} rows`)
      return c
    }
    if (round === warmup && session !== undefined) {
      session.connect()
      await session.post("Profiler.enable")
      await session.post("Profiler.setSamplingInterval", { interval: 200 })
      await session.post("Profiler.start")
    }
    const f0 = round % 2 === 1 ? bare() : undefined
    reachedCpu = undefined
    const w0 = performance.now()
    const c0 = process.cpuUsage()
    await crashed(runtime, Effect.flatMap(Kernel.Kernel, (k) => k.resume({ tenantId: tenant.tenantId, runId: "crashed", workflow: crashing })))
    if (reachedCpu === undefined) throw new Error("the resumed run did not reach its first new step")
    const r = ms(process.cpuUsage(c0)) - (ms(process.cpuUsage()) - ms(reachedCpu))
    const w = reachedAt - w0
    const f = f0 ?? bare()
    if (round >= warmup) {
      resumes.push(r)
      walls.push(w)
      floors.push(f)
      replays.push(p)
    }
    floor.close()
    await runtime.dispose()
    removed(copy)
  }
  if (session !== undefined && profile !== undefined) {
    const taken = await session.post("Profiler.stop")
    writeFileSync(profile, JSON.stringify(taken.profile))
    session.disconnect()
  }
  const m = (xs: Array<number>) => Math.round(median(xs) * 10) / 10
  console.log(JSON.stringify({
    resume_ms: m(resumes),
    floor_ms: m(floors),
    replay_ms: m(replays),
    ratio: Math.round(median(resumes) / median(floors) * 100) / 100,
    resume_wall_ms: m(walls),
    floor_wall_ms: m(floorWalls),
    resume_min_ms: Math.round(Math.min(...resumes) * 10) / 10,
    floor_min_ms: Math.round(Math.min(...floors) * 10) / 10
  }))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
