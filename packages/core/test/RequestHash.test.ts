import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc } from "effect"
import { Chat, Json, type ModelPort } from "@artana/core"
import { canonicalJson, sha256, storedPayload } from "../src/internal/hash.js"
import { decodeLazy, LazyRequested } from "../src/internal/lazyPayload.js"
import { replayed, requestedOf, requestedText } from "../src/internal/modelRequested.js"
import { Renders } from "../src/internal/renders.js"
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
  it("is SHA-256 of the canonical JSON of the request, the same when its messages and tools are reused by later requests", () => {
    // One execution's renders across its requests, as a model step uses them.
    const renders = new Renders()
    fc.assert(
      fc.property(request, fc.array(message, { maxLength: 3 }), (first, more) => {
        const typed = first
        expect(requestText(typed, renders)).toBe(canonicalJson({
          model: typed.model,
          messages: typed.messages,
          tools: typed.tools,
          outputFormat: typed.outputFormat ?? null,
          maxOutputTokens: typed.maxOutputTokens ?? null
        }))
        expect(requestHash(typed, renders)).toBe(defined(typed))
        // A later turn: the same message and tool objects, and new ones; then the first again, then a request with
        // none of them, then the first again (its objects rendered anew).
        const next: ModelPort.ModelRequest = { ...typed, messages: [...typed.messages, ...more] }
        expect(requestHash(next, renders)).toBe(defined(next))
        expect(requestHash(typed, renders)).toBe(defined(typed))
        expect(requestHash({ model: typed.model, messages: more, tools: [] }, renders)).toBe(defined({ model: typed.model, messages: more, tools: [] }))
        expect(requestHash(typed, renders)).toBe(defined(typed))
        expect(requestHash(typed)).toBe(defined(typed))
      }),
      { numRuns: 300 }
    )
  })
})

const hash = fc.stringMatching(/^[0-9a-f]{64}$/)

const lazy = (text: string) => new LazyRequested("e-1", "r", "t", 3, 1_700_000_000_003, "model:0", "p".repeat(64), "h".repeat(64), text)

describe("the text of a model step's ModelRequested", () => {
  it("is JSON.stringify of the payload the step logs, the same when its messages are reused by later requests", () => {
    const renders = new Renders()
    fc.assert(
      fc.property(request, fc.array(message, { maxLength: 3 }), hash, (first, more, h) => {
        expect(requestedText(first, h, renders)).toBe(JSON.stringify(requestedOf(first, h)))
        const next: ModelPort.ModelRequest = { ...first, messages: [...first.messages, ...more] }
        expect(requestedText(next, h, renders)).toBe(JSON.stringify(requestedOf(next, h)))
        expect(requestedText(first, h, renders)).toBe(JSON.stringify(requestedOf(first, h)))
        const other: ModelPort.ModelRequest = { model: first.model, messages: more, tools: [] }
        expect(requestedText(other, h, renders)).toBe(JSON.stringify(requestedOf(other, h)))
        expect(requestedText(first, h, renders)).toBe(JSON.stringify(requestedOf(first, h)))
        expect(requestedText(first, h)).toBe(JSON.stringify(requestedOf(first, h)))
      }),
      { numRuns: 300 }
    )
  })

  it("read lazily, decodes on first use to what JSON.parse and the guard give, and keeps its stored text", () => {
    fc.assert(
      fc.property(request, hash, (sent, h) => {
        const text = requestedText(sent, h)
        const event = lazy(text)
        expect(storedPayload(event)).toBe(text)
        expect(event.payload).toEqual(JSON.parse(text))
        expect(decodeLazy(event)).toEqual(Either.right(event.payload))
      }),
      { numRuns: 100 }
    )
  })

  it("a stored text that fails the guard fails with the read's StoreError, and its payload throws it", () => {
    const bad = lazy('{"_tag":"ModelRequested","model":"m","messages":5,"tools":[],"requestHash":"x"}')
    const decoded = decodeLazy(bad)
    expect(Either.isLeft(decoded) && decoded.left).toMatchObject({ _tag: "StoreError", operation: "readEvents", reason: expect.stringMatching(/^corrupt row \(run r seq 3\), column payload: /) })
    expect(() => bad.payload).toThrow(/corrupt row \(run r seq 3\), column payload/)
    const notJson = decodeLazy(lazy('{"_tag":"ModelRequested",'))
    expect(Either.isLeft(notJson) && notJson.left.reason).toMatch(/column payload: not JSON/)
    const other = decodeLazy(lazy('{"_tag":"ModelRequested","_tag":"RunResumed","reason":"x"}'))
    expect(Either.isLeft(other) && other.left.reason).toMatch(/type ModelRequested does not match payload RunResumed/)
  })
})

