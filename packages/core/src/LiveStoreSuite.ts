/**
 * The contract of a `LiveStore` under the kernel, run by every store that keeps live deltas (memory, SQLite, Postgres):
 * a run's streamed deltas are kept while the run is live (a paused run keeps them) and are gone once it ended
 * (completed, failed, continued as new, each run of a chain), and a reader at an old offset after the end still gets
 * one coherent reply: the logged `ModelCompleted`. Each test builds a fresh layer.
 *
 * @example
 * import { LiveStoreSuite } from "@artana/core/testing/suites"
 * LiveStoreSuite.suite("sqlite", () => SqliteStore.layer({ filename: tempFile() }))
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { user } from "./Chat.js"
import type * as EventStore from "./EventStore.js"
import * as Kernel from "./Kernel.js"
import * as Live from "./Live.js"
import * as LiveStore from "./LiveStore.js"
import * as ScriptedModel from "./ScriptedModel.js"
import { TenantContext } from "./Tenant.js"
import * as ToolRegistry from "./ToolRegistry.js"
import * as Workflow from "./Workflow.js"

const tenant = TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

class Refused extends Schema.TaggedError<Refused>()("Refused", { reason: Schema.String }) {}

/** What a run does after its streamed chat: each run of a chain takes the first step and hands the rest over. */
const Step = Schema.Literal("complete", "fail", "pause", "continue")

/** Chats once (streamed), then does `steps[0]`: completes with the reply, fails, pauses (then completes), continues. */
const streamer = Workflow.make({
  name: "live-retention",
  input: Schema.Array(Step),
  output: Schema.String,
  run: (steps, ctx) =>
    Effect.gen(function*() {
      const reply = yield* ctx.chat({ messages: [user(`${steps.length} steps left`)] })
      const [step, ...rest] = steps
      if (step === "fail") return yield* new Refused({ reason: "the reply was refused" })
      if (step === "pause") yield* ctx.pauseForHuman({ reason: "check the reply" })
      if (step === "continue") return yield* ctx.continueAsNew(rest)
      return reply.output
    })
})

const reply = (text: string) => ScriptedModel.text(text, { deltas: text.split(/(?<= )/) })

/** What the shared store keeps of the run (read as another process would). */
const kept = (runId: string) =>
  Effect.flatMap(LiveStore.LiveStore, (live) => live.read(tenant.tenantId, runId, Live.start, 1_000_000, 1_000))

const collect = (stream: Stream.Stream<Live.LiveEvent, unknown>) => Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

/**
 * Registers the tests for the stores `makeLayer` builds (an `EventStore` and the `LiveStore` beside it). `makeLayer` is
 * called once per test.
 */
