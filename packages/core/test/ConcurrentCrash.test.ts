import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Deferred, Effect, Either, Fiber, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/**
 * Two branches under explicit keys, as the README allows ("run them concurrently only with explicit keys").
 * The slow branch is started first; the fast one's step is logged; the process dies while the slow one is still in
 * flight. The log is [RunStarted, StepCompleted(fast)]. Resuming with the same code must complete.
 */
describe("crash while a concurrent branch is in flight", () => {
  it.live("a memoized step in flight in a concurrent branch: resume after a crash", () => {
    let slowRuns = 0
    let fastRuns = 0
    const make = (fastLogged: Deferred.Deferred<void> | undefined) =>
      Workflow.make({
        name: "fan-out-crash",
        input: Schema.Null,
        output: Schema.Array(Schema.Number),
        run: (_i, ctx) =>
          Effect.all([
            ctx.step("slow", Effect.suspend(() => {
              slowRuns++
              return fastLogged === undefined ? Effect.succeed(1) : Effect.never
            }), Schema.Number, { key: "slow" }),
            Effect.tap(
              ctx.step("fast", Effect.sync(() => (fastRuns++, 2)), Schema.Number, { key: "fast" }),
              () => (fastLogged === undefined ? Effect.void : Deferred.succeed(fastLogged, undefined))
            )
          ], { concurrency: "unbounded" })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const fastLogged = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(kernel.execute(make(fastLogged), { runId: "fan", tenant, input: null }))
      yield* Deferred.await(fastLogged)
      yield* Effect.sleep("20 millis")
      // The process dies here: "slow" is in flight, "fast" is logged.
      yield* Fiber.interrupt(fiber)
      const log = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, "fan")
      expect(log.map((e) => e.stepKey)).toEqual(["run", "fast"])
      const resumed = yield* Effect.either(kernel.execute(make(undefined), { runId: "fan", tenant, input: null }))
      expect(Either.isRight(resumed) ? resumed.right : `${resumed.left._tag}: ${resumed.left.message}`).toEqual({ status: "completed", runId: "fan", output: [1, 2] })
      expect(fastRuns).toBe(1)
      // The step in flight at the crash had logged nothing: it ran again.
      expect(slowRuns).toBe(2)
      const replayed = yield* Effect.either(kernel.replay(make(undefined), { tenantId: tenant.tenantId, runId: "fan" }))
      expect(Either.isRight(replayed) ? replayed.right.status : `${replayed.left._tag}: ${replayed.left.message}`).toBe("completed")
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.live("a one-commit idempotent tool in flight in a concurrent branch: resume after a crash", () => {
    const calls: Array<string> = []
    let hang = true
    const lookup = Tool.make({
      name: "lookup",
      description: "looks something up",
      parameters: Schema.Struct({ q: Schema.String }),
      idempotent: true,
      durability: "one-commit",
      handler: ({ q }, ctx) =>
        Effect.suspend(() => {
          calls.push(`${ctx.idempotencyKey}:${q}`)
          return hang ? Effect.never : Effect.succeed(q.length)
        })
    })
    let charges = 0
    const make = (fastLogged: Deferred.Deferred<void> | undefined) =>
      Workflow.make({
        name: "fan-out-tool",
        input: Schema.Null,
        output: Schema.Unknown,
        run: (_i, ctx) =>
          Effect.all([
            ctx.tool(lookup, { q: "abc" }, { key: "lookup" }),
            Effect.tap(
              ctx.step("charge", Effect.sync(() => (charges++, 7)), Schema.Number, { key: "charge" }),
              () => (fastLogged === undefined ? Effect.void : Deferred.succeed(fastLogged, undefined))
            )
          ], { concurrency: "unbounded" })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const fastLogged = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(kernel.execute(make(fastLogged), { runId: "fan-tool", tenant, input: null }))
      yield* Deferred.await(fastLogged)
      yield* Effect.sleep("20 millis")
      yield* Fiber.interrupt(fiber)
      hang = false
      const resumed = yield* Effect.either(kernel.execute(make(undefined), { runId: "fan-tool", tenant, input: null }))
      expect(Either.isRight(resumed) ? resumed.right.status : `${resumed.left._tag}: ${resumed.left.message}`).toBe("completed")
      expect(charges).toBe(1)
    }).pipe(Effect.provide(kernelLayer([], [lookup])))
  })
})
