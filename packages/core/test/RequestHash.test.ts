import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, FastCheck as fc } from "effect"
import { Chat, Json, type ModelPort } from "@artana/core"
import { canonicalJson, sha256 } from "../src/internal/hash.js"
import { requestHash, requestText } from "../src/internal/requestHash.js"

/** The definition: SHA-256 of the canonical JSON of the request's fields, absent ones null. */
const defined = (request: ModelPort.ModelRequest) =>
  sha256(canonicalJson({
    model: request.model,
    messages: request.messages,
    tools: request.tools,
    outputFormat: request.outputFormat ?? null,
    maxOutputTokens: request.maxOutputTokens ?? null
  }))

const message = Arbitrary.make(Chat.ChatMessage)
const request: fc.Arbitrary<ModelPort.ModelRequest> = fc.record({
  model: fc.string(),
  messages: fc.array(message, { maxLength: 5 }),
  tools: fc.array(Arbitrary.make(Chat.ToolSpec), { maxLength: 3 }),
  outputFormat: fc.option(fc.record({ name: fc.string(), schema: Arbitrary.make(Json.JsonObject) }), { nil: undefined }),
  maxOutputTokens: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined })
}, { requiredKeys: ["model", "messages", "tools"] })

describe("a model request's hash", () => {
  it("is SHA-256 of the canonical JSON of the request, the same when its messages and tools are reused by a later request", () => {
    fc.assert(
      fc.property(request, fc.array(message, { maxLength: 3 }), (first, more) => {
        const typed = first
        expect(requestText(typed)).toBe(canonicalJson({
          model: typed.model,
          messages: typed.messages,
          tools: typed.tools,
          outputFormat: typed.outputFormat ?? null,
          maxOutputTokens: typed.maxOutputTokens ?? null
        }))
        expect(requestHash(typed)).toBe(defined(typed))
        // A later turn: the same message and tool objects, and new ones.
        const next: ModelPort.ModelRequest = { ...typed, messages: [...typed.messages, ...more] }
        expect(requestHash(next)).toBe(defined(next))
        expect(requestHash(typed)).toBe(defined(typed))
      }),
      { numRuns: 300 }
    )
  })
})
