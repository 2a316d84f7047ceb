// Fencing, across processes (issue #13, item 2). A worker freezes (SIGSTOP) at the worst moment: its `ToolRequested`
// is committed and its handler has not started. Its lease runs out; another worker takes the task over, runs the
// call again (the tool is idempotent) and completes the run. Then the frozen worker is continued (SIGCONT): it must
// run no handler and write nothing, neither a side effect (the effects file) nor an event (the log). 50 trials on
// SQLite and 50 on PostgreSQL: 5 freezes of one stalling process per store, 10 tasks each, a fresh taker each time.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { inject } from "vitest"
import { EventStore, TaskQueue } from "@artana/core"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { cleanup, eventually, tempDb, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

const pg = PgTest.server(inject("artanaPg"))

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const WORKER = fileURLToPath(new URL("./fencing/worker.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./fencing/tsconfig.json", import.meta.url))

const ROUNDS = Number(process.env.ARTANA_FENCING_ROUNDS ?? 5)
/**
 * A round starts a fresh taker, `node --import tsx` of fencing/worker.ts: 4 s of CPU, and ~50 s on a busy machine (2
 * cores, load 30-40). The five rounds took 102 s (SQLite) and 80 s (PostgreSQL) at load 15-30; the limit allows each
 * round two minutes.
 */
const LIMIT = (ROUNDS * 120 + 60) * 1000
const TASKS_PER_ROUND = 10

interface Proc {
  readonly child: ChildProcess
  readonly pid: number
  readonly exited: Promise<number | null>
  /** Everything it printed (the worker's log lines), stdout and stderr. */
  readonly output: () => string
}

const start = (kind: "sqlite" | "pg", location: string, effectsFile: string, markerFile: string, workerId: string, role: string): Proc => {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER, kind, location, effectsFile, markerFile, workerId, role], {
    cwd: REPO_ROOT,
    env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, pid: child.pid ?? -1, exited, output: () => output }
}

/** Linux's view of a process: "T" while it is stopped. */
const state = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[0] ?? "?"
  } catch {
    return "gone"
  }
}

const lines = (file: string): ReadonlyArray<string> => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : [])

const count = (text: string, needle: string): number => text.split(needle).length - 1

const LOST = "lost the task to another worker"

