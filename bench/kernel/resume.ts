// resume_10k_vs_floor (part of `pnpm bench kernel`): a crashed run of 10,000 step events (5,000 durable tool steps,
// then its process died) resumed to its first new step, against a bare ordered SELECT of the same rows + JSON.parse of
// each payload. The resume is what a process does after a crash: `kernel.resume` reads the run's record, reads and
// verifies its log a page at a time while the code replays over it, claims the run (its `RunResumed`, one commit) and
// reaches the code's first new step, where the clock stops. Each round resumes a fresh copy of the crashed file (made
// once with VACUUM INTO) in a store opened for it beforehand, so every round meets the same log; the floor reads that
// copy. Rounds alternate which goes first; medians over the measured rounds, after WARMUP rounds that are not counted
// (their resumes are reported in the detail). The detail gives the claim's commit apart (timed around the store's
// append), and the ratio without it.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { EventStore, Kernel, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { crashed, crashingWorkflow } from "./crashed.js"
import { echo, tenant } from "../fixtures.js"
import { type BenchResult, median, nowUs, progress } from "../lib.js"

const STEPS = 5000 // two events each: 10,000 step events
const ROUNDS = 10
/**
 * Rounds run first and not counted, as in the concurrent row: the row is about a process whose code V8 has compiled (the
 * floor, a plain loop, is compiled at once). Measured standalone (Nov 28, 12:20 UTC; bench/kernel/README.md), the first
 * rounds' resumes took 125-165, 64-85, 41-46 and 34-36 ms on Node 20 against ~33-40 ms after, and 75-120, 56-76 and
 * 47-70 ms on Node 24 against 22-38 ms from about the sixth; with only the first round left out, three of a median's
 * ten rounds were still cold ones.
 */
const WARMUP = 5

/** When the code reached its first new step in the current execution (set by the step's own effect). */
let reachedAt: number | undefined

const crashing = crashingWorkflow(() => (reachedAt = nowUs()))

/** Microseconds the store's appends took in the current round: the resume's claim (its `RunResumed`, one commit). */
let appendUs = 0

const layerOn = (filename: string) => {
  const timed = Layer.effect(
    EventStore.EventStore,
    Effect.map(EventStore.EventStore, (store): EventStore.Service => ({
      ...store,
      append: (request) =>
        Effect.suspend(() => {
          const t0 = nowUs()
          return Effect.ensuring(store.append(request), Effect.sync(() => (appendUs += nowUs() - t0)))
        })
    }))
  ).pipe(Layer.provide(SqliteStore.layer({ filename })))
  return Layer.provideMerge(Kernel.layer(), Layer.mergeAll(timed, ScriptedModel.layer([]), ToolRegistry.layer([echo])))
}

/** Runs `effect`, which must end in the benchmark's crash. */

export const resume10k = async (): Promise<BenchResult["rows"][number]> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-resume-"))
  const crashedFile = join(dir, "crashed.db")
  try {
    progress(`resume_10k_vs_floor: writing a run of ${STEPS * 2} step events that crashes after them`)
    const writer = ManagedRuntime.make(layerOn(join(dir, "write.db")))
    try {
      await crashed(writer, Effect.flatMap(Kernel.Kernel, (k) => k.execute(crashing, { runId: "crashed", tenant, input: { n: STEPS } })))
      const info = await writer.runPromise(Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "crashed")))
      if (info.status !== "running" || info.headSeq !== STEPS * 2 + 1) throw new Error(`the crashed run is ${info.status} at seq ${info.headSeq}`)
    } finally {
      await writer.dispose()
    }
    const Sqlite = SqliteStore.driver()
    const source = new Sqlite(join(dir, "write.db"))
    source.exec(`VACUUM INTO '${crashedFile}'`)
    source.close()

    const resumeUs: Array<number> = []
    const floorUs: Array<number> = []
    const claimUs: Array<number> = []
    const warmupUs: Array<number> = []
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      progress(round < WARMUP ? `resume_10k_vs_floor warm-up ${round + 1}/${WARMUP}` : `resume_10k_vs_floor round ${round + 1 - WARMUP}/${ROUNDS}`)
      const copy = join(dir, `round-${round}.db`)
      const seed = new Sqlite(crashedFile)
      seed.exec(`VACUUM INTO '${copy}'`)
      seed.close()
      const runtime = ManagedRuntime.make(layerOn(copy))
      const floor = new Sqlite(copy)
      try {
        // The store is open (and its statements warm) before the clock starts: a process resumes a run it has opened.
        await runtime.runPromise(Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "crashed")))
        // The crashed log's rows (a resume that went first has appended its `RunResumed` since).
        const all = floor.prepare(`SELECT * FROM events WHERE tenant_id = ? AND run_id = ? AND seq <= ? ORDER BY seq`)
        const bare = () => {
          const t0 = nowUs()
          let parsed = 0
          for (const row of all.all(tenant.tenantId, "crashed", STEPS * 2 + 1) as Array<{ payload: string }>) parsed += JSON.parse(row.payload) === null ? 0 : 1
          const t1 = nowUs()
          if (parsed !== STEPS * 2 + 1) throw new Error(`the floor read ${parsed} rows`)
          return t1 - t0
        }
        const resume = async () => {
          reachedAt = undefined
          appendUs = 0
          const t0 = nowUs()
          await crashed(runtime, Effect.flatMap(Kernel.Kernel, (k) => k.resume({ tenantId: tenant.tenantId, runId: "crashed", workflow: crashing })))
          if (reachedAt === undefined) throw new Error("the resumed run did not reach its first new step")
          return { us: reachedAt - t0, claimUs: appendUs }
        }
        const floorFirst = round % 2 === 1
        const f0 = floorFirst ? bare() : 0
        const r = await resume()
        const f = floorFirst ? f0 : bare()
        if (round < WARMUP) warmupUs.push(r.us)
        else {
          resumeUs.push(r.us)
          claimUs.push(r.claimUs)
          floorUs.push(f)
        }
      } finally {
        floor.close()
        await runtime.dispose()
        rmSync(copy, { force: true })
        rmSync(`${copy}-wal`, { force: true })
        rmSync(`${copy}-shm`, { force: true })
      }
    }
    const resume = median(resumeUs)
    const floor = median(floorUs)
    return {
      metric: "resume_10k_vs_floor",
      value: resume / floor,
      unit: "ratio",
      baseline: `bare ordered SELECT of the run's rows (${SqliteStore.driverName}) + JSON.parse of each payload`,
      baselineValue: floor,
      ratio: resume / floor,
      detail: {
        resume_median_us: resume,
        floor_median_us: floor,
        // The claim's commit (an fsync at synchronous=FULL) is part of the resume; on a busy disk it is most of the spread.
        claim_commit_median_us: median(claimUs),
        without_claim_vs_floor: median(resumeUs.map((us, i) => us - claimUs[i]!)) / floor,
        events: STEPS * 2 + 1,
        rounds: resumeUs.length,
        // The uncounted first rounds' resumes (a process whose code is still being compiled), in order.
        warmup_resume_us: warmupUs.map((us) => Math.round(us)).join(" "),
        target_max_ratio: 1.2
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
