// A sender's signal lands between a wait's look at its inbox and its pause; the pause's append adopts it and the
// process dies before writing SignalReceived. A resume elsewhere must take it (a review found the run stuck paused).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })
const shape = (events: ReadonlyArray<{ readonly type: string; readonly stepKey: string }>) => events.map((e) => `${e.type}@${e.stepKey}`)

const waiter = Workflow.make({
  name: "waiter",
  input: Schema.Null,
  output: Schema.String,
  run: (_i, ctx) =>
    Effect.gen(function*() {
      yield* ctx.step("prepare", Effect.succeed("ready"), Schema.String)
      return yield* Effect.orDie(ctx.waitForSignal("decision", Schema.String))
    })
})

describe("a signal adopted by a wait's pause, the process dying before it takes it", () => {
  it.effect("a signal appended just before the wait's pause is not stranded by a crash before SignalReceived", () =>
    Effect.gen(function*() {
      const inner = yield* EventStore.makeMemory
      const innerLayer = Layer.succeed(EventStore.EventStore, inner)
      // Process B: a fresh kernel over the same store.
      const processB = kernelLayer([], [], { store: innerLayer })
      let raced = false
      const hasTag = (events: ReadonlyArray<{ readonly payload: { readonly _tag: string } }>, tag: string) => events.some((e) => e.payload._tag === tag)
      // Process A's store: a sender's signal lands just before the pause batch; the process dies writing SignalReceived.
      const wrapped: EventStore.Service = {
        ...inner,
        append: (request) =>
          Effect.gen(function*() {
            if (!raced && hasTag(request.events, "SignalAwaited")) {
              raced = true
              const receipt = yield* Effect.orDie(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.signal({ ...ref("w1"), name: "decision", payload: "go" })), processB))
              yield* Effect.log(`signal written at seq ${receipt.seq}`)
            }
            if (hasTag(request.events, "SignalReceived")) return yield* Effect.die("process A crashed")
            return yield* inner.append(request)
          })
      }
      const processA = kernelLayer([], [], { store: Layer.succeed(EventStore.EventStore, wrapped) })
      const first = yield* Effect.exit(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.execute(waiter, { runId: "w1", tenant, input: null })), processA))
      expect(first._tag).toBe("Failure")
      const log = yield* inner.readEvents(tenant.tenantId, "w1")
      expect(shape(log)).toEqual(["RunStarted@run", "StepCompleted@step:0", "SignalSent@run", "SignalAwaited@signal:1", "PauseRequested@signal:1"])
      expect((yield* inner.getRun(tenant.tenantId, "w1")).status).toBe("paused")
      // Process B resumes the run: the signal was accepted (the sender got a receipt) and is in the log, unconsumed.
      const resumed = yield* Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.resume({ ...ref("w1"), workflow: waiter })), processB)
      expect(resumed).toEqual({ status: "completed", runId: "w1", output: "go" })
    }))
})