const trials = (kind: "sqlite" | "pg", location: string, stores: Layer.Layer<EventStore.EventStore | TaskQueue.TaskQueue, unknown>) =>
  Effect.gen(function*() {
    const dir = tempDir()
    const effectsFile = path.join(dir, "effects.log")
    const markerFile = path.join(dir, "marker.log")
    const context = yield* Layer.build(Layer.orDie(stores))
    const queue = Context.get(context, TaskQueue.TaskQueue)
    const store = Context.get(context, EventStore.EventStore)

    const procs: Array<Proc> = []
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        for (const p of procs) {
          p.child.kill("SIGCONT")
          p.child.kill("SIGKILL")
        }
        await Promise.all(procs.map((p) => p.exited))
      })
    )
    const stale = start(kind, location, effectsFile, markerFile, "stale", `stall:${TASKS_PER_ROUND}`)
    procs.push(stale)

    for (let round = 1; round <= ROUNDS; round++) {
      const lostBefore = count(stale.output(), LOST)
      const tasks = yield* Effect.forEach(
        Array.from({ length: TASKS_PER_ROUND }, (_, i) => round * 100 + i),
        (n) => queue.enqueue({ workflow: "fenced", input: { n }, tenant })
      )
      // The stalling worker claims them all, commits each call's ToolRequested, and freezes before any handler.
      yield* eventually(`the stalling worker froze (round ${round})`, 90, () => {
        if (stale.child.exitCode !== null) throw new Error(`the stalling worker exited: ${stale.output()}`)
        return lines(markerFile).length === round && state(stale.pid) === "T"
      })
      for (const task of tasks) {
        const log = yield* store.readEvents(tenant.tenantId, task.runId)
        expect(log.map((e) => e.payload._tag)).toEqual(["RunStarted", "ToolRequested"])
      }
      expect(lines(effectsFile).filter((l) => l.includes(" stale "))).toEqual([])

      // Its leases run out while it is frozen; a fresh worker takes every task over and completes its run.
      const taker = start(kind, location, effectsFile, markerFile, `taker-${round}`, "take")
      procs.push(taker)
      yield* eventually(`the taker completed round ${round}`, 90, () =>
        Effect.gen(function*() {
          if (taker.child.exitCode !== null) throw new Error(`the taker exited: ${taker.output()}`)
          const done = yield* Effect.forEach(tasks, (t) => queue.get(t.tenantId, t.taskId))
          return done.every((t) => t.status === "completed")
        }))
      const effectsBefore = lines(effectsFile)
      const logsBefore = yield* Effect.forEach(tasks, (t) => store.readEvents(tenant.tenantId, t.runId))

      // Continued, the stale worker finds it lost every task, and stops.
      expect(state(stale.pid)).toBe("T")
      stale.child.kill("SIGCONT")
      yield* eventually(`the stale worker gave up its ${TASKS_PER_ROUND} tasks (round ${round})`, 60, () => {
        if (stale.child.exitCode !== null) throw new Error(`the stalling worker exited: ${stale.output()}`)
        return count(stale.output(), LOST) >= lostBefore + TASKS_PER_ROUND
      })
      taker.child.kill("SIGTERM")
      expect(yield* Effect.promise(() => taker.exited)).toBe(0)

      // No handler ran in the stale worker: every call ran once, in the taker, with the taker's (higher) fence.
      const effects = lines(effectsFile)
      expect(effects).toEqual(effectsBefore)
      expect(effects.filter((l) => l.includes(" stale "))).toEqual([])
      for (const task of tasks) {
        expect(effects.filter((l) => l.startsWith(`${task.runId}/`))).toEqual([`${task.runId}/tool:0 taker-${round} 2`])
      }
      // And nothing was written to the log: each run holds exactly what the stale worker wrote before it froze and
      // what the taker wrote, and is owned by the taker's epoch.
      for (const [i, task] of tasks.entries()) {
        const log = yield* store.readEvents(tenant.tenantId, task.runId)
        expect(log).toEqual(logsBefore[i])
        expect(log.map((e) => e.payload._tag)).toEqual(["RunStarted", "ToolRequested", "RunResumed", "ToolCompleted", "RunCompleted"])
        expect((yield* store.getRun(tenant.tenantId, task.runId)).ownerEpoch).toBe(2)
        expect((yield* queue.get(task.tenantId, task.taskId)).outcome).toEqual({ _tag: "completed", output: round * 100 + i })
      }
    }
    // Each of them stopped because a fence refused it (its lease ran out while it was frozen): the run's owner epoch
    // ("no longer owns the run") or, when its heartbeat reached the queue before its run reached the store, the
    // task's lease ("no longer holds task"). Which one comes first is scheduling; both are the fence.
    const fenced = count(stale.output(), "no longer owns the run") + count(stale.output(), "no longer holds task")
    expect(fenced).toBeGreaterThanOrEqual(ROUNDS * TASKS_PER_ROUND)
    stale.child.kill("SIGTERM")
    expect(yield* Effect.promise(() => stale.exited)).toBe(0)
  }).pipe(Effect.scoped)

describe("a worker frozen past its lease, continued after another worker completed its run", () => {
  it.live(`on SQLite: runs no handler and writes nothing (${ROUNDS * TASKS_PER_ROUND} trials)`, () => {
    const filename = tempDb()
    return trials("sqlite", filename, SqliteStore.layer({ filename, busyTimeout: "30 seconds" }))
  }, LIMIT)

  describe.skipIf(pg.url === undefined)(`on PostgreSQL (${pg.description})`, () => {
    it.live(`runs no handler and writes nothing (${ROUNDS * TASKS_PER_ROUND} trials)`, () =>
      Effect.gen(function*() {
        const url = yield* PgTest.freshDatabase(pg.url!)
        return yield* trials("pg", url, PostgresStore.layer({ url }))
      }).pipe(Effect.scoped), LIMIT)
  })
})
