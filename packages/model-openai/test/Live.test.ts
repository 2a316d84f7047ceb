// Streaming through the kernel with the real `openai` SDK against a local server that streams slowly.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, type Live, ModelPort, Tenant, ToolRegistry } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { TestWorkflows } from "@artana/core/testing"
import { Chunk, Effect, Either, Fiber, Layer, Stream } from "effect"
import { request, setup } from "./fixtures.js"

const { chatThenPause } = TestWorkflows

const tenant = (budgetUsdLimit = 1) => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit })

const kernelLayer = (server: FakeOpenAi.Server, kernel: Kernel.Options = {}) =>
  Layer.provideMerge(
    Kernel.layer(kernel),
    Layer.mergeAll(OpenAiModel.layer({ baseURL: server.url, retryBaseDelay: "1 millis", stream: true }), EventStore.layerMemory, ToolRegistry.layer([]))
  )


const texts = (events: ReadonlyArray<Live.LiveEvent>) => events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))

/** A promise and its resolver. */
const signal = () => {
  let resolve: () => void = () => {}
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/** `promise`, or nothing after `ms` (so code that streams nothing fails its assertions instead of hanging). */
const atMost = (promise: Promise<void>, ms: number) => Promise.race([promise, new Promise<void>((r) => setTimeout(r, ms))])

const answer = "Streaming keeps a person watching while the model writes its answer."

describe("OpenAiModel: ModelPort.stream", () => {
  it.scopedLive("text and tool-call argument deltas as they come, then the reply generate gives for the same answer", () =>
    Effect.gen(function*() {
      const script = [
        FakeOpenAi.toolCalls([{ name: "fs_read", arguments: { path: "notes.txt" }, id: "call_1" }, { name: "get_balance", arguments: { accountId: "acc-1" }, id: "call_2" }], { content: "Reading both." }),
        FakeOpenAi.text(answer, { pieces: 5 })
      ]
      const { model: streaming } = yield* setup(script, { stream: true })
      const { model: whole } = yield* setup(script)
      const tools = [{ name: "fs.read", description: "Reads a file", parameters: { type: "object" } }, { name: "get_balance", description: "Balance", parameters: { type: "object" } }]
      for (const req of [request({ tools }), request()]) {
        const parts = Chunk.toReadonlyArray(yield* Stream.runCollect(streaming.stream(req)))
        const last = parts[parts.length - 1]
        const deltas = parts.flatMap((p) => (p._tag === "Finished" ? [] : [p]))
        expect(parts.filter((p) => p._tag === "Finished")).toHaveLength(1)
        expect(last?._tag).toBe("Finished")
        const expected = yield* whole.generate(req)
        expect(last?._tag === "Finished" && last.response).toEqual(expected)
        // The deltas spell the reply: its text, and each tool call (named as the kernel knows the tool).
        const folded = ModelPort.foldDeltas(deltas)
        expect(folded.text).toBe(expected.message.content ?? "")
        expect(folded.toolCalls).toEqual(expected.message.toolCalls ?? [])
        // Each call arrives as its id and name, then its arguments in two pieces (as the server sends them).
        expect(deltas.filter((d) => d._tag === "ToolCallDelta").length).toBe(3 * (expected.message.toolCalls?.length ?? 0))
      }
    }))
})

describe("Kernel.live over OpenAiModel (SSE)", () => {
  it.scopedLive("each delta reaches the reader before the server sends the next chunk; the reply is the logged one", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const started = signal()
      // Chunk 0 opens the message; chunks 1..8 carry the text; then the finish and the usage.
      const read = Array.from({ length: 9 }, signal)
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text(answer, { pieces: 8 })], {
        beforeChunk: async ({ chunk }) => {
          if (chunk === 0) started.resolve()
          // Chunk c waits until the reader has the text of chunk c - 1.
          if (chunk >= 2 && chunk <= 9) await atMost(read[chunk - 1]!.promise, 20_000)
          order.push(`sent ${chunk}`)
        }
      })
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const run = yield* Effect.fork(kernel.chat({ runId: "sse", tenant: tenant(), messages: [Chat.user("Why stream?")] }))
        yield* Effect.promise(() => started.promise)
        let seen = 0
        const events = Chunk.toReadonlyArray(
          yield* kernel.live({ tenantId: "acme", runId: "sse" }).pipe(
            Stream.tap((e) =>
              Effect.sync(() => {
                if (e._tag !== "TextDelta") return
                seen++
                order.push(`read ${seen}`)
                read[seen]?.resolve()
              })
            ),
            Stream.runCollect
          )
        )
        const result = yield* Fiber.join(run)
        expect(result.status === "completed" && result.output.output).toBe(answer)
        // Text chunk k (1..8) is read before chunk k + 1 is sent.
        for (let k = 1; k <= 8; k++) expect(order.indexOf(`read ${k}`)).toBeLessThan(order.indexOf(`sent ${k + 1}`))
        expect(texts(events).join("")).toBe(answer)
        const kinds = events.map((e) => e._tag)
        expect(kinds.lastIndexOf("TextDelta")).toBeLessThan(kinds.indexOf("ModelCompleted"))
        expect(kinds[kinds.length - 1]).toBe("Completed")
        const completed = events.find((e) => e._tag === "ModelCompleted")
        expect(completed?._tag === "ModelCompleted" && completed.message.content).toBe(answer)
        expect(completed?._tag === "ModelCompleted" && completed.usage).toEqual({ inputTokens: 10, outputTokens: 5 })
      }).pipe(Effect.provide(kernelLayer(server)))
    }))

  it.scopedLive("a reader that reconnects after offset k gets exactly the events after k", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text(answer, { pieces: 12 })], { beforeChunk: () => new Promise((r) => setImmediate(r)) })
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        expect((yield* kernel.execute(chatThenPause, { runId: "again", tenant: tenant(), input: "Why stream?" })).status).toBe("paused")
        const until = (after?: string) =>
          kernel.live({ tenantId: "acme", runId: "again" }, after === undefined ? {} : { after }).pipe(
            Stream.takeUntil((e) => e._tag === "Paused"),
            Stream.runCollect,
            Effect.map(Chunk.toReadonlyArray)
          )
        const all = yield* until()
        expect(texts(all)).toHaveLength(12)
        expect(texts(all).join("")).toBe(answer)
        for (let k = 0; k < all.length - 1; k++) expect(yield* until(all[k]!.offset)).toEqual(all.slice(k + 1))
      }).pipe(Effect.provide(kernelLayer(server)))
    }))

  it.scopedLive("a budget crossed mid-stream stops the stream (the HTTP request is cut) and fails the run", () =>
    Effect.gen(function*() {
      let sent = 0
      // A server that ignores the output cap: 400 words in 80 chunks, slowly.
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("word ".repeat(400), { pieces: 80 })], {
        beforeChunk: () => new Promise((r) => setTimeout(() => r(void sent++), 2))
      })
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* Effect.either(kernel.chat({ runId: "over", tenant: tenant(0.00001), messages: [Chat.user("Talk.")] }))
        expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
        yield* Effect.promise(() => server.requests[0]!.abandoned)
        expect(sent).toBeLessThan(80)
        const log = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "over"))
        expect(log.map((e) => e.type)).toEqual(["RunStarted", "ModelRequested", "MiddlewareNote", "BudgetExceeded", "RunFailed"])
        expect(log[3]!.payload).toMatchObject({ phase: "during_call" })
      }).pipe(Effect.provide(kernelLayer(server, { defaultMaxOutputTokens: 10 })))
    }))
})
