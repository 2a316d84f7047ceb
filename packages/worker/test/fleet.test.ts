// Four worker processes on one PostgreSQL database run 200 tasks of five tool steps each; one of them is killed
// with SIGKILL in the middle. Every task must complete, every step's side effect must reach the receiving system
// once (by idempotency key), no run may be worked on by two live workers, and no log may fork.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { inject } from "vitest"
import { EventStore, Kernel, TaskQueue, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { ArtanaSession, Worker } from "@artana/worker"
import { cleanup, eventually, layer, makeWorld, tenant } from "./helpers.js"

afterAll(cleanup)

const pg = PgTest.server(inject("artanaPg"))

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const WORKER = fileURLToPath(new URL("./fleet/worker.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./fleet/tsconfig.json", import.meta.url))

const TASKS = 200
const STEPS = 5
const WORKERS = ["w1", "w2", "w3", "w4"]
const CONCURRENCY = 4
const VICTIM = "w2"

interface Proc {
  readonly child: ChildProcess
  readonly exited: Promise<number | null>
  readonly stderr: () => string
  /** Runs this worker logged it lost (its lease ran out and another worker took the task), from its log lines. */
  readonly lost: () => ReadonlySet<string>
}

const startWorker = (url: string, effectsFile: string, workerId: string): Proc => {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER, url, effectsFile, workerId, String(CONCURRENCY)], {
    cwd: REPO_ROOT,
    env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stderr = ""
  const lost = new Set<string>()
  let partial = ""
  const scan = (chunk: string) => {
    const lines = (partial + chunk).split("\n")
    partial = lines.pop() ?? ""
    for (const line of lines) {
      // Worker.run's warnings when a lease ran out under it: "lost the task to another worker" (its heartbeat found the
      // task taken) or "finished after losing the task" (the kernel refused its append: OwnershipLost).
      if (!/lost the task|after losing the task/.test(line)) continue
      const runId = /runId=(\S+)/.exec(line)?.[1]
      if (runId !== undefined) lost.add(runId)
    }
  }
  child.stdout?.setEncoding("utf8").on("data", scan)
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000)
    scan(chunk)
  })
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, exited, stderr: () => stderr, lost: () => lost }
}

/** One execution of a tool: `<runId>/<stepKey> <workerId> <pid>`. */
interface Execution {
  readonly key: string
  readonly runId: string
  readonly workerId: string
}

const executions = (file: string): ReadonlyArray<Execution> =>
  (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "").split("\n").filter((l) => l !== "").map((line) => {
    const [key = "", workerId = ""] = line.split(" ")
    return { key, runId: key.slice(0, key.lastIndexOf("/")), workerId }
  })

