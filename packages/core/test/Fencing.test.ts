// Ownership and fencing in the kernel: the owner epoch each execution claims, the fence and signal its handlers get,
// a lost lease that stops a handler from starting, and reconcile refusing a call that may still be running.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, TestClock } from "effect"
import { EventStore, Kernel, type Lease, TaskQueue, Tool, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

const readLog = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))
const epochOf = (runId: string) => Effect.map(Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, runId)), (r) => r.ownerEpoch)

/** A tool whose handler records what it was given, and dies (as its process would) while `crash` is set. */
const makeCharge = (options: { readonly idempotent: boolean; readonly timeout?: Tool.ToolOptions<unknown, unknown, unknown, unknown>["timeout"] }) => {
  const seen: Array<{ readonly key: string; readonly fence: number; readonly signal: AbortSignal }> = []
  let crash = false
  const tool = Tool.make({
    name: "charge",
    description: "charges a card",
    parameters: Schema.Struct({ cents: Schema.Number }),
    idempotent: options.idempotent,
    timeout: options.timeout,
    handler: ({ cents }, ctx) =>
      Effect.suspend(() => {
        seen.push({ key: ctx.idempotencyKey, fence: ctx.fence, signal: ctx.signal })
        return crash ? Effect.interrupt : Effect.succeed(cents)
      })
  })
  const workflow = Workflow.make({ name: "pay", input: Schema.Null, output: Schema.Unknown, run: (_input, ctx) => ctx.tool(tool, { cents: 5 }) })
  return { tool, workflow, seen, crashing: (on: boolean) => (crash = on) }
}

const lease = (expiresAt: number, controller = new AbortController()): Lease.Lease => ({ expiresAt: () => expiresAt, signal: controller.signal })

describe("owner epochs", () => {
  it.effect("every live execution claims the run with a higher epoch, and its handlers get it as their fence", () => {
    const charge = makeCharge({ idempotent: true })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      charge.crashing(true)
      yield* Effect.exit(kernel.execute(charge.workflow, { runId: "epochs", tenant, input: null }))
      expect(yield* epochOf("epochs")).toBe(1)
      // A second execution claims the run (epoch 2) and is left in doubt again; a third (epoch 3) completes it.
      yield* Effect.exit(kernel.execute(charge.workflow, { runId: "epochs", tenant, input: null }))
      expect(yield* epochOf("epochs")).toBe(2)
      charge.crashing(false)
      expect(yield* kernel.execute(charge.workflow, { runId: "epochs", tenant, input: null })).toMatchObject({ status: "completed", output: 5 })
      expect(yield* epochOf("epochs")).toBe(3)
      expect(charge.seen.map((s) => [s.key, s.fence])).toEqual([["epochs/tool:0", 1], ["epochs/tool:0", 2], ["epochs/tool:0", 3]])
      // Reading a finished run claims nothing.
      yield* kernel.execute(charge.workflow, { runId: "epochs", tenant, input: null })
      yield* kernel.replay(charge.workflow, { tenantId: tenant.tenantId, runId: "epochs" })
      expect(yield* epochOf("epochs")).toBe(3)
      expect((yield* readLog("epochs")).map((e) => e.type)).toEqual([
        "RunStarted", "ToolRequested", "RunResumed", "RunResumed", "ToolCompleted", "RunCompleted"
      ])
    }).pipe(Effect.provide(kernelLayer([], [charge.tool])))
  })

  it.effect("an execution fenced by a newer claim writes nothing more and ends with OwnershipLost", () => {
    const charge = makeCharge({ idempotent: true })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      // The first execution is still running (paused inside its handler) when a second one takes the run over.
      let takeOver: Effect.Effect<unknown, unknown> = Effect.void
      const slow = Tool.make({
        name: "slow",
        description: "a call during which the run changes hands",
        parameters: Schema.Struct({}),
        idempotent: true,
        handler: (_args, ctx) => Effect.as(Effect.zipRight(takeOver, Effect.sync(() => charge.seen.push({ key: ctx.idempotencyKey, fence: ctx.fence, signal: ctx.signal }))), "ok")
      })
      const workflow = Workflow.make({ name: "slow", input: Schema.Null, output: Schema.String, run: (_input, ctx) => ctx.tool(slow, {}) })
      takeOver = Effect.suspend(() => {
        takeOver = Effect.void
        return kernel.execute(workflow, { runId: "fenced", tenant, input: null })
      })
      const first = yield* Effect.flip(kernel.execute(workflow, { runId: "fenced", tenant, input: null }))
      expect(first).toMatchObject({ _tag: "OwnershipLost", runId: "fenced", ownerEpoch: 1 })
      expect(first.message).toContain("owner epoch 2")
      // The first execution's handler learnt it too (its signal), after the newer owner had finished.
      expect(charge.seen.map((s) => [s.fence, s.signal.aborted])).toEqual([[2, false], [1, true]])
      const log = yield* store.readEvents(tenant.tenantId, "fenced")
      expect(log.map((e) => e.type)).toEqual(["RunStarted", "ToolRequested", "RunResumed", "ToolCompleted", "RunCompleted"])
    }).pipe(Effect.provide(kernelLayer([], [charge.tool])))
  })
})

