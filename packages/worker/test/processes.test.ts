import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import { TaskQueue } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { cleanup, eventually, tempDb, tenant } from "./helpers.js"

afterAll(cleanup)

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CLAIMER = fileURLToPath(new URL("./claimers/claimer.ts", import.meta.url))
const WORKER = fileURLToPath(new URL("./claimers/worker.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./claimers/tsconfig.json", import.meta.url))

interface Claims {
  readonly workerId: string
  readonly claimed?: ReadonlyArray<string>
  readonly failed?: string
}

/** Runs one claimer process to its end; its last stdout line says what it claimed. */
const claimer = (filename: string, barrier: string, workerId: string) =>
  Effect.async<Claims, Error>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", CLAIMER, filename, barrier, workerId],
      { cwd: REPO_ROOT, env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG }, timeout: 90_000 },
      (error, stdout, stderr) => {
        const line = stdout.trim().split("\n").pop() ?? ""
        try {
          const parsed: Claims = JSON.parse(line)
          resume(Effect.succeed(parsed))
        } catch {
          resume(Effect.fail(new Error(`claimer ${workerId} printed no outcome (${String(error)}): ${stderr}`)))
        }
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("TaskQueue on SQLite across processes", () => {
  it.live("claimers in separate processes on one file never claim the same task", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const queue = Context.get(yield* Layer.build(SqliteStore.layer({ filename })), TaskQueue.TaskQueue)
      const tasks = yield* Effect.forEach(Array.from({ length: 150 }, (_, i) => i), (i) =>
        queue.enqueue({ workflow: "greet", input: { name: `n${i}` }, tenant }))
      // Every claimer opens the file and says it is ready; then all are told to go at once, however long the
      // machine took to start them (no start time to guess). Whether each then gets a share is up to the scheduler:
      // the invariant is that no task is claimed twice and none is lost.
      const barrier = path.join(path.dirname(filename), "barrier")
      fs.mkdirSync(barrier)
      const ids = ["c1", "c2", "c3"]
      const claimers = yield* Effect.fork(Effect.forEach(ids, (id) => claimer(filename, barrier, id), { concurrency: "unbounded" }))
      // (or one ended first: joining it below says why)
      yield* eventually("every claimer opened the file", 90, () =>
        Effect.map(Fiber.poll(claimers), (ended) => Option.isSome(ended) || ids.every((id) => fs.existsSync(path.join(barrier, `ready-${id}`)))))
      fs.writeFileSync(path.join(barrier, "go"), "")
      const results = yield* Fiber.join(claimers)
      expect(results.filter((r) => r.failed !== undefined)).toEqual([])
      const all = results.flatMap((r) => r.claimed ?? [])
      expect(all.length).toBe(new Set(all).size)
      expect([...all].sort()).toEqual(tasks.map((t) => t.taskId).sort())
      const running = yield* queue.list(tenant.tenantId, { status: "running" })
      expect(running).toHaveLength(150)
      for (const task of running) expect(results.find((r) => r.claimed?.includes(task.taskId))?.workerId).toBe(task.workerId)
    }).pipe(Effect.scoped), 240_000)
})

/** A worker process, killed (SIGKILL) when the test's scope closes unless it exited before. */
const startWorker = (filename: string, effectsFile: string, workerId: string, gate: "open" | "closed") =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, ["--import", "tsx", WORKER, filename, effectsFile, workerId, gate], {
        cwd: REPO_ROOT,
        env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG },
        stdio: ["ignore", "ignore", "inherit"]
      })
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, exited }
    }),
    ({ child }) => Effect.sync(() => child.exitCode === null && child.kill("SIGKILL"))
  )

const exitOf = (worker: { readonly child: ChildProcess; readonly exited: Promise<number | null> }) =>
  Effect.promise(() => worker.exited)

const lines = (file: string): ReadonlyArray<string> =>
  fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : []

const openQueue = (filename: string) =>
  Effect.map(Layer.build(SqliteStore.layer({ filename, busyTimeout: "30 seconds" })), (context) => Context.get(context, TaskQueue.TaskQueue))

describe("Workers in separate processes on one SQLite file", () => {
  it.live("a worker killed with SIGKILL mid-run loses its task; another process resumes the run, each side effect once", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const effectsFile = path.join(path.dirname(filename), "effects.log")
      const queue = yield* openQueue(filename)
      const task = yield* queue.enqueue({ workflow: "order", input: { customer: "c1" }, tenant })
      const a = yield* startWorker(filename, effectsFile, "A", "closed")
      yield* eventually("A waits in the pack step", 90, () => lines(effectsFile).includes("waiting:A"))
      a.child.kill("SIGKILL")
      expect(yield* exitOf(a)).toBe(null)
      expect(yield* queue.get(tenant.tenantId, task.taskId)).toMatchObject({ status: "running", workerId: "A" })

      const b = yield* startWorker(filename, effectsFile, "B", "open")
      yield* eventually("B completed the task", 90, () => Effect.map(queue.get(tenant.tenantId, task.taskId), (t) => t.status === "completed"))
      expect(yield* queue.get(tenant.tenantId, task.taskId)).toMatchObject({ outcome: { _tag: "completed", output: "shipped to c1" } })
      expect(lines(effectsFile)).toEqual([`charge:c1:task:${task.taskId}/tool:0`, "reserve", "waiting:A", "pack", "ship"])
      b.child.kill("SIGTERM")
      expect(yield* exitOf(b)).toBe(0)
    }).pipe(Effect.scoped), 240_000)

  it.live("SIGTERM releases the tasks a worker holds; the next process resumes them at once", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const effectsFile = path.join(path.dirname(filename), "effects.log")
      const queue = yield* openQueue(filename)
      const task = yield* queue.enqueue({ workflow: "order", input: { customer: "c2" }, tenant })
      const a = yield* startWorker(filename, effectsFile, "A", "closed")
      yield* eventually("A waits in the pack step", 90, () => lines(effectsFile).includes("waiting:A"))
      a.child.kill("SIGTERM")
      expect(yield* exitOf(a)).toBe(0)
      const released = yield* queue.get(tenant.tenantId, task.taskId)
      expect(released.status).toBe("queued")
      expect(released.workerId).toBeUndefined()

      const b = yield* startWorker(filename, effectsFile, "B", "open")
      yield* eventually("B completed the task", 90, () => Effect.map(queue.get(tenant.tenantId, task.taskId), (t) => t.status === "completed"))
      expect(lines(effectsFile)).toEqual([`charge:c2:task:${task.taskId}/tool:0`, "reserve", "waiting:A", "pack", "ship"])
      b.child.kill("SIGTERM")
      expect(yield* exitOf(b)).toBe(0)
    }).pipe(Effect.scoped), 240_000)
})
