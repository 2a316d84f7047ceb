// Signals and workers across processes on one SQLite file: a run waiting for a signal pauses, and its task with it
// (the worker's slot is free); a signal sent from another process wakes the task, and a worker resumes the run. A wait
// with a deadline queues its task for the deadline.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { EventStore, TaskQueue } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { cleanup, eventually, tempDb } from "./helpers.js"
import { tenant } from "./signals/shared.js"

afterAll(cleanup)

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const WORKER = fileURLToPath(new URL("./signals/worker.ts", import.meta.url))
const SIGNAL = fileURLToPath(new URL("./signals/signal.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./signals/tsconfig.json", import.meta.url))
const env = { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG }

/** A worker process, stopped (SIGTERM, then SIGKILL if it lingers) when the test's scope closes. */
const worker = (filename: string, workerId: string) =>
  Effect.acquireRelease(
    Effect.sync(() => spawn(process.execPath, ["--import", "tsx", WORKER, filename, workerId], { cwd: REPO_ROOT, env, stdio: "ignore" })),
    (child: ChildProcess) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve()
          const kill = setTimeout(() => child.kill("SIGKILL"), 10_000)
          child.once("exit", () => (clearTimeout(kill), resolve()))
          child.kill("SIGTERM")
        })
      )
  )

/** Sends the signal from a process of its own; its result line. */
const sendSignal = (filename: string, runId: string, payload: unknown) =>
  Effect.async<unknown, Error>((resume) => {
    const child = execFile(process.execPath, ["--import", "tsx", SIGNAL, filename, runId, JSON.stringify(payload)], { cwd: REPO_ROOT, env, timeout: 90_000 }, (error, stdout, stderr) => {
      try {
        resume(Effect.succeed(JSON.parse(stdout.trim().split("\n").pop() ?? "")))
      } catch {
        resume(Effect.fail(new Error(`the sender printed nothing (${String(error)}): ${stderr}`)))
      }
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const open = (filename: string) =>
  Effect.map(Layer.build(SqliteStore.layer({ filename })), (ctx) => ({ queue: Context.get(ctx, TaskQueue.TaskQueue), store: Context.get(ctx, EventStore.EventStore) }))

describe("signals with workers (SQLite, processes)", () => {
  it.live("a waiting run pauses with its task; a signal from another process wakes it and a worker finishes the run", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const { queue, store } = yield* open(filename)
      const task = yield* queue.enqueue({ workflow: "approval", input: {}, tenant })
      yield* worker(filename, "w1")
      yield* eventually("the task paused at its wait", 90, () => Effect.map(queue.get(tenant.tenantId, task.taskId), (t) => t.status === "paused"))
      const paused = yield* queue.get(tenant.tenantId, task.taskId)
      expect(paused.outcome).toMatchObject({ _tag: "paused", ticket: "signal:signal:0" })
      expect((yield* store.getRun(tenant.tenantId, task.runId)).status).toBe("paused")

      const sent = yield* sendSignal(filename, task.runId, { by: "bob" })
      expect(sent).toMatchObject({ ok: { signalId: expect.any(String) } })
      yield* eventually("the task completed", 90, () => Effect.map(queue.get(tenant.tenantId, task.taskId), (t) => t.status === "completed"))
      expect((yield* queue.get(tenant.tenantId, task.taskId)).outcome).toEqual({ _tag: "completed", output: "decided by bob" })
      const log = yield* store.readEvents(tenant.tenantId, task.runId)
      expect(log.map((e) => `${e.type}@${e.stepKey}`)).toEqual([
        "RunStarted@run", "SignalAwaited@signal:0", "PauseRequested@signal:0", "SignalSent@run", "RunResumed@run", "SignalReceived@signal:0", "RunCompleted@run"
      ])
      // The run has ended: a later signal is refused, and nothing is written.
      expect(yield* sendSignal(filename, task.runId, { by: "late" })).toEqual({ error: "SignalRefused" })
      expect(yield* store.readEvents(tenant.tenantId, task.runId)).toEqual(log)
    }).pipe(Effect.scoped), 180_000)

  it.live("a wait with a deadline queues its task for the deadline; a worker resumes the run then and it times out", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const { queue, store } = yield* open(filename)
      const task = yield* queue.enqueue({ workflow: "approval", input: { timeoutMillis: 3_000 }, tenant })
      yield* worker(filename, "w2")
      yield* eventually("the task completed", 90, () => Effect.map(queue.get(tenant.tenantId, task.taskId), (t) => t.status === "completed"))
      expect((yield* queue.get(tenant.tenantId, task.taskId)).outcome).toEqual({ _tag: "completed", output: "decided by nobody (timeout)" })
      const log = yield* store.readEvents(tenant.tenantId, task.runId)
      expect(log.map((e) => `${e.type}@${e.stepKey}`)).toEqual([
        "RunStarted@run", "SignalAwaited@signal:0", "PauseRequested@signal:0", "RunResumed@run", "SignalTimedOut@signal:0", "RunCompleted@run"
      ])
      const awaited = log[1]!
      const deadline = awaited.payload._tag === "SignalAwaited" ? awaited.payload.deadline : undefined
      // The deadline is the wait's start (read when the code got there, before its event was written) plus the timeout.
      expect(deadline! - 3_000).toBeGreaterThanOrEqual(log[0]!.timestamp)
      expect(deadline! - 3_000).toBeLessThanOrEqual(awaited.timestamp)
      // Resumed for the deadline, not before it; timed out at it, with the deadline logged when the wait began.
      expect(log[3]!.timestamp).toBeGreaterThanOrEqual(deadline!)
      expect(log[4]!.payload).toEqual({ _tag: "SignalTimedOut", name: "decision", deadline })
    }).pipe(Effect.scoped), 180_000)
})
