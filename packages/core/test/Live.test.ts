// A run as it happens: model deltas and log events in one stream, resumable from any offset it gave out.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, type Live, LiveStore, Tenant, ToolRegistry } from "@artana/core"
import { ScriptedModel, TestWorkflows } from "@artana/core/testing"
import { Chunk, Deferred, Effect, Either, Fiber, Layer, Option, Schema, Stream } from "effect"

const { chatThenPause } = TestWorkflows

const tenant = (budgetUsdLimit = 1) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })

const layer = (script: ReadonlyArray<ScriptedModel.Reply>, options: { readonly model?: string; readonly kernel?: Kernel.Options } = {}) =>
  Layer.provideMerge(
    Kernel.layer(options.kernel),
    Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer(script, options.model === undefined ? {} : { model: options.model }), ToolRegistry.layer([]))
  )

const texts = (events: ReadonlyArray<Live.LiveEvent>) => events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))

/** The live stream up to and including the first event `until` matches. */
const liveUntil = (kernel: Kernel.Service, runId: string, until: (e: Live.LiveEvent) => boolean, after?: string) =>
  kernel.live({ tenantId: "acme", runId }, after === undefined ? {} : { after }).pipe(Stream.takeUntil(until), Stream.runCollect, Effect.map(Chunk.toReadonlyArray))

/** Kernels over one event store and one shared `LiveStore`, as processes of one deployment (a 10 ms poll). */
const sharedStores = Effect.gen(function*() {
  const store = yield* EventStore.makeMemory
  const shared = yield* LiveStore.makeMemory
  return (script: ReadonlyArray<ScriptedModel.Reply>) =>
    Effect.provide(
      Kernel.Kernel,
      Layer.provideMerge(
        Kernel.layer({ livePollInterval: "10 millis" }),
        Layer.mergeAll(Layer.succeed(EventStore.EventStore, store), Layer.succeed(LiveStore.LiveStore, shared), ScriptedModel.layer(script), ToolRegistry.layer([]))
      )
    )
})