describe("the caller's lease", () => {
  it.effect("once it has run out, no call is requested and no handler starts: the execution ends with OwnershipLost", () => {
    const charge = makeCharge({ idempotent: true })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* TestClock.setTime(10_000)
      const lost = yield* Effect.flip(kernel.execute(charge.workflow, { runId: "expired", tenant, input: null, lease: lease(9_000) }))
      expect(lost).toMatchObject({ _tag: "OwnershipLost", runId: "expired", ownerEpoch: 1 })
      expect(lost.message).toContain("ran out at 1970-01-01T00:00:09.000Z, 1000 ms before the call to tool \"charge\"")
      expect(charge.seen).toEqual([])
      expect((yield* readLog("expired")).map((e) => e.type)).toEqual(["RunStarted"])

      // Frozen between its ToolRequested and its handler (the call in doubt from a crash), past its lease: no handler.
      charge.crashing(true)
      yield* Effect.exit(kernel.execute(charge.workflow, { runId: "in-doubt", tenant, input: null }))
      charge.crashing(false)
      expect(charge.seen).toHaveLength(1)
      expect(yield* Effect.flip(kernel.execute(charge.workflow, { runId: "in-doubt", tenant, input: null, lease: lease(10_000) })))
        .toMatchObject({ _tag: "OwnershipLost", ownerEpoch: 2 })
      expect(charge.seen).toHaveLength(1)
      // A lease that holds lets it run.
      expect(yield* kernel.execute(charge.workflow, { runId: "in-doubt", tenant, input: null, lease: lease(15_000) }))
        .toMatchObject({ status: "completed", output: 5 })
      // The execution whose lease had run out claimed nothing (no RunResumed): the next owner is epoch 2.
      expect(charge.seen.map((s) => s.fence)).toEqual([1, 2])
    }).pipe(Effect.provide(kernelLayer([], [charge.tool])))
  })

  it.effect("one that runs out while the call's ToolRequested is written: the call stays requested, and no handler starts", () => {
    const charge = makeCharge({ idempotent: false })
    // The commit of the request takes 5 s (a slow disk, a paused process): the lease has run out when it returns.
    const slowRequest = Layer.effect(
      EventStore.EventStore,
      Effect.map(EventStore.makeMemory, (store): EventStore.Service => ({
        ...store,
        append: (request) =>
          Effect.zipRight(store.append(request), request.events.some((e) => e.type === "ToolRequested") ? TestClock.adjust(5_000) : Effect.void)
      }))
    )
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* TestClock.setTime(10_000)
      const lost = yield* Effect.flip(kernel.execute(charge.workflow, { runId: "slow-commit", tenant, input: null, lease: lease(12_000) }))
      expect(lost).toMatchObject({ _tag: "OwnershipLost", runId: "slow-commit", ownerEpoch: 1 })
      expect(lost.message).toContain("ran out at 1970-01-01T00:00:12.000Z, 3000 ms before the call to tool \"charge\"")
      expect(charge.seen).toEqual([])
      expect((yield* readLog("slow-commit")).map((e) => e.type)).toEqual(["RunStarted", "ToolRequested"])
    }).pipe(Effect.provide(kernelLayer([], [charge.tool], { store: slowRequest })))
  })

  it.effect("a handler's signal fires when the caller loses the run while the handler runs", () => {
    const controller = new AbortController()
    const stopped: Array<unknown> = []
    const watch = Tool.make({
      name: "watch",
      description: "runs until its owner loses the run",
      parameters: Schema.Struct({}),
      handler: (_args, ctx) =>
        new Promise<string>((resolve) => {
          ctx.signal.addEventListener("abort", () => {
            stopped.push(ctx.signal.reason)
            resolve("stopped")
          })
          // The worker's heartbeat finds the lease taken over.
          controller.abort("worker w1 no longer holds task t1")
        })
    })
    const workflow = Workflow.make({ name: "watch", input: Schema.Null, output: Schema.String, run: (_input, ctx) => ctx.tool(watch, {}) })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(workflow, { runId: "watched", tenant, input: null, lease: lease(Number.MAX_SAFE_INTEGER, controller) })
      expect(stopped).toEqual(["worker w1 no longer holds task t1"])
    }).pipe(Effect.provide(kernelLayer([], [watch])))
  })
})

