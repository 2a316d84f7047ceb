import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/** A tool whose call takes 30 ms (a timer) and is not idempotent; each call that acted is in `sent`. */
const slowEmail = (sent: Array<string>) =>
  Tool.make({
    name: "email",
    description: "sends an email (not idempotent)",
    parameters: Schema.Struct({ to: Schema.String }),
    handler: ({ to }) => Effect.promise(() => new Promise<string>((r) => setTimeout(() => (sent.push(to), r("sent")), 30)))
  })

/** A branch that pauses for a person a moment after the others started. */
const pausesSoon = (ctx: Workflow.WorkflowContext) =>
  Effect.zipRight(Effect.sleep("5 millis"), ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" }))

/**
 * No crash at all: one branch pauses for a person while another branch (explicit keys, as the README allows) has a
 * step in flight. The run pauses; the person answers; `resume` must continue the run.
 */
describe("a pause in one concurrent branch while another is in flight", () => {
  it.live("a memoized step in flight when the other branch pauses: the answered run resumes", () => {
    let slowRuns = 0
    const fanOut = Workflow.make({
      name: "fan-out-pause",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([
          ctx.step("slow", Effect.suspend(() => (slowRuns++, Effect.as(Effect.sleep("30 millis"), 1))), Schema.Number, { key: "slow" }),
          ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" })
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(fanOut, { runId: "fp", tenant, input: null })
      expect(paused.status).toBe("paused")
      const log = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, "fp")
      expect(log.map((e) => `${e.stepKey}:${e.payload._tag}`)).toEqual(["run:RunStarted", "ask:PauseRequested"])
      const resumed = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "fp", response: { ok: true } }))
      expect(Either.isRight(resumed) ? resumed.right : String(resumed.left)).toEqual({ status: "completed", runId: "fp", output: [1, { ok: true }] })
      // And the finished run replays.
      const replayed = yield* Effect.either(kernel.replay(fanOut, { tenantId: tenant.tenantId, runId: "fp" }))
      expect(Either.isRight(replayed) ? replayed.right.status : `${replayed.left._tag}: ${replayed.left.message}`).toBe("completed")
      // The memoized step was cut off by the pause (it had logged nothing) and ran again on resume.
      expect(slowRuns).toBe(2)
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [fanOut] } })))
  })

  it.live("a non-idempotent tool in flight when the other branch pauses: its call ends and is logged before the run pauses", () => {
    const sent: Array<string> = []
    const email = slowEmail(sent)
    const fanOut = Workflow.make({
      name: "fan-out-pause-tool",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([
          ctx.tool(email, { to: "bob" }, { key: "email" }),
          pausesSoon(ctx)
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(fanOut, { runId: "fpt", tenant, input: null })
      expect(paused.status).toBe("paused")
      yield* Effect.sleep("60 millis")
      const store = yield* EventStore.EventStore
      const log = yield* store.readEvents(tenant.tenantId, "fpt")
      const status = (yield* store.getRun(tenant.tenantId, "fpt")).status
      const resumed = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "fpt", response: { ok: true } }))
      expect({
        log: log.map((e) => `${e.stepKey}:${e.payload._tag}`).sort(),
        status,
        sent,
        resumed: Either.isRight(resumed) ? resumed.right : String(resumed.left)
      }).toEqual({
        // The call's outcome is logged (in whatever order with the pause), and the run is paused.
        log: ["ask:PauseRequested", "email:ToolCompleted", "email:ToolRequested", "run:RunStarted"],
        status: "paused",
        sent: ["bob"],
        resumed: { status: "completed", runId: "fpt", output: ["sent", { ok: true }] }
      })
    }).pipe(Effect.provide(kernelLayer([], [email], { kernel: { workflows: [fanOut] } })))
  })
})

describe("an idempotent call in flight when another branch pauses", () => {
  it.live("the completed call is not made again when the answered run resumes (no crash happened)", () => {
    const charges: Array<string> = []
    const charge = Tool.make({
      name: "charge",
      description: "charges a card (idempotent by key)",
      parameters: Schema.Struct({ cents: Schema.Number }),
      idempotent: true,
      handler: ({ cents }, ctx) => Effect.promise(() => new Promise<number>((r) => setTimeout(() => { charges.push(ctx.idempotencyKey); r(cents) }, 30)))
    })
    const wf = Workflow.make({
      name: "fan-out-pause-charge",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.all([
          ctx.tool(charge, { cents: 500 }, { key: "charge" }),
          pausesSoon(ctx)
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(wf, { runId: "fpc", tenant, input: null })
      expect(paused.status).toBe("paused")
      yield* Effect.sleep("60 millis")
      const resumed = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "fpc", response: { ok: true } }))
      expect({ resumed: Either.isRight(resumed) ? resumed.right.status : String(resumed.left), charges }).toEqual({ resumed: "completed", charges: ["fpc/charge"] })
    }).pipe(Effect.provide(kernelLayer([], [charge], { kernel: { workflows: [wf] } })))
  })
})

describe("continue-as-new in one branch while another branch's call is in flight", () => {
  it.live("the call's outcome is logged in the run that made it (no call left in doubt in an ended run)", () => {
    const sent: Array<string> = []
    const email = slowEmail(sent)
    const wf = Workflow.make({
      name: "can-branch",
      input: Schema.Struct({ gen: Schema.Number }),
      output: Schema.Unknown,
      run: ({ gen }, ctx) =>
        gen > 0 ? Effect.succeed("done") : Effect.all([
          ctx.tool(email, { to: "bob" }, { key: "email" }),
          Effect.zipRight(Effect.sleep("5 millis"), ctx.continueAsNew({ gen: gen + 1 }))
        ], { concurrency: "unbounded" })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const result = yield* kernel.execute(wf, { runId: "can", tenant, input: { gen: 0 } })
      yield* Effect.sleep("60 millis")
      const log = yield* store.readEvents(tenant.tenantId, "can")
      expect({ result, sent, log: log.map((e) => `${e.stepKey}:${e.payload._tag}`) }).toEqual({
        result: { status: "completed", runId: "can::continued::1", output: "done" },
        sent: ["bob"],
        log: ["run:RunStarted", "email:ToolRequested", "email:ToolCompleted", "run:RunContinued"]
      })
    }).pipe(Effect.provide(kernelLayer([], [email], { kernel: { workflows: [wf] } })))
  })
})
