// A worker process of the fencing test (see ../fencing.test.ts): a `Worker.run` on SQLite or PostgreSQL whose
// "fenced" workflow makes one call to an idempotent tool. Every execution of the tool's handler appends a line to a
// shared file, `<idempotencyKey> <workerId> <fence>`, so the parent sees which process ran which handler.
//
// Role "stall:<M>": the process freezes itself (SIGSTOP) at the worst moment for fencing, once per M tool calls:
// each call's `ToolRequested` is committed and its handler has not started (the first M - 1 calls wait for the
// M-th). It freezes with no statement of its own in flight (heartbeats wait), so the freeze holds no lock, and
// writes `frozen` to the marker file first. SIGCONT continues it exactly there. Role "take": an ordinary worker.
// SIGTERM interrupts the worker, which releases its tasks, and the process exits 0.
import { Context, Effect, Fiber, Layer, Schema } from "effect"
import { EventStore, Kernel, TaskQueue, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import { Worker } from "../../src/index.js"

const [kind = "sqlite", location = "", effectsFile = "", markerFile = "", workerId = "worker", role = "take"] = process.argv.slice(2)
const stallEvery = role.startsWith("stall:") ? Number(role.slice("stall:".length)) : 0
const concurrency = Math.max(stallEvery, 4)

const effect = Tool.make({
  name: "effect",
  description: "A side effect: one line in the effects file",
  parameters: Schema.Struct({ n: Schema.Number }),
  idempotent: true,
  handler: ({ n }, ctx) =>
    Effect.sync(() => {
      fs.appendFileSync(effectsFile, `${ctx.idempotencyKey} ${workerId} ${String(ctx.fence)}\n`)
      return { n }
    })
})

const fenced = Workflow.make({
  name: "fenced",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  run: ({ n }, ctx) => Effect.map(ctx.tool(effect, { n }), (r) => r.n)
})

/** The M tool calls of a stall wait here for the M-th, which freezes the process and then lets them all go on. */
let waiting: Array<() => void> = []
const quiet = Effect.unsafeMakeSemaphore(1)
const stall = Effect.suspend(() => {
  if (waiting.length + 1 < stallEvery) return Effect.async<void>((resume) => void waiting.push(() => resume(Effect.void)))
  return quiet.withPermits(1)(Effect.sync(() => {
    fs.appendFileSync(markerFile, "frozen\n")
    process.kill(process.pid, "SIGSTOP")
    // Continued (SIGCONT): every call of this stall goes on to its handler.
    const go = waiting
    waiting = []
    for (const resume of go) resume()
  }))
})

/** The real store, and a queue whose heartbeats never run while the process freezes itself. */
const stalling = Layer.effectContext(Effect.gen(function*() {
  const store = yield* EventStore.EventStore
  const queue = yield* TaskQueue.TaskQueue
  const events: EventStore.Service = {
    ...store,
    append: (request) =>
      Effect.tap(store.append(request), () => (request.events.some((e) => e.payload._tag === "ToolRequested") ? stall : Effect.void))
  }
  const tasks: TaskQueue.Service = {
    ...queue,
    heartbeat: (taskId, worker, leaseSeconds) => quiet.withPermits(1)(queue.heartbeat(taskId, worker, leaseSeconds))
  }
  return Context.make(EventStore.EventStore, events).pipe(Context.add(TaskQueue.TaskQueue, tasks))
}))

const base: Layer.Layer<EventStore.EventStore | TaskQueue.TaskQueue, unknown> = kind === "pg"
  ? PostgresStore.layer({ url: location, pool: { max: concurrency + 2 } })
  : SqliteStore.layer({ filename: location, busyTimeout: "30 seconds" })
const stores = stallEvery > 0 ? Layer.provide(stalling, base) : base
const workflows = [fenced]
const live = Layer.provideMerge(Kernel.layer({ workflows }), Layer.mergeAll(stores, ScriptedModel.layer([]), ToolRegistry.layer([effect])))

const fiber = Effect.runFork(
  Worker.run({ workflows, concurrency, leaseSeconds: stallEvery > 0 ? 4 : 5, pollInterval: "50 millis", workerId }).pipe(
    Effect.provide(live),
    Effect.tapErrorCause((cause) => Effect.sync(() => console.error(cause)))
  )
)
process.on("SIGTERM", () => {
  Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0), () => process.exit(1))
})
