import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Chat } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import * as cl100k from "gpt-tokenizer/encoding/cl100k_base"
import * as o200k from "gpt-tokenizer/encoding/o200k_base"
import * as gpt4 from "gpt-tokenizer/model/gpt-4"
import * as gpt4o from "gpt-tokenizer/model/gpt-4o"

const count = (messages: ReadonlyArray<Chat.ChatMessage>, model?: string) =>
  Effect.flatMap(OpenAiModel.make({ baseURL: "http://127.0.0.1:1/v1" }), (m) => m.countTokens(messages, model))

// Known counts from OpenAI's cookbook ("How to count tokens with tiktoken"): "お誕生日おめでとう" is 9 tokens in
// cl100k_base and 8 in o200k_base. A chat adds 3 tokens per message, the role (1 token), and 3 for the reply.
const birthday = [Chat.user("お誕生日おめでとう")]

const jargon = [
  Chat.system("You are a helpful, pattern-following assistant that translates corporate jargon into plain English."),
  Chat.user("This late pivot means we don't have time to boil the ocean for the client deliverable.")
]

describe("OpenAiModel countTokens", () => {
  it.effect("picks the encoding by model family", () =>
    Effect.gen(function*() {
      for (const model of ["gpt-4o", "gpt-4o-mini", "gpt-4.1-nano", "o3-mini", "gpt-5", "openai/gpt-4o"]) {
        expect(yield* count(birthday, model)).toBe(3 + 1 + 8 + 3)
      }
      for (const model of ["gpt-4", "gpt-4-turbo", "gpt-3.5-turbo", "openai/gpt-4-0613"]) {
        expect(yield* count(birthday, model)).toBe(3 + 1 + 9 + 3)
      }
    }))

  it.effect("matches gpt-tokenizer's own chat encoding", () =>
    Effect.gen(function*() {
      expect(yield* count(jargon, "gpt-4o")).toBe(gpt4o.encodeChat(jargon).length)
      expect(yield* count(jargon, "gpt-4")).toBe(gpt4.encodeChat(jargon).length)
      expect(yield* count(jargon, "gpt-4o")).toBe(46)
      expect(yield* count(jargon, "gpt-4")).toBe(48)
    }))

  it.effect("counts tool calls by name and arguments, and tool results by content", () =>
    Effect.gen(function*() {
      const args = "{\"accountId\":\"acc-1\"}"
      const withCall = [Chat.user("hi"), Chat.assistant(null, [{ id: "call_1", name: "get_balance", arguments: args }])]
      const withoutCall = [Chat.user("hi"), Chat.assistant(null)]
      const extra = o200k.encode("get_balance").length + o200k.encode(args).length
      expect((yield* count(withCall, "gpt-4o")) - (yield* count(withoutCall, "gpt-4o"))).toBe(extra)
      const result: Chat.ChatMessage = { role: "tool", toolCallId: "call_1", name: "get_balance", content: "{\"balance\":1200}" }
      expect(yield* count([result], "gpt-4")).toBe(3 + cl100k.encode("tool").length + cl100k.encode("{\"balance\":1200}").length + 3)
    }))

  it.effect("an unknown model (a local server's) is estimated with o200k_base; the default model is used when none is given", () =>
    Effect.gen(function*() {
      expect(yield* count(jargon, "llama3.2:3b")).toBe(yield* count(jargon, "gpt-4o"))
      expect(yield* count(jargon, "qwen2.5-coder")).toBe(46)
      // The default model is gpt-4o-mini.
      expect(yield* count(birthday)).toBe(15)
    }))

  it.effect("special-token text in a message is counted as text, not rejected", () =>
    Effect.gen(function*() {
      expect(yield* count([Chat.user("<|endoftext|>")], "gpt-4o")).toBe(3 + 1 + 7 + 3)
      expect(yield* count([], "gpt-4o")).toBe(3)
    }))
})
