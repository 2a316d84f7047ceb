import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { Chat, Event, Json } from "@artana/core"
import { decodeExact, encodeExact, exactGuard } from "../src/internal/exactGuard.js"

// The guard lets replay use a parsed payload as its decoded value. It may say "decode to know" for anything; what it
// may never do is vouch for a value that decoding would refuse or change.
const vouchesOnlyForWhatDecodingReturnsUnchanged = <A, I>(schema: Schema.Schema<A, I>, inputs: fc.Arbitrary<unknown>) => {
  const exact = exactGuard(schema)
  const decode = Schema.decodeUnknownEither(schema)
  let vouched = 0
  fc.assert(
    fc.property(inputs, (u) => {
      if (!exact(u)) return
      vouched++
      const decoded = decode(u)
      expect(Either.isRight(decoded)).toBe(true)
      if (Either.isRight(decoded)) expect(decoded.right).toStrictEqual(u)
    }),
    { numRuns: 400 }
  )
  return vouched
}

/** JSON text of a value of the schema's encoded side, parsed back: what a store reads. */
const storedValues = <A, I>(schema: Schema.Schema<A, I>): fc.Arbitrary<unknown> =>
  Arbitrary.make(Schema.encodedSchema(schema)).map((value) => JSON.parse(JSON.stringify(value)) as unknown)

describe("exactGuard", () => {
  it("vouches for stored event payloads only where decoding returns them unchanged, and for most of them", () => {
    const vouched = vouchesOnlyForWhatDecodingReturnsUnchanged(Event.EventPayload, storedValues(Event.EventPayload))
    // Every payload but RunStarted (its tenant decodes to a class) is plain JSON: most are used as read.
    expect(vouched).toBeGreaterThan(200)
  })

  it("never vouches for arbitrary JSON that decoding refuses or changes", () => {
    vouchesOnlyForWhatDecodingReturnsUnchanged(Event.EventPayload, fc.jsonValue())
    vouchesOnlyForWhatDecodingReturnsUnchanged(Chat.ChatMessage, fc.jsonValue())
    vouchesOnlyForWhatDecodingReturnsUnchanged(Chat.AssistantMessage, fc.jsonValue())
    vouchesOnlyForWhatDecodingReturnsUnchanged(Schema.Array(Schema.Int), fc.jsonValue())
  })

  it("refuses to vouch for excess keys (decoding drops them), a class, or a refinement's failures", () => {
    const completed = { _tag: "ToolCompleted", tool: "echo", result: { i: 1 } }
    expect(exactGuard(Event.EventPayload)(completed)).toBe(true)
    const withExcess = { ...completed, injected: "x" }
    expect(exactGuard(Event.EventPayload)(withExcess)).toBe(false)
    expect(Event.decodePayload(withExcess)).toStrictEqual(Either.right(completed))
    const started = { _tag: "RunStarted", workflow: "w", input: null, tenant: { tenantId: "t", capabilities: [], budgetUsdLimit: 1 } }
    expect(exactGuard(Event.EventPayload)(started)).toBe(false)
    expect(Either.isRight(Event.decodePayload(started))).toBe(true)
    expect(exactGuard(Schema.Int)(1.5)).toBe(false)
    expect(exactGuard(Json.Json)({ n: Number.NaN })).toBe(false)
  })

  it("answers for a tagged union by its tag, never skipping a member without one", () => {
    const union = Schema.Union(
      Schema.Struct({ _tag: Schema.Literal("a"), n: Schema.Number }),
      Schema.Struct({ n: Schema.String }),
      Schema.Struct({ _tag: Schema.Literal("a"), n: Schema.String }),
      Schema.Struct({ _tag: Schema.Literal("b"), n: Schema.String })
    )
    // A string `n` matches the untagged member too (which would drop `_tag`): the guard leaves that to decoding.
    expect(exactGuard(union)({ _tag: "a", n: "x" })).toBe(false)
    expect(exactGuard(union)({ _tag: "a", n: 1 })).toBe(true)
    expect(exactGuard(union)({ _tag: "c", n: 1 })).toBe(false)
    expect(exactGuard(union)({ _tag: undefined, n: "x" })).toBe(false)
    vouchesOnlyForWhatDecodingReturnsUnchanged(union, fc.oneof(fc.jsonValue(), storedValues(union)))
    // Another discriminant than `_tag`: chat messages by their role.
    expect(exactGuard(Chat.ChatMessage)({ role: "tool", toolCallId: "c1", name: "echo", content: "{}" })).toBe(true)
    expect(exactGuard(Chat.ChatMessage)({ role: "tool", content: "{}" })).toBe(false)
    expect(exactGuard(Chat.ChatMessage)({ role: "assistant", content: null, toolCalls: [{ id: "c1", name: "echo", arguments: "{}" }] })).toBe(true)
    vouchesOnlyForWhatDecodingReturnsUnchanged(Chat.ChatMessage, storedValues(Chat.ChatMessage))
  })

  it("decodeExact fails as decoding does, with the same error", () => {
    const schema = Schema.Struct({ a: Schema.Int })
    const input = { a: 1, b: 2 }
    expect(decodeExact(schema)(input, { onExcessProperty: "error" })).toStrictEqual(
      Schema.decodeUnknownEither(schema)(input, { onExcessProperty: "error" })
    )
    expect(decodeExact(schema)({ a: 1 })).toStrictEqual(Either.right({ a: 1 }))
  })

  it("encodeExact encodes as encoding does, transformations included", () => {
    const lower = Schema.transform(Schema.String, Schema.String, { strict: true, decode: (s) => s.toUpperCase(), encode: (s) => s.toLowerCase() })
    const schema = Schema.Struct({
      name: lower,
      n: Schema.Int,
      when: Schema.optional(Schema.NumberFromString),
      tags: Schema.Array(Schema.Union(Schema.Literal("a"), lower)),
      data: Json.Json
    })
    const encodeFast = encodeExact(schema)
    const encode = Schema.encodeEither(schema)
    fc.assert(fc.property(Arbitrary.make(schema), (value) => {
      expect(encodeFast(value)).toStrictEqual(encode(value))
    }), { numRuns: 300 })
    expect(encodeFast({ name: "ABC", n: 1, tags: ["X"], data: null })).toStrictEqual(Either.right({ name: "abc", n: 1, tags: ["x"], data: null }))
    const plain = Schema.Struct({ i: Schema.Int, note: Schema.String })
    const args = { i: 1, note: "x" }
    expect(Either.getOrThrow(encodeExact(plain)(args))).toBe(args)
  })
})
