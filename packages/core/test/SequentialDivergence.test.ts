// A sequential workflow (no concurrent branch) whose code changed while it was paused: its first step was renamed. On
// resume the new step is met while the logged one is unconsumed, and nothing else can consume it: the divergence is
// reported after the few yields a concurrent branch gets, never after the wait by the clock (up to 30 s) that a
// resumed run of concurrent branches allows them (`replayCursor.ts` `afterOthers`; found by review).
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

afterEach(() => {
  vi.restoreAllMocks()
})

describe("a sequential run's divergence on resume", () => {
  it.live("is reported without waiting by the clock", () => {
    let renamed = false
    const wf = Workflow.make({
      name: "seq-diverge",
      input: Schema.Null,
      output: Schema.Unknown,
      run: (_i, ctx) =>
        Effect.zipRight(
          ctx.step("s", Effect.succeed(1), Schema.Number, { key: renamed ? "b" : "a" }),
          ctx.pauseForHuman({ reason: "ok?", schema: Schema.Struct({ ok: Schema.Boolean }), key: "ask" })
        )
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(wf, { runId: "sd", tenant, input: null })
      expect(paused.status).toBe("paused")
      renamed = true
      // The clock waits are timers of 1 ms and more; nothing else in this resume sets one.
      const timers = vi.spyOn(globalThis, "setTimeout")
      const resumed = yield* Effect.either(kernel.resume({ tenantId: tenant.tenantId, runId: "sd", response: { ok: true } }))
      const waits = timers.mock.calls.filter(([, ms]) => typeof ms === "number" && ms >= 1).length
      expect(Either.isLeft(resumed) ? String(resumed.left) : "resumed").toContain("NonDeterminism")
      expect(waits).toBe(0)
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { workflows: [wf] } })))
  })
})
