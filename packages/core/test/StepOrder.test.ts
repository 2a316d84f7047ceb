import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Deferred, Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/** Two steps with explicit keys: a memoized lookup, then an idempotent charge; `order` says which comes first. */
const makeWorld = () => {
  const charges: Array<string> = []
  let crash = true
  const charge = Tool.make({
    name: "charge",
    description: "charges a card",
    parameters: Schema.Struct({ cents: Schema.Number }),
    idempotent: true,
    handler: ({ cents }, ctx) =>
      Effect.suspend(() => {
        charges.push(`${ctx.idempotencyKey}:${cents}`)
        // The process dies inside the handler: the step is left in doubt.
        return crash ? Effect.interrupt : Effect.succeed(cents)
      })
  })
  const workflow = (order: "lookup-first" | "charge-first") =>
    Workflow.make({
      name: "checkout",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_input, ctx) => {
        const lookup = ctx.step("lookup", Effect.succeed(42), Schema.Number, { key: "lookup" })
        const pay = ctx.tool(charge, { cents: 5 }, { key: "charge" })
        return order === "lookup-first" ? Effect.zip(lookup, pay) : Effect.zip(pay, lookup)
      }
    })
  return { charges, workflow, charge, survive: () => void (crash = false) }
}

describe("step order with explicit keys", () => {
  it.effect("code that meets logged steps with explicit keys in another order is NonDeterminism, and no in-doubt tool runs", () => {
    const world = makeWorld()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const crashed = yield* Effect.exit(kernel.execute(world.workflow("lookup-first"), { runId: "reordered", tenant, input: null }))
      expect(crashed._tag).toBe("Failure")
      expect(world.charges).toEqual(["reordered/charge:5"])
      world.survive()
      const resumed = yield* Effect.either(kernel.execute(world.workflow("charge-first"), { runId: "reordered", tenant, input: null }))
      expect(Either.isLeft(resumed) && resumed.left).toMatchObject({ _tag: "NonDeterminism", stepKey: "charge" })
      expect(Either.isLeft(resumed) && String(resumed.left.message)).toContain(`step "lookup" at step lookup`)
      // The in-doubt charge did not run again ahead of the logged lookup.
      expect(world.charges).toEqual(["reordered/charge:5"])
      const run = yield* (yield* EventStore.EventStore).getRun(tenant.tenantId, "reordered")
      expect(run.status).toBe("running")
      // The code in its original order resumes it: the idempotent charge runs again once, with the same key.
      const fixed = yield* kernel.execute(world.workflow("lookup-first"), { runId: "reordered", tenant, input: null })
      expect(fixed).toEqual({ status: "completed", runId: "reordered", output: [42, 5] })
      expect(world.charges).toEqual(["reordered/charge:5", "reordered/charge:5"])
    }).pipe(Effect.provide(kernelLayer([], [world.charge])))
  })

  it.live("settled steps run concurrently under explicit keys (logged in the order they finished) replay", () => {
    const fanOut = Workflow.make({
      name: "fan-out",
      input: Schema.Null,
      output: Schema.Array(Schema.Number),
      run: (_i, ctx) =>
        Effect.flatMap(Deferred.make<void>(), (fastLogged) =>
          Effect.all([
            // The slower branch is started first, and finishes only once the other one's step is logged: it is logged
            // second (a timer here raced the other step's append on a loaded machine).
            ctx.step("slow", Effect.as(Deferred.await(fastLogged), 1), Schema.Number, { key: "slow" }),
            Effect.tap(ctx.step("fast", Effect.succeed(2), Schema.Number, { key: "fast" }), () => Deferred.succeed(fastLogged, undefined))
          ], { concurrency: "unbounded" }))
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const done = yield* kernel.execute(fanOut, { runId: "fan", tenant, input: null })
      expect(done).toEqual({ status: "completed", runId: "fan", output: [1, 2] })
      const log = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, "fan")
      expect(log.map((e) => e.stepKey)).toEqual(["run", "fast", "slow", "run"])
      // The same code, the same log: replay must agree with the live run.
      const replayed = yield* Effect.either(kernel.replay(fanOut, { tenantId: tenant.tenantId, runId: "fan" }))
      expect(Either.isRight(replayed) ? replayed.right.status : `${replayed.left._tag}: ${replayed.left.message}`).toBe("completed")
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("two operations with the same explicit key are refused when written, not only when the log is replayed", () => {
    const twice = Workflow.make({
      name: "twice",
      input: Schema.Null,
      output: Schema.Array(Schema.Number),
      run: (_i, ctx) =>
        Effect.all([
          ctx.step("first", Effect.succeed(1), Schema.Number, { key: "same" }),
          ctx.step("second", Effect.succeed(2), Schema.Number, { key: "same" })
        ])
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const live = yield* Effect.either(kernel.execute(twice, { runId: "dup", tenant, input: null }))
      const replayed = yield* Effect.either(kernel.replay(twice, { tenantId: tenant.tenantId, runId: "dup" }))
      const tag = (r: typeof live) => (Either.isRight(r) ? r.right.status : r.left._tag)
      // Live and replay must agree: either both refuse the reused key, or both complete.
      expect({ live: tag(live), replay: tag(replayed) }).toEqual({ live: "NonDeterminism", replay: "NonDeterminism" })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })
})
