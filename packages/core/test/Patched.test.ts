// `ctx.patched` / `ctx.deprecatePatch` (issue 19, "Versioning"): code changes under runs paused before, at and after
// the change, in Temporal's three phases (patched, deprecated, removed), and the same change without `patched`.
import { describe, expect, it } from "@effect/vitest"
import { EventStore, Kernel, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const Answer = Schema.Struct({ ok: Schema.Boolean })

/** The code of each deploy: the change is the greeting step between the second and third pause. */
type Phase = "v1" | "patched" | "unpatched" | "deprecated" | "removed"

const workflowAt = (phase: Phase) =>
  Workflow.make({
    name: "greeter",
    input: Schema.Null,
    output: Schema.String,
    run: (_input, ctx) =>
      Effect.gen(function*() {
        yield* ctx.pauseForHuman({ reason: "first", schema: Answer })
        yield* ctx.step("a", Effect.succeed(1), Schema.Number)
        yield* ctx.pauseForHuman({ reason: "second", schema: Answer })
        const greet = (text: string) => ctx.step(`greet ${text}`, Effect.succeed(text), Schema.String)
        let greeting: string
        switch (phase) {
          case "v1":
            greeting = yield* greet("hello")
            break
          case "patched":
            greeting = (yield* ctx.patched("polite-greeting")) ? yield* greet("good day") : yield* greet("hello")
            break
          case "unpatched":
            greeting = yield* greet("good day")
            break
          case "deprecated":
            yield* ctx.deprecatePatch("polite-greeting")
            greeting = yield* greet("good day")
            break
          case "removed":
            greeting = yield* greet("good day")
            break
        }
        yield* ctx.pauseForHuman({ reason: "third", schema: Answer })
        return greeting
      })
  })

const answer = { response: { ok: true } }

/** Three runs started with `phase`'s code: paused before the change (2 steps ahead), at it, and after it. */
const pauseThree = (phase: Phase, prefix: string) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const code = workflowAt(phase)
    for (const id of ["before", "at", "after"]) {
      const started = yield* kernel.execute(code, { runId: `${prefix}-${id}`, tenant, input: null })
      expect(started).toMatchObject({ status: "paused", reason: "first" })
    }
    const atSecond = yield* kernel.resume({ workflow: code, tenantId: tenant.tenantId, runId: `${prefix}-at`, ...answer })
    expect(atSecond).toMatchObject({ status: "paused", reason: "second" })
    yield* kernel.resume({ workflow: code, tenantId: tenant.tenantId, runId: `${prefix}-after`, ...answer })
    const atThird = yield* kernel.resume({ workflow: code, tenantId: tenant.tenantId, runId: `${prefix}-after`, ...answer })
    expect(atThird).toMatchObject({ status: "paused", reason: "third" })
  })

/** Resumes a run with `phase`'s code until it ends; its output (or the error that stopped it). */
const finish = (phase: Phase, runId: string): Effect.Effect<Either.Either<string, unknown>, never, Kernel.Kernel> =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    for (let i = 0; i < 4; i++) {
      const result = yield* Effect.either(kernel.resume({ workflow: workflowAt(phase), tenantId: tenant.tenantId, runId, ...answer }))
      if (Either.isLeft(result)) return Either.left<unknown>(result.left)
      if (result.right.status === "completed") return Either.right(result.right.output)
    }
    return Either.left<unknown>("did not complete")
  })

const verified = (runId: string) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const report = yield* kernel.verify({ tenantId: tenant.tenantId, runId })
    expect(report.ok).toBe(true)
    return yield* kernel.readEvents({ tenantId: tenant.tenantId, runId })
  })

const markers = (events: ReadonlyArray<{ readonly stepKey: string }>) => events.filter((e) => e.stepKey.startsWith("patched:")).length

