// A replay of a sequential run whose code now asks for a step after the log's end: NonDeterminism at that step, without
// a wait by the clock, also when the step runs on a fiber of its own (under `Effect.timeout`, or forked and joined).
// Found by review: a replay meeting a step at the log's end waited for a handover (a concurrent branch's step in flight
// when a run continued as new is never logged) even when the run never handed over, up to 30 s, and a step under
// `Effect.timeout` was then reported as a timeout that never happened. The wait is now for runs that handed over only.
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Fiber, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

afterEach(() => {
  vi.restoreAllMocks()
})

type Ctx = Parameters<Workflow.Workflow<number, number, never>["run"]>[1]

/** Step "x", then `extra`: version 1 of the code has no extra. */
const version = (name: string, extra: (ctx: Ctx) => Effect.Effect<unknown, unknown>) =>
  Workflow.make({
    name,
    input: Schema.Number,
    output: Schema.Number,
    run: (_i, ctx) => Effect.zipLeft(ctx.step("x", Effect.succeed(1), Schema.Number, { key: "x" }), Effect.orDie(extra(ctx)))
  })

const y = (ctx: Ctx) => ctx.step("y", Effect.succeed(2), Schema.Number, { key: "y" })

const replayedChanged = (name: string, extra: (ctx: Ctx) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    yield* kernel.execute(version(name, () => Effect.void), { runId: name, tenant, input: 0 })
    // The clock waits are timers under a second; the code's own timeout sets one of 5 s.
    const timers = vi.spyOn(globalThis, "setTimeout")
    const replayed = yield* Effect.flip(kernel.replay(version(name, extra), { tenantId: tenant.tenantId, runId: name }))
    const waits = timers.mock.calls.filter(([, ms]) => typeof ms === "number" && ms >= 1 && ms <= 1_000).length
    expect({ error: replayed._tag, stepKey: "stepKey" in replayed ? replayed.stepKey : undefined, waits }).toEqual({ error: "NonDeterminism", stepKey: "y", waits: 0 })
  }).pipe(Effect.provide(kernelLayer([], [])))

describe("a replay of a sequential run diverged at the log's end", () => {
  it.live("a plain step", () => replayedChanged("end-plain", y))
  it.live("a step under Effect.timeout", () => replayedChanged("end-timeout", (ctx) => Effect.timeout(y(ctx), "5 seconds")))
  it.live("a step forked and joined at once", () => replayedChanged("end-fork", (ctx) => Effect.flatMap(Effect.fork(y(ctx)), Fiber.join)))
})