describe("Kernel.live", () => {
  it.effect("a reader gets each delta before the model sends the next one, then the logged reply", () => {
    const pieces = ["The ", "answer ", "is ", "42."]
    const order: Array<string> = []
    return Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const seen = yield* Effect.forEach(pieces, () => Deferred.make<void>())
      const reply = ScriptedModel.text(pieces.join(""), {
        deltas: pieces,
        // Delta n waits until the reader has seen delta n - 1 (bounded, so code that streams nothing fails, not hangs).
        beforeDelta: (n) =>
          Effect.gen(function*() {
            if (n === 0) yield* Deferred.succeed(started, undefined)
            else yield* Effect.ignore(Effect.timeout(Deferred.await(seen[n - 1]!), "5 seconds"))
            order.push(`sent ${n}`)
          })
      })
      const kernel = yield* Effect.provide(Kernel.Kernel, layer([reply]))
      const run = yield* Effect.fork(kernel.execute(chatThenPause, { runId: "watched", tenant: tenant(), input: "question" }))
      yield* Deferred.await(started)
      const events = yield* kernel.live({ tenantId: "acme", runId: "watched" }).pipe(
        Stream.tap((e) =>
          Effect.gen(function*() {
            if (e._tag !== "TextDelta") return
            const n = pieces.indexOf(e.text)
            order.push(`read ${n}`)
            yield* Deferred.succeed(seen[n]!, undefined)
          })
        ),
        Stream.takeUntil((e) => e._tag === "Paused"),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      )
      yield* Fiber.join(run)
      expect(order).toEqual(["sent 0", "read 0", "sent 1", "read 1", "sent 2", "read 2", "sent 3", "read 3"])
      expect(texts(events)).toEqual(pieces)
      const kinds = events.map((e) => e._tag)
      expect(kinds.indexOf("ModelStreamStarted")).toBeLessThan(kinds.indexOf("TextDelta"))
      expect(kinds.lastIndexOf("TextDelta")).toBeLessThan(kinds.indexOf("ModelCompleted"))
      const completed = events.find((e) => e._tag === "ModelCompleted")
      expect(completed?._tag === "ModelCompleted" && completed.message.content).toBe(pieces.join(""))
    })
  })

  it.effect("a reader woken by each delta as it streams, with pages of any size, gets what a later reader gets", () => {
    const pieces = ["a ", "b ", "c ", "d ", "e ", "f ", "g"]
    return Effect.gen(function*() {
      const readers = [1, 2, 3, 100]
      // Deltas are sent two at a time, a pair once every reader saw the one before it: each reader is woken by the deltas
      // alone, and finds one or two new ones (a full page, or not).
      const seen = yield* Effect.forEach(pieces, () => Effect.forEach(readers, () => Deferred.make<void>()))
      const started = yield* Deferred.make<void>()
      const reply = ScriptedModel.text(pieces.join(""), {
        deltas: pieces,
        beforeDelta: (n) =>
          n === 0
            ? Deferred.succeed(started, undefined)
            : n % 2 === 1
            ? Effect.void
            : Effect.ignore(Effect.timeout(Effect.forEach(seen[n - 1]!, Deferred.await), "5 seconds"))
      })
      const kernel = yield* Effect.provide(Kernel.Kernel, layer([reply]))
      const run = yield* Effect.fork(kernel.execute(chatThenPause, { runId: "paced", tenant: tenant(), input: "question" }))
      yield* Deferred.await(started)
      const live = yield* Effect.forEach(readers, (pageSize, r) =>
        kernel.live({ tenantId: "acme", runId: "paced" }, { pageSize }).pipe(
          Stream.tap((e) => (e._tag === "TextDelta" ? Deferred.succeed(seen[pieces.indexOf(e.text)]![r]!, undefined) : Effect.void)),
          Stream.takeUntil((e) => e._tag === "Paused"),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        ), { concurrency: "unbounded" })
      yield* Fiber.join(run)
      const later = yield* liveUntil(kernel, "paced", (e) => e._tag === "Paused")
      expect(texts(later)).toEqual(pieces)
      for (const events of live) expect(events).toEqual(later)
    })
  })

  it.effect("a reader that reconnects after any offset it saw gets exactly the rest", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(chatThenPause, { runId: "resumable", tenant: tenant(), input: "question" })
      expect(result.status).toBe("paused")
      const all = yield* liveUntil(kernel, "resumable", (e) => e._tag === "Paused")
      expect(texts(all).join("")).toBe("one two three four five six")
      expect(texts(all).length).toBe(6)
      expect(new Set(all.map((e) => e.offset)).size).toBe(all.length)
      // (After the last one, the pause, the stream waits for what comes next: see the next test.)
      for (let k = 0; k < all.length - 1; k++) {
        const rest = yield* liveUntil(kernel, "resumable", (e) => e._tag === "Paused", all[k]!.offset)
        expect(rest).toEqual(all.slice(k + 1))
      }
      // Small pages change nothing: a page boundary may fall between an event and the deltas after it.
      for (const pageSize of [1, 2, 3]) {
        const paged = yield* kernel.live({ tenantId: "acme", runId: "resumable" }, { pageSize }).pipe(
          Stream.takeUntil((e) => e._tag === "Paused"),
          Stream.runCollect
        )
        expect(Chunk.toReadonlyArray(paged)).toEqual(all)
      }
    }).pipe(Effect.provide(layer([ScriptedModel.text("one two three four five six", { deltas: ["one ", "two ", "three ", "four ", "five ", "six"] })]))))

  it.effect("a reader that reconnects waits for what comes next: the decision, the rest of the run, its end", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(chatThenPause, { runId: "waits", tenant: tenant(), input: "question" })
      const before = yield* liveUntil(kernel, "waits", (e) => e._tag === "Paused")
      const reader = yield* Effect.fork(kernel.live({ tenantId: "acme", runId: "waits" }, { after: before[before.length - 1]!.offset }).pipe(Stream.runCollect))
      const resumed = yield* kernel.resume({ tenantId: "acme", runId: "waits", response: "ok", workflow: chatThenPause })
      expect(resumed.status).toBe("completed")
      const after = Chunk.toReadonlyArray(yield* Fiber.join(reader))
      expect(after.map((e) => e._tag)).toEqual(["Logged", "Completed"])
    }).pipe(Effect.provide(layer([ScriptedModel.text("fine", { deltas: 2 })]))))

  it.effect("once a run ended its deltas are gone: the stream re-emits the logged reply, and ends", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({ runId: "done", tenant: tenant(), messages: [Chat.user("hi")] })
      expect(result.status).toBe("completed")
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(kernel.live({ tenantId: "acme", runId: "done" })))
      expect(events.map((e) => e._tag)).toEqual(["Logged", "Logged", "ModelCompleted", "Completed"])
      const completed = events[2]!
      expect(completed._tag === "ModelCompleted" && completed.message.content).toBe("hello there")
    }).pipe(Effect.provide(layer([ScriptedModel.text("hello there", { deltas: 3 })]))))

  it.effect("an offset the stream never gave out is refused", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "any", tenant: tenant(), messages: [Chat.user("hi")] })
      const refused = yield* Effect.either(Stream.runCollect(kernel.live({ tenantId: "acme", runId: "any" }, { after: "3.x" })))
      expect(Either.isLeft(refused) && refused.left._tag).toBe("InvalidInput")
    }).pipe(Effect.provide(layer([ScriptedModel.text("hi")]))))

  it.effect("a budget crossed mid-stream stops the stream there and fails the run", () => {
    const content = "word ".repeat(200)
    let emitted = 0
    const reply = ScriptedModel.text(content, { deltas: 100, usage: { inputTokens: 10, outputTokens: 250 }, beforeDelta: () => Effect.sync(() => void emitted++) })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      // The estimate (prompt and a 10-token cap) fits; a model that streams past its cap crosses the limit mid-stream.
      const result = yield* Effect.either(kernel.chat({ runId: "over", tenant: tenant(0.00001), messages: [Chat.user("hi")] }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      expect(emitted).toBeGreaterThan(1)
      expect(emitted).toBeLessThan(100)
      const log = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "over"))
      expect(log.map((e) => e.type)).toEqual(["RunStarted", "ModelRequested", "MiddlewareNote", "BudgetExceeded", "RunFailed"])
      expect(log[3]!.payload).toMatchObject({ _tag: "BudgetExceeded", phase: "during_call" })
      expect(log[2]!.payload).toMatchObject({ note: "stream_stopped" })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(kernel.live({ tenantId: "acme", runId: "over" })))
      expect(events.map((e) => e._tag)).toEqual(["Logged", "Logged", "Logged", "BudgetExceeded", "Failed"])
      expect(Option.isNone(Option.fromNullable(events.find((e) => e._tag === "ModelCompleted")))).toBe(true)
    }).pipe(Effect.provide(layer([reply], { model: "gpt-4o-mini", kernel: { defaultMaxOutputTokens: 10 } })))
  })

  it.effect("a budget crossed mid-stream stops at the first delta whose output crosses it, not one later or earlier", () => {
    // 100 deltas of 10 characters; gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output tokens.
    const reply = ScriptedModel.text("word ".repeat(200), { deltas: 100, usage: { inputTokens: 10, outputTokens: 250 } })
    const limitUsd = 0.00003
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.chat({ runId: "exact", tenant: tenant(limitUsd), messages: [Chat.user("hi")] }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      const log = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "exact"))
      const stopped = log.map((e) => e.payload).find((p) => p._tag === "MiddlewareNote" && p.note === "stream_stopped")
      const { estimateUsd, outputChars } = Schema.decodeUnknownSync(Schema.Struct({ estimateUsd: Schema.Number, outputChars: Schema.Number }))(
        stopped?._tag === "MiddlewareNote" ? stopped.data : undefined
      )
      const tokens = (chars: number) => Math.ceil(chars / 4)
      // What the prompt cost, as the kernel priced it, and so what the output before the crossing delta cost.
      const promptUsd = estimateUsd - tokens(outputChars) * 0.6 / 1_000_000
      expect(outputChars % 10).toBe(0)
      expect(outputChars).toBeGreaterThan(10)
      expect(outputChars).toBeLessThan(1000)
      expect(estimateUsd).toBeGreaterThan(limitUsd)
      expect(promptUsd + tokens(outputChars - 10) * 0.6 / 1_000_000).toBeLessThanOrEqual(limitUsd)
    }).pipe(Effect.provide(layer([reply], { model: "gpt-4o-mini", kernel: { defaultMaxOutputTokens: 10 } })))
  })

  it.effect("waitForStart: a reader that starts before the run does waits for it, and gets it all", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const reader = yield* Effect.fork(kernel.live({ tenantId: "acme", runId: "soon" }, { waitForStart: true }).pipe(Stream.runCollect))
      const refused = yield* Effect.either(Stream.runCollect(kernel.live({ tenantId: "acme", runId: "never" })))
      expect(Either.isLeft(refused) && refused.left._tag).toBe("RunNotFound")
      yield* Effect.yieldNow()
      yield* kernel.chat({ runId: "soon", tenant: tenant(), messages: [Chat.user("hi")] })
      const events = Chunk.toReadonlyArray(yield* Fiber.join(reader))
      expect(events[0]?.offset).toBe("1")
      expect(events.map((e) => e._tag).slice(-2)).toEqual(["ModelCompleted", "Completed"])
    }).pipe(Effect.provide(layer([ScriptedModel.text("hello", { deltas: 2 })]))))

  it.effect("a reader woken by its own process's deltas still gets another process's later writes, by its poll", () =>
    Effect.gen(function*() {
      const kernelOver = yield* sharedStores
      const here = yield* kernelOver([ScriptedModel.text("one two three", { deltas: ["one ", "two ", "three"] })])
      const elsewhere = yield* kernelOver([])
      // Reading while the reply streams: each delta wakes the reader (its poll timer left for its next wait to clear).
      const paused = yield* Deferred.make<void>()
      const reader = yield* Effect.fork(
        here.live({ tenantId: "acme", runId: "two" }, { waitForStart: true }).pipe(
          Stream.tap((e) => (e._tag === "Paused" ? Deferred.succeed(paused, undefined) : Effect.void)),
          Stream.takeUntil((e) => e._tag === "Completed"),
          Stream.runCollect
        )
      )
      expect((yield* here.execute(chatThenPause, { runId: "two", tenant: tenant(), input: "q" })).status).toBe("paused")
      // Once the reader waits after the pause, another process resumes the run: nothing but its poll brings it that.
      yield* Deferred.await(paused)
      expect((yield* elsewhere.resume({ tenantId: "acme", runId: "two", workflow: chatThenPause, response: "ok" })).status).toBe("completed")
      const seen = Chunk.toReadonlyArray(yield* Fiber.join(reader))
      expect(texts(seen)).toEqual(["one ", "two ", "three"])
      expect(seen.map((e) => e._tag).slice(-3)).toEqual(["Paused", "Logged", "Completed"])
    }))

  it.effect("a kernel given a shared LiveStore writes its deltas behind to it: another kernel over the same stores reads them", () =>
    Effect.gen(function*() {
      const kernelOver = yield* sharedStores
      const writer = yield* kernelOver([ScriptedModel.text("one two three", { deltas: ["one ", "two ", "three"] })])
      const reader = yield* kernelOver([])
      expect((yield* writer.execute(chatThenPause, { runId: "shared", tenant: tenant(), input: "q" })).status).toBe("paused")
      const seen = yield* liveUntil(reader, "shared", (e) => e._tag === "Paused")
      expect(texts(seen)).toEqual(["one ", "two ", "three"])
      expect(seen).toEqual(yield* liveUntil(writer, "shared", (e) => e._tag === "Paused"))
    }))
})