describe("reconcile while the call may still be running", () => {
  it.effect("is refused until the tool's timeout has passed since its request, unless forced", () => {
    const charge = makeCharge({ idempotent: false, timeout: "10 minutes" })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const run = { tenantId: tenant.tenantId, runId: "maybe-running" }
      yield* TestClock.setTime(60_000)
      charge.crashing(true)
      yield* Effect.exit(kernel.execute(charge.workflow, { runId: run.runId, tenant, input: null }))
      charge.crashing(false)
      yield* TestClock.adjust("1 minute")
      expect((yield* kernel.execute(charge.workflow, { runId: run.runId, tenant, input: null })).status).toBe("needs_reconciliation")
      const before = yield* readLog(run.runId)

      const refused = yield* Effect.flip(kernel.reconcile({ ...run, outcome: { ok: false, error: "never happened" } }))
      expect(refused).toMatchObject({ _tag: "StepMayBeRunning", runId: run.runId, stepKey: "tool:0", tool: "charge", until: 60_000 + 600_000 })
      expect(refused.message).toContain("its timeout (10m) has not passed")
      expect(refused.message).toContain("force: true")
      expect(yield* readLog(run.runId)).toEqual(before)

      yield* TestClock.adjust("9 minutes")
      yield* kernel.reconcile({ ...run, outcome: { ok: false, error: "never happened" } })
      expect((yield* readLog(run.runId)).map((e) => e.type).slice(-1)).toEqual(["ToolFailed"])

      // Forced, a person settles it at once.
      charge.crashing(true)
      yield* Effect.exit(kernel.execute(charge.workflow, { runId: "forced", tenant, input: null }))
      charge.crashing(false)
      yield* kernel.execute(charge.workflow, { runId: "forced", tenant, input: null })
      yield* kernel.reconcile({ tenantId: tenant.tenantId, runId: "forced", outcome: { ok: true, result: 5 }, force: true })
      expect(yield* kernel.execute(charge.workflow, { runId: "forced", tenant, input: null })).toMatchObject({ status: "completed", output: 5 })
    }).pipe(Effect.provide(kernelLayer([], [charge.tool])))
  })

  it.effect("is refused while a worker holds the run's task under a live lease", () => {
    const charge = makeCharge({ idempotent: false })
    const layer = Layer.provideMerge(kernelLayer([], [charge.tool]), TaskQueue.layerMemory)
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const queue = yield* TaskQueue.TaskQueue
      const task = yield* queue.enqueue({ workflow: "pay", input: null, tenant })
      yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 30 })
      charge.crashing(true)
      yield* Effect.exit(kernel.execute(charge.workflow, { runId: task.runId, tenant, input: null }))
      charge.crashing(false)
      expect((yield* kernel.execute(charge.workflow, { runId: task.runId, tenant, input: null })).status).toBe("needs_reconciliation")

      const refused = yield* Effect.flip(kernel.reconcile({ tenantId: tenant.tenantId, runId: task.runId, outcome: { ok: true, result: 5 } }))
      expect(refused).toMatchObject({ _tag: "StepMayBeRunning", until: 30_000 })
      expect(refused.message).toContain(`worker w1 holds its task ${task.taskId}`)
      // The worker reports the doubt and lets the task go: now a person may settle it.
      yield* queue.finish(task.taskId, "w1", { _tag: "needs_reconciliation", stepKey: "tool:0", tool: "charge" })
      yield* kernel.reconcile({ tenantId: tenant.tenantId, runId: task.runId, outcome: { ok: true, result: 5 } })
      expect(yield* kernel.execute(charge.workflow, { runId: task.runId, tenant, input: null })).toMatchObject({ status: "completed", output: 5 })
    }).pipe(Effect.provide(layer))
  })
})