describe.skipIf(pg.url === undefined)(`a fleet of workers on PostgreSQL (${pg.description})`, () => {
  it.live(`${WORKERS.length} worker processes run ${TASKS} tasks of ${STEPS} tool steps; one is SIGKILLed mid-run`, () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-fleet-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const effectsFile = path.join(dir, "effects.log")

      // The test's own view of the database: the queue to enqueue and watch, the log and a kernel to verify.
      const context = yield* Layer.build(
        Layer.provideMerge(Kernel.layer(), Layer.mergeAll(PostgresStore.layer({ url }), ScriptedModel.layer([]), ToolRegistry.layer([])))
      )
      const queue = Context.get(context, TaskQueue.TaskQueue)
      const store = Context.get(context, EventStore.EventStore)
      const kernel = Context.get(context, Kernel.Kernel)

      const tasks = yield* Effect.forEach(
        Array.from({ length: TASKS }, (_, n) => n),
        (n) => queue.enqueue({ workflow: "pipeline", input: { n }, tenant }),
        { concurrency: 8 }
      )

      const procs = new Map(WORKERS.map((id) => [id, startWorker(url, effectsFile, id)]))
      yield* Effect.addFinalizer(() =>
        Effect.promise(async () => {
          for (const p of procs.values()) p.child.kill("SIGKILL")
          await Promise.all([...procs.values()].map((p) => p.exited))
        })
      )

      // Kill the victim once it has done real work and while much is left to do.
      yield* eventually(`${VICTIM} has executed 25 steps`, 120, () => executions(effectsFile).filter((e) => e.workerId === VICTIM).length >= 25)
      const victim = procs.get(VICTIM)!
      victim.child.kill("SIGKILL")
      expect(yield* Effect.promise(() => victim.exited)).toBe(null)
      const doneAtKill = executions(effectsFile).length
      expect(doneAtKill).toBeLessThan(TASKS * STEPS * 0.8)
      // What the victim held when it died: its tasks still `running` under its name.
      const orphans = (yield* queue.list(tenant.tenantId, { status: "running" })).filter((t) => t.workerId === VICTIM)

      const completed = () => Effect.map(queue.list(tenant.tenantId, { status: "completed" }), (done) => done.length === TASKS)
      yield* eventually(`all ${TASKS} tasks completed`, 240, () =>
        Effect.gen(function*() {
          for (const [id, p] of procs) {
            if (id !== VICTIM && p.child.exitCode !== null) return yield* Effect.dieMessage(`worker ${id} exited: ${p.stderr()}`)
          }
          return yield* completed()
        }))

      // Every task completed with its own output.
      for (const task of tasks) {
        const done = yield* queue.get(tenant.tenantId, task.taskId)
        expect(done.status).toBe("completed")
        expect(done.outcome).toEqual({ _tag: "completed", output: (task.input as { n: number }).n * 100 + 15 })
      }

      // Each step's side effect reached the receiving system once: exactly the expected idempotency keys, one per step.
      const all = executions(effectsFile)
      const keys = new Set(all.map((e) => e.key))
      const expected = new Set(tasks.flatMap((t) => Array.from({ length: STEPS }, (_, i) => `${t.runId}/tool:${i}`)))
      expect([...keys].sort()).toEqual([...expected].sort())
      // A step executed twice is one the victim left in doubt (requested, never completed): the kernel re-ran it, with
      // the same key, on the worker that took the run over. No other step ran twice.
      const byKey = new Map<string, Array<Execution>>()
      for (const e of all) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e])
      // A live worker gives a run up only when its lease ran out unrenewed (a starved process on a busy machine) and
      // it says so in its log; the kernel fences it, so it is a handover like the victim's, never two hands at once.
      const orphanRuns = new Set(orphans.map((t) => t.runId))
      const lostBy = (workerId: string, runId: string) =>
        workerId === VICTIM ? orphanRuns.has(runId) : procs.get(workerId)!.lost().has(runId)
      const lostCount = WORKERS.filter((w) => w !== VICTIM).reduce((n, w) => n + procs.get(w)!.lost().size, 0)
      const repeated = [...byKey.values()].filter((list) => list.length > 1)
      expect(repeated.length).toBeLessThanOrEqual(CONCURRENCY + lostCount)
      for (const list of repeated) {
        for (let i = 1; i < list.length; i++) {
          expect(list[i]!.workerId).not.toBe(list[i - 1]!.workerId)
          expect(lostBy(list[i - 1]!.workerId, list[i]!.runId), `${list[i]!.key} ran again after ${list[i - 1]!.workerId}`).toBe(true)
        }
      }

      // No run was worked on by two live workers: a run's executions belong to one worker, or change hands (never
      // interleaved) only where the worker before gave the run up: the victim's orphans, or a lease that ran out.
      const byRun = new Map<string, Array<string>>()
      for (const e of all) byRun.set(e.runId, [...(byRun.get(e.runId) ?? []), e.workerId])
      for (const [runId, workers] of byRun) {
        const distinct = workers.filter((w, i) => i === 0 || workers[i - 1] !== w)
        for (let i = 1; i < distinct.length; i++) {
          expect(lostBy(distinct[i - 1]!, runId), `run ${runId} left ${distinct[i - 1]} while it held it: ${workers.join(",")}`).toBe(true)
        }
      }

      // No log forked: every run verifies, has no gap, and holds exactly the events of its steps; a RunResumed only
      // where the victim died.
      let resumed = 0
      for (const task of tasks) {
        const report = yield* kernel.verify({ tenantId: tenant.tenantId, runId: task.runId })
        expect(report.ok, `run ${task.runId}: ${JSON.stringify(report)}`).toBe(true)
        const log = yield* store.readEvents(tenant.tenantId, task.runId)
        expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1))
        const types = log.map((e) => e.payload._tag)
        expect(types.filter((t) => t === "ToolCompleted")).toHaveLength(STEPS)
        expect(types.filter((t) => t === "ToolRequested").length).toBeGreaterThanOrEqual(STEPS)
        expect(types.filter((t) => t === "RunCompleted")).toHaveLength(1)
        const resumes = types.filter((t) => t === "RunResumed").length
        const givenUp = orphanRuns.has(task.runId) || WORKERS.some((w) => w !== VICTIM && lostBy(w, task.runId))
        if (resumes > 0) expect(givenUp).toBe(true)
        resumed += resumes
      }
      expect(resumed).toBeGreaterThan(0)
      expect(resumed).toBeLessThanOrEqual(orphans.length + lostCount)

      // The survivors shut down gracefully on SIGTERM.
      for (const [id, p] of procs) {
        if (id === VICTIM) continue
        p.child.kill("SIGTERM")
        expect(yield* Effect.promise(() => p.exited)).toBe(0)
      }
    }).pipe(Effect.scoped), 400_000)
  it.live("a worker idle on a one-hour poll wakes at once for work enqueued or answered in another process (LISTEN/NOTIFY)", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const world = makeWorld()
      // Two processes' worth of pools on one database: the worker's, and the one that submits and responds.
      const workerSide = yield* Layer.build(layer(world, PostgresStore.layer({ url })))
      const otherSide = Context.get(yield* Layer.build(layer(world, PostgresStore.layer({ url }))), ArtanaSession.ArtanaSession)
      const worker = yield* Effect.fork(
        Effect.provide(Worker.run({ workflows: world.workflows, concurrency: 2, pollInterval: "1 hour", leaseSeconds: 30 }), workerSide)
      )
      // Its first poll found nothing; from now on only a notification can wake it within the hour. What is notified
      // before its LISTEN is in place is not delivered (polling covers that in production): wait for the LISTEN.
      yield* eventually("the worker listens", 60, () =>
        PgTest.withClient(url, (sql) =>
          Effect.map(
            sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`,
            (rows) => (rows[0]?.n ?? 0) > 0
          )))
      // Each wait below is bounded by a minute (a busy machine's run takes seconds), not by the worker's hour.
      const wait = { timeout: "60 seconds", pollInterval: "20 millis" } as const
      const greet = yield* otherSide.submit({ workflow: world.greet, input: { name: "woken" }, tenant })
      expect(yield* otherSide.waitForResult(tenant.tenantId, greet, wait)).toMatchObject({ status: "completed" })
      const approve = yield* otherSide.submit({ workflow: world.approve, input: { amount: 5 }, tenant })
      expect(yield* otherSide.waitForResult(tenant.tenantId, approve, wait)).toMatchObject({ status: "paused" })
      yield* otherSide.respond(tenant.tenantId, approve, { approved: true })
      expect(yield* otherSide.waitForResult(tenant.tenantId, approve, wait)).toMatchObject({ status: "completed", output: "approved" })
      yield* Fiber.interrupt(worker)
    }).pipe(Effect.scoped), 300_000)
})
