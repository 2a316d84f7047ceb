// Signals across processes on one SQLite file: a run waits in one process, another sends it a signal; a waiting
// process dies by SIGKILL and a later one waits only what is left of the logged deadline.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type Event as EventModule, EventStore, Verify } from "@artana/core"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqliteStore } from "../src/index.js"

type Event = EventModule.Event

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./signal/child.ts", import.meta.url))

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-signals-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

interface Output {
  readonly outcome: string
  readonly result?: unknown
  readonly error?: { readonly _tag: string; readonly message: string }
}

interface Child {
  readonly process: ChildProcess
  readonly done: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly output: Output | undefined; readonly stderr: string }>
}

const start = (args: ReadonlyArray<string>): Child => {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
  const done = new Promise<Awaited<Child["done"]>>((resolve, reject) => {
    child.once("error", reject)
    child.once("close", (code, signal) => {
      const line = stdout.trim().split("\n").pop() ?? ""
      let output: Output | undefined
      try {
        output = JSON.parse(line)
      } catch {
        output = undefined
      }
      resolve({ code, signal, output, stderr })
    })
  })
  return { process: child, done }
}

/** Runs a child to its end. */
const run = (args: ReadonlyArray<string>) => Effect.promise(() => start(args).done)

const freshDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

/** The run's log, read in this process from the file the children write. */
const logOf = (db: string, runId: string) =>
  Effect.scoped(Effect.gen(function*() {
    const store = Context.get(yield* Layer.build(SqliteStore.layer({ filename: db })), EventStore.EventStore)
    return yield* Effect.orDie(store.readEvents("acme", runId))
  }))

/** Polls the log until `until` holds (the child got there); the child's own failure ends the wait. */
const waitForLog = (db: string, runId: string, until: (log: ReadonlyArray<Event>) => boolean, child: Child) =>
  Effect.gen(function*() {
    let exited = false
    void child.done.then(() => (exited = true))
    for (;;) {
      const log = yield* Effect.catchAllCause(logOf(db, runId), () => Effect.succeed<ReadonlyArray<Event>>([]))
      if (until(log)) return log
      if (exited) return yield* Effect.dieMessage(`the child ended before the log got there: ${JSON.stringify(yield* Effect.promise(() => child.done))}`)
      yield* Effect.sleep("100 millis")
    }
  })

const shape = (log: ReadonlyArray<Event>) => log.map((e) => `${e.type}@${e.stepKey}`)
const awaiting = (log: ReadonlyArray<Event>) => log.some((e) => e.payload._tag === "SignalAwaited")

