import { describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

// The replay cursor remembers the keys of the last 10,000 steps: auto keys (`kind:index`) by their index, explicit
// keys as strings. A key is one key however it was made: an explicit key that reads like an auto key is that key.

/** `steps` memoized steps, each under `keyOf(i)` (undefined: the auto key). */
const keyed = (name: string, keyOf: (i: number) => string | undefined, steps: number) =>
  Workflow.make({
    name,
    input: Schema.Null,
    output: Schema.Number,
    run: (_i, ctx) =>
      Effect.gen(function*() {
        let sum = 0
        for (let i = 0; i < steps; i++) {
          const key = keyOf(i)
          sum += yield* ctx.step("n", Effect.succeed(i), Schema.Number, key === undefined ? undefined : { key })
        }
        return sum
      })
  })

const outcome = (kernel: Kernel.Service, workflow: Workflow.Workflow<null, number, never>, runId: string) =>
  Effect.gen(function*() {
    const live = yield* Effect.either(kernel.execute(workflow, { runId, tenant, input: null }))
    const replayed = yield* Effect.either(kernel.replay(workflow, { tenantId: tenant.tenantId, runId }))
    const tag = (r: typeof live) => (Either.isRight(r) ? r.right.status : r.left._tag)
    return { live: tag(live), replay: tag(replayed) }
  })

describe("step keys within the window", () => {
  it.effect("an explicit key that reads as an earlier auto key is that key reused: NonDeterminism, live and replayed", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      // Step 0 gets the auto key `step:0`; step 2 asks for `step:0` explicitly.
      expect(yield* outcome(kernel, keyed("explicit-after-auto", (i) => (i === 2 ? "step:0" : undefined), 3), "a")).toEqual({
        live: "NonDeterminism",
        replay: "NonDeterminism"
      })
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("an auto key that an explicit key used before is that key reused", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      // Step 0 takes `step:1` explicitly; step 1's auto key is `step:1`.
      expect(yield* outcome(kernel, keyed("auto-after-explicit", (i) => (i === 0 ? "step:1" : undefined), 2), "b")).toEqual({
        live: "NonDeterminism",
        replay: "NonDeterminism"
      })
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("keys that only look alike (another kind, a leading zero) are other keys", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const keys: Record<number, string> = { 1: "tool:0", 2: "step:00", 3: "step:0x", 4: ":0" }
      expect(yield* outcome(kernel, keyed("look-alikes", (i) => keys[i], 5), "c")).toEqual({ live: "completed", replay: "completed" })
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("an explicit key used again after 10,000 other keys is not refused (it left the window), after 9,999 it is", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const far = yield* outcome(kernel, keyed("far", (i) => (i === 0 || i === 10_001 ? "k" : undefined), 10_002), "far")
      const near = yield* outcome(kernel, keyed("near", (i) => (i === 0 || i === 10_000 ? "k" : undefined), 10_001), "near")
      expect({ far, near }).toEqual({ far: { live: "completed", replay: "completed" }, near: { live: "NonDeterminism", replay: "NonDeterminism" } })
    }).pipe(Effect.provide(kernelLayer([], []))), 60_000)
})