export const suite = (name: string, makeLayer: () => Layer.Layer<EventStore.EventStore | LiveStore.LiveStore, unknown>): void => {
  const kernelOn = (script: ReadonlyArray<ScriptedModel.Reply>) =>
    Layer.provideMerge(Kernel.layer({ workflows: [streamer] }), Layer.mergeAll(makeLayer(), ScriptedModel.layer(script), ToolRegistry.layer([])))
  const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })

  describe(`live deltas kept while a run is live: ${name}`, () => {
    it.effect("a completed run keeps no deltas; its live stream re-emits the logged reply and ends", () =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        expect(yield* kernel.execute(streamer, { runId: "done", tenant, input: ["complete"] })).toMatchObject({ status: "completed", output: "one two three" })
        expect(yield* kept("done")).toEqual([])
        const events = yield* collect(kernel.live(ref("done")))
        expect(events.map((e) => e._tag)).toEqual(["Logged", "Logged", "ModelCompleted", "Completed"])
      }).pipe(Effect.provide(kernelOn([reply("one two three")]))), 60_000)

    it.effect("a failed run keeps no deltas", () =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const failed = yield* Effect.either(kernel.execute(streamer, { runId: "failed", tenant, input: ["fail"] }))
        expect(Either.isLeft(failed) && failed.left._tag).toBe("Refused")
        expect(yield* kept("failed")).toEqual([])
        const events = yield* collect(kernel.live(ref("failed")))
        expect(events[events.length - 1]).toMatchObject({ _tag: "Failed", errorTag: "Refused" })
      }).pipe(Effect.provide(kernelOn([reply("no way")]))), 60_000)

    it.effect("a paused run keeps its deltas until it ends: a reader at an old offset then gets the logged reply, once", () =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        expect((yield* kernel.execute(streamer, { runId: "paused", tenant, input: ["pause"] })).status).toBe("paused")
        expect((yield* kept("paused")).map((d) => d.part._tag)).toEqual(["ModelStreamStarted", "TextDelta", "TextDelta", "TextDelta"])
        const seen = yield* collect(kernel.live(ref("paused")).pipe(Stream.takeUntil((e) => e._tag === "Paused")))
        // A reader that saw the first two pieces, and comes back once the run is over.
        const old = seen.findIndex((e) => e._tag === "TextDelta" && e.text === "two ")
        expect(old).toBeGreaterThan(0)
        expect(yield* kernel.resume({ ...ref("paused"), response: "ok", workflow: streamer })).toMatchObject({ status: "completed", output: "one two three" })
        expect(yield* kept("paused")).toEqual([])
        const rest = yield* collect(kernel.live(ref("paused"), { after: seen[old]!.offset }))
        expect(rest.map((e) => e._tag)).toEqual(["Logged", "ModelCompleted", "Paused", "Logged", "Completed"])
        const replies = Live.replies()
        for (const e of [...seen.slice(0, old + 1), ...rest]) replies.push(e)
        expect(replies.text(rest[1]!.stepKey)).toBe("one two three")
        expect(replies.completed(rest[1]!.stepKey)).toBe(true)
      }).pipe(Effect.provide(kernelOn([reply("one two three")]))), 60_000)

    it.effect("every run of a chain that continued as new keeps no deltas, whether the last completes or fails", () =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const done = yield* kernel.execute(streamer, { runId: "chain", tenant, input: ["continue", "continue", "complete"] })
        expect(done).toMatchObject({ status: "completed", runId: "chain::continued::2" })
        for (const runId of ["chain", "chain::continued::1", "chain::continued::2"]) expect({ runId, kept: yield* kept(runId) }).toEqual({ runId, kept: [] })
        const failed = yield* Effect.either(kernel.execute(streamer, { runId: "sour", tenant, input: ["continue", "fail"] }))
        expect(Either.isLeft(failed) && failed.left._tag).toBe("Refused")
        for (const runId of ["sour", "sour::continued::1"]) expect({ runId, kept: yield* kept(runId) }).toEqual({ runId, kept: [] })
        // The first run's stream ends at its Continued; the next run's stream is read on from there.
        const first = yield* collect(kernel.live(ref("sour")))
        const next = first[first.length - 1]
        expect(next).toMatchObject({ _tag: "Continued", nextRunId: "sour::continued::1" })
        const second = yield* collect(kernel.live(ref("sour::continued::1")))
        expect(second.filter((e) => e._tag === "ModelCompleted" || e._tag === "Failed").map((e) => e._tag)).toEqual(["ModelCompleted", "Failed"])
      }).pipe(Effect.provide(kernelOn([reply("a b"), reply("c d"), reply("e f"), reply("g h"), reply("i j")]))), 60_000)

    it.effect("a run that continued as new drops its deltas while its successor, paused, keeps its own", () =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const paused = yield* kernel.execute(streamer, { runId: "handed", tenant, input: ["continue", "pause"] })
        expect(paused).toMatchObject({ status: "paused", runId: "handed::continued::1" })
        expect(yield* kept("handed")).toEqual([])
        expect((yield* kept("handed::continued::1")).map((d) => d.part._tag)).toEqual(["ModelStreamStarted", "TextDelta", "TextDelta"])
        expect(yield* kernel.resume({ ...ref("handed"), response: "ok", workflow: streamer })).toMatchObject({ status: "completed", output: "c d" })
        expect(yield* kept("handed::continued::1")).toEqual([])
      }).pipe(Effect.provide(kernelOn([reply("a b"), reply("c d")]))), 60_000)
  })
}
