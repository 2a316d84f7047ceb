// An adapter's billed re-ask is held against the spend the execution read before its call: a sibling sub-run that ended
// meanwhile (its hold released, its cost now the lineage's) is not counted, and the re-ask spends past the budget.
import { describe, expect, it } from "@effect/vitest"
import { ModelPort, ModelTransport } from "@artana/core"
import { Deferred, Effect } from "effect"
import { xThenY } from "./siblings.js"

describe("a billed re-ask after a sibling sub-run spent", () => {
  it.live("the lineage never spends past its budget", () =>
    Effect.gen(function*() {
      const xAsked = yield* Deferred.make<void>()
      const siblingDone = yield* Deferred.make<void>()
      let xAttempts = 0
      const usage = { inputTokens: 0, outputTokens: 100 }
      const policy = ModelTransport.retryPolicy("fake", { maxRetries: 3, retryBaseDelay: "1 millis" })
      const port = ModelPort.make({
        defaultModel: "m",
        prices: { m: { input: 0, cachedInput: 0, output: 10_000 } }, // a cent an output token: $1 a reply
        generate: (request) => {
          if (request.messages[0]?.content !== "x") return Effect.succeed({ model: "m", message: { role: "assistant" as const, content: "y" }, usage })
          // X: the first reply is malformed (billed, refused, retryable), after the sibling ended; then an answer.
          const attempt = Effect.suspend(() => {
            xAttempts++
            if (xAttempts > 1) return Effect.succeed("x")
            return Effect.zipRight(
              Effect.zipRight(Deferred.succeed(xAsked, undefined), Deferred.await(siblingDone)),
              Effect.fail(ModelTransport.billedFailure(ModelTransport.failure("malformed_tool_call", "a tool call without a name", true), usage))
            )
          })
          return Effect.map(
            Effect.mapError(ModelTransport.retrying(attempt, policy), (f) => f.error),
            ({ billed, value }) => ({
              model: "m",
              message: { role: "assistant" as const, content: value },
              usage: billed === undefined ? usage : ModelTransport.addUsage(billed, usage)
            })
          )
        }
      })
      // Y holds $1 beside X's (2 <= 2.5) and spends it; $0.5 is left, less than another attempt of X.
      const ran = yield* xThenY(port, xAsked, siblingDone)
      const spent = ran.lineageUsd
      expect({ spent, xAttempts }).toEqual({ spent: 2, xAttempts: 1 })
    }))
})