describe("ctx.patched", () => {
  it.effect("runs paused before, at and after the change complete under the patched code; only the one past it keeps the old path", () =>
    Effect.gen(function*() {
      yield* pauseThree("v1", "p")
      expect(yield* finish("patched", "p-before")).toEqual(Either.right("good day"))
      expect(yield* finish("patched", "p-at")).toEqual(Either.right("good day"))
      expect(yield* finish("patched", "p-after")).toEqual(Either.right("hello"))
      // A new run takes the new path, and the marker is in its chain, which verifies.
      yield* pauseThree("patched", "n")
      for (const id of ["before", "at", "after"]) expect(yield* finish("patched", `n-${id}`)).toEqual(Either.right("good day"))
      expect(markers(yield* verified("n-after"))).toBe(1)
      expect(markers(yield* verified("p-at"))).toBe(1)
      // The run that passed the change before it was made holds no marker, and every finished run replays exactly.
      expect(markers(yield* verified("p-after"))).toBe(0)
      const kernel = yield* Kernel.Kernel
      for (const id of ["p-before", "p-at", "p-after", "n-before"]) {
        const replayed = yield* kernel.replay(workflowAt("patched"), { tenantId: tenant.tenantId, runId: id })
        expect(replayed.status).toBe("completed")
      }
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("the same change without patched is NonDeterminism for the run past it, as before", () =>
    Effect.gen(function*() {
      yield* pauseThree("v1", "u")
      const diverged = yield* finish("unpatched", "u-after")
      expect(Either.isLeft(diverged) && diverged.left).toMatchObject({ _tag: "NonDeterminism" })
      expect(String(Either.isLeft(diverged) && diverged.left)).toContain(`step "greet hello"`)
      // Nothing was written: the run still waits at its third pause, and the patched code completes it.
      const store = yield* EventStore.EventStore
      expect((yield* store.getRun(tenant.tenantId, "u-after")).status).toBe("paused")
      expect(yield* finish("patched", "u-after")).toEqual(Either.right("hello"))
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("deprecatePatch, then the patch removed: runs paused before, at and after complete in each phase", () =>
    Effect.gen(function*() {
      // Phase 2: every run that could take the old path has ended; runs of the patched code are paused.
      yield* pauseThree("patched", "d")
      for (const id of ["before", "at", "after"]) expect(yield* finish("deprecated", `d-${id}`)).toEqual(Either.right("good day"))
      // deprecatePatch writes the marker too (code still calling `patched` replays its runs on the new path).
      expect(markers(yield* verified("d-before"))).toBe(1)
      const kernel = yield* Kernel.Kernel
      const underPatched = yield* kernel.replay(workflowAt("patched"), { tenantId: tenant.tenantId, runId: "d-before" })
      expect(underPatched).toMatchObject({ status: "completed", output: "good day" })
      // Phase 3: runs paused under the deprecated code (and those with markers of the patched code) complete without it.
      yield* pauseThree("deprecated", "r")
      yield* pauseThree("patched", "s")
      for (const id of ["r-before", "r-at", "r-after", "s-before", "s-at", "s-after"]) {
        expect(yield* finish("removed", id)).toEqual(Either.right("good day"))
      }
      for (const id of ["d-before", "d-after", "r-after"]) {
        const replayed = yield* kernel.replay(workflowAt("removed"), { tenantId: tenant.tenantId, runId: id })
        expect(replayed).toMatchObject({ status: "completed", output: "good day" })
      }
      // A run that took the old path cannot replay under the deprecated code: deprecate only once such runs ended.
      yield* pauseThree("v1", "o")
      const old = yield* finish("patched", "o-after")
      expect(old).toEqual(Either.right("hello"))
      const replayOld = yield* Effect.either(kernel.replay(workflowAt("deprecated"), { tenantId: tenant.tenantId, runId: "o-after" }))
      expect(Either.isLeft(replayOld) && replayOld.left).toMatchObject({ _tag: "NonDeterminism" })
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("patched is answered once per run: a second call returns the first answer and writes no second marker", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const twice = Workflow.make({
        name: "twice",
        input: Schema.Null,
        output: Schema.Array(Schema.Boolean),
        run: (_input, ctx) =>
          Effect.gen(function*() {
            const first = yield* ctx.patched("x")
            yield* ctx.step("between", Effect.succeed(1), Schema.Number)
            const second = yield* ctx.patched("x")
            return [first, second]
          })
      })
      const result = yield* kernel.execute(twice, { runId: "twice", tenant, input: null })
      expect(result).toMatchObject({ status: "completed", output: [true, true] })
      expect(markers(yield* verified("twice"))).toBe(1)
      const replayed = yield* kernel.replay(twice, { tenantId: tenant.tenantId, runId: "twice" })
      expect(replayed).toMatchObject({ status: "completed", output: [true, true] })
    }).pipe(Effect.provide(kernelLayer([], []))))
})
