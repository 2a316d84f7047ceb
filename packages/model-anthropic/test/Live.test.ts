// Streaming through the kernel with the real `@anthropic-ai/sdk` against a local server that streams slowly: each delta
// reaches a live reader before the server sends the next one, so the deltas arrive before the reply ends.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, type Live, Tenant, ToolRegistry } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"
import { Chunk, Effect, Fiber, Layer, Stream } from "effect"

const tenant = () => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const kernelLayer = (server: FakeAnthropic.Server) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(
      AnthropicModel.layer({ baseURL: server.url, defaultModel: "claude-haiku-4-5", retryBaseDelay: "1 millis", stream: true }),
      EventStore.layerMemory,
      ToolRegistry.layer([])
    )
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

describe("Kernel.live over AnthropicModel (SSE)", () => {
  it.scopedLive("each delta reaches the reader before the server sends the next one; the reply is the logged one", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const started = signal()
      // Event 0 starts the message, event 1 the text block; events 2..9 carry text 1..8; then the block's stop, the
      // message's delta (usage) and its stop.
      const read = Array.from({ length: 9 }, signal)
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.text(answer, { pieces: 8 })], {
        beforeChunk: async ({ chunk }) => {
          if (chunk === 0) started.resolve()
          const text = chunk - 1
          // Text k + 1 waits until the reader has text k.
          if (text >= 2 && text <= 9) await atMost(read[text - 1]!.promise, 20_000)
          if (text >= 1) order.push(`sent ${text}`)
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
        // Text k (1..8) is read before text k + 1 is sent, and the last before the message's end is.
        for (let k = 1; k <= 8; k++) expect(order.indexOf(`read ${k}`)).toBeLessThan(order.indexOf(`sent ${k + 1}`))
        expect(texts(events)).toHaveLength(8)
        expect(texts(events).join("")).toBe(answer)
        const kinds = events.map((e) => e._tag)
        expect(kinds.lastIndexOf("TextDelta")).toBeLessThan(kinds.indexOf("ModelCompleted"))
        expect(kinds[kinds.length - 1]).toBe("Completed")
        const completed = events.find((e) => e._tag === "ModelCompleted")
        expect(completed?._tag === "ModelCompleted" && completed.message.content).toBe(answer)
      }).pipe(Effect.provide(kernelLayer(server)))
    }))
})