describe("signals across processes (SQLite)", () => {
  it.live("a signal sent from another process wakes a run waiting in this one; one sent to the completed run is refused", () =>
    Effect.gen(function*() {
      const db = freshDb()
      const waiting = start(["execute", "--db", db, "--run", "r1"])
      yield* waitForLog(db, "r1", awaiting, waiting)
      const sent = yield* run(["signal", "--db", db, "--run", "r1", "--payload", JSON.stringify({ approve: true, by: "bob" })])
      expect(sent.output).toMatchObject({ outcome: "result", result: { signalId: expect.any(String), seq: expect.any(Number) } })
      const woken = yield* Effect.promise(() => waiting.done)
      expect(woken.output).toEqual({ outcome: "result", result: { status: "completed", runId: "r1", output: "approved by bob" } })
      const log = yield* logOf(db, "r1")
      expect(shape(log)).toEqual(["RunStarted@run", "SignalAwaited@signal:0", "SignalSent@run", "SignalReceived@signal:0", "RunCompleted@run"])
      expect(Verify.verifyEvents("r1", log).ok).toBe(true)

      const refused = yield* run(["signal", "--db", db, "--run", "r1", "--payload", JSON.stringify({ approve: false, by: "late" })])
      expect(refused.code).toBe(3)
      expect(refused.output?.error?._tag).toBe("SignalRefused")
      expect(yield* logOf(db, "r1")).toEqual(log)
    }), 600_000)

  it.live("a signal sent before the run gets to its wait is not lost: a later process's wait takes it", () =>
    Effect.gen(function*() {
      const db = freshDb()
      const paused = yield* run(["execute", "--db", db, "--run", "r2", "--pause-first"])
      expect(paused.output).toMatchObject({ outcome: "result", result: { status: "paused" } })
      const sent = yield* run(["signal", "--db", db, "--run", "r2", "--payload", JSON.stringify({ approve: true, by: "ann" })])
      expect(sent.output?.outcome).toBe("result")
      const resumed = yield* run(["resume", "--db", db, "--run", "r2"])
      expect(resumed.output).toEqual({ outcome: "result", result: { status: "completed", runId: "r2", output: "approved by ann" } })
      expect(shape(yield* logOf(db, "r2"))).toEqual([
        "RunStarted@run", "PauseRequested@pause:0", "SignalSent@run", "HumanResponded@pause:0", "SignalReceived@signal:1", "RunCompleted@run"
      ])
    }), 600_000)

  it.live("a timeout is durable: a waiting process killed by SIGKILL, resumed after its deadline, times out at once at the logged deadline", () =>
    Effect.gen(function*() {
      const db = freshDb()
      const timeout = 6_000
      const waiting = start(["execute", "--db", db, "--run", "r3", "--timeout-ms", String(timeout)])
      const before = yield* waitForLog(db, "r3", awaiting, waiting)
      waiting.process.kill("SIGKILL")
      expect((yield* Effect.promise(() => waiting.done)).signal).toBe("SIGKILL")
      const awaited = before.find((e) => e.payload._tag === "SignalAwaited")!
      const deadline = awaited.payload._tag === "SignalAwaited" ? awaited.payload.deadline ?? -1 : -1
      // The deadline is the wait's start (read when the code got there, before its event was written) plus the timeout.
      expect(deadline - timeout).toBeGreaterThanOrEqual(before[0]!.timestamp)
      expect(deadline - timeout).toBeLessThanOrEqual(awaited.timestamp)
      // Resume later: once the deadline has passed (the test waits, it asserts nothing on how long).
      while (Date.now() <= deadline) yield* Effect.sleep("200 millis")
      const resumed = yield* run(["execute", "--db", db, "--run", "r3", "--timeout-ms", String(timeout)])
      expect(resumed.output).toEqual({ outcome: "result", result: { status: "completed", runId: "r3", output: "declined by timeout" } })
      const log = yield* logOf(db, "r3")
      expect(shape(log)).toEqual(["RunStarted@run", "SignalAwaited@signal:0", "RunResumed@run", "SignalTimedOut@signal:0", "RunCompleted@run"])
      const resumedAt = log[2]!.timestamp
      const timedOut = log[3]!
      expect(timedOut.payload).toEqual({ _tag: "SignalTimedOut", name: "decision", deadline })
      expect(timedOut.timestamp).toBeGreaterThanOrEqual(deadline)
      // What was left of the wait was nothing: the resumed execution did not start the timeout over.
      expect(timedOut.timestamp - resumedAt).toBeLessThan(timeout)
    }), 600_000)

  it.live("a waiting process killed by SIGKILL, a signal sent while no process runs the run: the resumed run takes it", () =>
    Effect.gen(function*() {
      const db = freshDb()
      const waiting = start(["execute", "--db", db, "--run", "r4", "--timeout-ms", "600000"])
      yield* waitForLog(db, "r4", awaiting, waiting)
      waiting.process.kill("SIGKILL")
      yield* Effect.promise(() => waiting.done)
      const sent = yield* run(["signal", "--db", db, "--run", "r4", "--payload", JSON.stringify({ approve: true, by: "cy" })])
      expect(sent.output?.outcome).toBe("result")
      const resumed = yield* run(["execute", "--db", db, "--run", "r4", "--timeout-ms", "600000"])
      expect(resumed.output).toEqual({ outcome: "result", result: { status: "completed", runId: "r4", output: "approved by cy" } })
      expect(shape(yield* logOf(db, "r4"))).toEqual([
        "RunStarted@run", "SignalAwaited@signal:0", "SignalSent@run", "RunResumed@run", "SignalReceived@signal:0", "RunCompleted@run"
      ])
    }), 600_000)

  it.live("a run whose wait polls once an hour is woken by a signal another process sends: its commit is heard (RunNotices)", () =>
    Effect.gen(function*() {
      const db = freshDb()
      const waiting = start(["execute", "--db", db, "--run", "r5", "--poll-ms", String(3_600_000)])
      yield* Effect.addFinalizer(() => Effect.sync(() => waiting.process.kill("SIGKILL")))
      yield* waitForLog(db, "r5", awaiting, waiting)
      const sent = yield* run(["signal", "--db", db, "--run", "r5", "--payload", JSON.stringify({ approve: true, by: "dee" })])
      expect(sent.output?.outcome).toBe("result")
      // Its next poll is an hour away: only the notice of the other process's commit can get the signal to the wait in
      // the test's time.
      const woken = yield* Effect.promise(() => waiting.done).pipe(
        Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("the waiting process was not woken by the signal") })
      )
      expect(woken.output).toEqual({ outcome: "result", result: { status: "completed", runId: "r5", output: "approved by dee" } })
      expect(shape(yield* logOf(db, "r5"))).toEqual(["RunStarted@run", "SignalAwaited@signal:0", "SignalSent@run", "SignalReceived@signal:0", "RunCompleted@run"])
    }).pipe(Effect.scoped), 600_000)
})