describe("a replayed model step's request", () => {
  it("has the request's hash, and matches exactly the text requestedText gives, checked in one pass without building it", () => {
    fc.assert(
      fc.property(request, request, (sent, other) => {
        const h = requestHash(sent)
        const text = requestedText(sent, h)
        // One execution's renders: the messages' texts made by the first call, found by the next ones.
        const renders = new Renders()
        for (let i = 0; i < 2; i++) {
          expect(replayed(sent, text, renders)).toEqual({ requestHash: h, same: true })
          const otherText = requestedText(other, requestHash(other))
          expect(replayed(sent, otherText, renders)).toEqual({ requestHash: h, same: otherText === text })
          expect(replayed(sent, requestedText(sent, "0".repeat(64)), renders)).toEqual({ requestHash: h, same: h === "0".repeat(64) })
          expect(replayed(other, otherText, renders)).toEqual({ requestHash: requestHash(other), same: true })
        }
        // Any one character changed, dropped or added, anywhere in the text: not the same (one assertion for all).
        const taken: Array<string> = []
        for (let at = 0; at <= text.length; at++) {
          const c = text.charCodeAt(at)
          const edits = [text.slice(0, at) + " " + text.slice(at), text.slice(0, at) + text.slice(at + 1)]
          if (at < text.length) edits.push(text.slice(0, at) + String.fromCharCode(c === 120 ? 121 : 120) + text.slice(at + 1))
          for (const edited of edits) {
            if (edited !== text && replayed(sent, edited, renders).same) taken.push(edited)
          }
        }
        expect(taken).toEqual([])
      }),
      { numRuns: 40 }
    )
  })

  it("does not match the stored text of a request that differs only in a message the replay has rendered before", () => {
    const first: ModelPort.ModelRequest = { model: "m", messages: [Chat.system("s"), Chat.user("a")], tools: [] }
    const second: ModelPort.ModelRequest = { model: "m", messages: [first.messages[0]!, Chat.user("b")], tools: [] }
    const firstText = requestedText(first, requestHash(first))
    const renders = new Renders()
    expect(replayed(first, firstText, renders).same).toBe(true)
    expect(replayed(second, firstText, renders)).toEqual({ requestHash: requestHash(second), same: false })
    expect(replayed(second, requestedText(second, requestHash(first)), renders).same).toBe(false)
  })
})

describe("a replayed request's tail (its model and tools, kept from the request before)", () => {
  it("is the request's own when the model or the tools array changes between requests", () => {
    const spec = (name: string): Chat.ToolSpec => ({ name, description: `tool ${name}`, parameters: { type: "object" } })
    const tools = [spec("a"), spec("b")]
    const requests: Array<ModelPort.ModelRequest> = [
      { model: "m", messages: [Chat.user("x")], tools },
      { model: "m", messages: [Chat.user("y")], tools },
      { model: "n", messages: [Chat.user("y")], tools },
      { model: "n", messages: [Chat.user("y")], tools: [tools[0]!] },
      { model: "n", messages: [Chat.user("y")], tools: [...tools] },
      { model: "m", messages: [Chat.user("x")], tools }
    ]
    // One execution's renders across the requests, as replayed model steps use them; each hash checked against a
    // request rendered afresh.
    const renders = new Renders()
    for (const sent of requests) {
      const h = defined(sent)
      expect(replayed(sent, requestedText(sent, h), renders)).toEqual({ requestHash: h, same: true })
    }
  })
})

describe("an execution's renders", () => {
  it("render each message once when a few conversations take turns (a side call each turn, a compaction)", () => {
    // A message whose content counts its reads: each rendering (canonical, stored) reads it once.
    let reads = 0
    const counted = (role: "user" | "assistant", text: string): Chat.ChatMessage => {
      const message = { ...Chat.user(text), role }
      Object.defineProperty(message, "content", { enumerable: true, get: () => (reads++, text) })
      return message
    }
    const renders = new Renders()
    const conversations: Array<Array<Chat.ChatMessage>> = [[counted("user", "a")], [counted("user", "b")], [counted("user", "c")]]
    let messages = 0
    for (let turn = 0; turn < 12; turn++) {
      for (const [i, conversation] of conversations.entries()) {
        const sent: ModelPort.ModelRequest = { model: "m", messages: conversation, tools: [] }
        const h = requestHash(sent)
        // Each turn of each conversation is replayed as a model step replays it, one Renders for the execution.
        expect(replayed(sent, requestedText(sent, h), renders)).toEqual({ requestHash: h, same: true })
        conversation.push(counted(i % 2 === 0 ? "assistant" : "user", `turn ${turn} of ${i}`))
        messages++
      }
    }
    // requestHash and requestedText above rendered with fresh renders: two reads per message per call, not counted here.
    reads = 0
    for (const conversation of conversations) {
      const sent: ModelPort.ModelRequest = { model: "m", messages: conversation, tools: [] }
      replayed(sent, "", renders)
    }
    // The last turn's requests found every message but the one each conversation added since: one canonical rendering each.
    expect(reads).toBe(conversations.length)
    expect(messages).toBe(36)
  })
})
