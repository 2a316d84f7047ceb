// A reply streamed past its estimate (a server ignoring the cap), beside a sibling call of its lineage that took its
// hold later: the sibling was granted room on the premise that the stream stays within its hold. The stream asks for
// more room as it passes its hold (`internal/callHolds.ts`) and is stopped once the lineage has none left, so it never
// spends the sibling's room (a review measured $3.51 against $2.50 before).
import { describe, expect, it } from "@effect/vitest"
import { ModelPort } from "@artana/core"
import { Deferred, Effect, Stream } from "effect"
import { siblingTenant, xThenY } from "./siblings.js"

/** A delta of 4 characters: one output token, a cent. */
const token: ModelPort.StreamPart = { _tag: "TextDelta", text: "aaaa" }

describe("a stream past its cap, beside a sibling that took its hold later", () => {
  it.live("takes what the lineage has left and is stopped there, never the sibling's room", () =>
    Effect.gen(function*() {
      const xStreaming = yield* Deferred.make<void>()
      const yDone = yield* Deferred.make<void>()
      const reply = (model: string, content: string, outputTokens: number) => ({
        model,
        message: { role: "assistant" as const, content },
        usage: { inputTokens: 0, outputTokens }
      })
      const port = ModelPort.make({
        defaultModel: "m",
        prices: { m: { input: 0, cachedInput: 0, output: 10_000 } }, // a cent an output token
        generate: (request) => Effect.succeed(reply(request.model, "ok", 100)),
        stream: (request) =>
          request.messages[0]?.content === "x"
            // X ignores the cap of 100 tokens: one token, then (after Y ran) 2,000 more in one chunk.
            ? Stream.concat(
              Stream.succeed(token),
              Stream.concat(
                Stream.fromEffect(Effect.zipRight(Deferred.succeed(xStreaming, undefined), Deferred.await(yDone))).pipe(Stream.drain),
                Stream.fromIterable<ModelPort.StreamPart>([
                  ...Array.from({ length: 2000 }, () => token),
                  { _tag: "Finished", response: reply(request.model, "aaaa".repeat(2001), 2001) }
                ])
              )
            )
            : Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: reply(request.model, "ok", 100) })
      })
      const ran = yield* xThenY(port, xStreaming, yDone)
      expect(ran.y).toMatchObject({ _tag: "Right", right: "completed" })
      expect(ran.x).toMatchObject({ _tag: "Left", left: { _tag: "BudgetExceeded" } })
      // Y held $1 beside X's $1 and was charged $1. X took the $0.50 left and was stopped at the token that passed it
      // (charged: it was made).
      expect(ran.yUsd).toBeCloseTo(1, 9)
      expect(ran.xUsd).toBeCloseTo(1.51, 9)
      expect(ran.lineageUsd).toBeLessThanOrEqual(siblingTenant.budgetUsdLimit + 0.01 + 1e-9)
    }))

  it.live("a reply within its cap, whose tokens the stream's estimate over-counts, is not stopped: the tokenizer counts it", () =>
    Effect.gen(function*() {
      // 100 tokens of 7 characters: the stream's estimate (4 characters a token) says 175, past X's $1 hold, and the
      // lineage has $0.50 left beside Y's dollar. Refused more room, X's output is counted by the model's tokenizer:
      // 100 tokens, within its hold (found by review: it was stopped and charged $1.51 for a $1 reply).
      const xStreaming = yield* Deferred.make<void>()
      const yDone = yield* Deferred.make<void>()
      const word: ModelPort.StreamPart = { _tag: "TextDelta", text: "wordsy " }
      const reply = (model: string, content: string, outputTokens: number) => ({ model, message: { role: "assistant" as const, content }, usage: { inputTokens: 0, outputTokens } })
      const port = ModelPort.make({
        defaultModel: "m",
        prices: { m: { input: 0, cachedInput: 0, output: 10_000 } },
        generate: (request) => Effect.succeed(reply(request.model, "ok", 100)),
        // The model's tokenizer: a word a token, and 3 for a message's frame.
        countTokens: (messages) => Effect.succeed(messages.reduce((n, m) => n + String(m.content ?? "").split(" ").filter((w) => w.length > 0).length + 3, 0)),
        stream: (request) =>
          request.messages[0]?.content === "x"
            ? Stream.concat(
              Stream.succeed(word),
              Stream.concat(
                Stream.fromEffect(Effect.zipRight(Deferred.succeed(xStreaming, undefined), Deferred.await(yDone))).pipe(Stream.drain),
                Stream.fromIterable<ModelPort.StreamPart>([
                  ...Array.from({ length: 99 }, () => word),
                  { _tag: "Finished", response: reply(request.model, "wordsy ".repeat(100), 100) }
                ])
              )
            )
            : Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: reply(request.model, "ok", 100) })
      })
      const ran = yield* xThenY(port, xStreaming, yDone)
      expect({ x: ran.x, y: ran.y }).toMatchObject({ x: { _tag: "Right", right: "completed" }, y: { _tag: "Right", right: "completed" } })
      expect({ xUsd: ran.xUsd, lineageUsd: ran.lineageUsd }).toEqual({ xUsd: 1, lineageUsd: 2 })
    }))
})
