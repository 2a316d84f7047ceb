// AnthropicModel.stream over the real SDK against FakeAnthropic's server-sent events: deltas as they come, then the
// reply exactly as a whole one; retries until the stream starts, none after.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import type { Chat} from "@artana/core";
import { EventStore, Kernel, type ModelPort, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"
import { bodyOf, request, setup } from "./fixtures.js"

const Decision = { type: "object", properties: { approved: { type: "boolean" } }, required: ["approved"], additionalProperties: false }

const collect = (model: ModelPort.Service, req: ModelPort.ModelRequest) =>
  Effect.map(Stream.runCollect(model.stream(req)), Chunk.toReadonlyArray)

const deltas = (parts: ReadonlyArray<ModelPort.StreamPart>) => parts.filter((p) => p._tag !== "Finished")
const finished = (parts: ReadonlyArray<ModelPort.StreamPart>) => {
  const last = parts[parts.length - 1]
  if (last?._tag !== "Finished") throw new Error("the stream did not end with Finished")
  return last.response
}

describe("AnthropicModel.stream over the real SDK", () => {
  it.scopedLive("text arrives as deltas, and the reply is the whole one's (usage and cache notes included)", () =>
    Effect.gen(function*() {
      const script = [FakeAnthropic.text("Hello there, Ann!", { usage: { inputTokens: 20, outputTokens: 7, cacheReadTokens: 300, cacheWriteTokens: 50 }, pieces: 3 })]
      const streamed = yield* setup(script, { stream: true })
      const whole = yield* setup(script)
      const parts = yield* collect(streamed.model, request())
      expect(deltas(parts)).toEqual([
        { _tag: "TextDelta", text: "Hello " },
        { _tag: "TextDelta", text: "there," },
        { _tag: "TextDelta", text: " Ann!" }
      ])
      expect(finished(parts)).toEqual(yield* whole.model.generate(request()))
      expect(bodyOf(streamed.server, 0)).toMatchObject({ stream: true, model: "claude-haiku-4-5", system: "Be brief." })
    }))

  it.scopedLive("tool_use blocks stream as tool-call deltas: id and name (renamed back) first, then the input's JSON text", () =>
    Effect.gen(function*() {
      const { model } = yield* setup([
        FakeAnthropic.toolCalls([{ name: "fs_read", input: { path: "notes.txt" }, id: "toolu_a" }, { name: "ping", input: {}, id: "toolu_b" }], { text: "Looking.", pieces: 2 })
      ], { stream: true })
      const fsRead: Chat.ToolSpec = { name: "fs.read", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } }
      const ping: Chat.ToolSpec = { name: "ping", description: "Pings", parameters: { type: "object", properties: {} } }
      const parts = yield* collect(model, request({ tools: [fsRead, ping] }))
      expect(deltas(parts)).toEqual([
        { _tag: "TextDelta", text: "Look" },
        { _tag: "TextDelta", text: "ing." },
        { _tag: "ToolCallDelta", index: 0, id: "toolu_a", name: "fs.read", arguments: "" },
        { _tag: "ToolCallDelta", index: 0, arguments: "{\"path\":\"n" },
        { _tag: "ToolCallDelta", index: 0, arguments: "otes.txt\"}" },
        { _tag: "ToolCallDelta", index: 1, id: "toolu_b", name: "ping", arguments: "" },
        { _tag: "ToolCallDelta", index: 1, arguments: "{" },
        { _tag: "ToolCallDelta", index: 1, arguments: "}" }
      ])
      expect(finished(parts).message).toEqual({
        role: "assistant",
        content: "Looking.",
        toolCalls: [{ id: "toolu_a", name: "fs.read", arguments: "{\"path\":\"notes.txt\"}" }, { id: "toolu_b", name: "ping", arguments: "{}" }]
      })
    }))

  it.scopedLive("structured output: the answer tool's input streams as the answer's text", () =>
    Effect.gen(function*() {
      const { model } = yield* setup([FakeAnthropic.output({ approved: true }, { pieces: 2 })], { stream: true })
      const parts = yield* collect(model, request({ outputFormat: { name: "output", schema: Decision } }))
      const text = deltas(parts).map((d) => (d._tag === "TextDelta" ? d.text : "")).join("")
      expect(text).toBe("{\"approved\":true}")
      expect(deltas(parts).length).toBe(2)
      expect(finished(parts).message).toEqual({ role: "assistant", content: "{\"approved\":true}" })
    }))

  it.scopedLive("a 529 before the stream starts is retried (a note); an error event after it started ends the call, not retried", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeAnthropic.error(529, { message: "Overloaded" }),
        FakeAnthropic.text("fine", { pieces: 1 }),
        FakeAnthropic.text("a long answer cut short", { pieces: 4, failAfter: 4 }),
        FakeAnthropic.text("never asked")
      ], { stream: true })
      const parts = yield* collect(model, request())
      expect(finished(parts).notes).toEqual([{ source: "anthropic", note: "retry", data: { attempt: 1, kind: "server_error", delayMs: expect.any(Number) } }])
      const seen: Array<ModelPort.StreamPart> = []
      const error = yield* Effect.flip(Stream.runForEach(model.stream(request()), (p) => Effect.sync(() => void seen.push(p))))
      expect(seen.length).toBeGreaterThan(0)
      expect(error).toMatchObject({ _tag: "ModelError", kind: "server_error" })
      expect(error.reason).toContain("Overloaded")
      expect(server.requests).toHaveLength(3)
    }))
})

const lookup = Tool.make({
  name: "lookup",
  description: "Looks a customer up",
  parameters: Schema.Struct({ id: Schema.String }),
  idempotent: true,
  handler: ({ id }) => Effect.succeed({ id, vip: true })
})

const approve = Workflow.make({
  name: "approve",
  input: Schema.String,
  output: Schema.Struct({ approved: Schema.Boolean }),
  run: (id, ctx) => Effect.map(ctx.chat({ prompt: `Approve ${id}?`, tools: ["lookup"], outputSchema: Schema.Struct({ approved: Schema.Boolean }) }), (r) => r.output)
})

describe("a governed chat over the streaming adapter", () => {
  it.scopedLive("model -> tool -> structured answer: the log holds the assembled replies, priced; replay needs no server", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([
        FakeAnthropic.toolCall("lookup", { id: "c-7" }, { usage: { inputTokens: 1000, outputTokens: 100 } }),
        FakeAnthropic.output({ approved: true }, { usage: { inputTokens: 1200, outputTokens: 20 } })
      ])
      const store = Layer.succeedContext(yield* Layer.build(EventStore.layerMemory))
      const layer = Layer.provideMerge(
        Kernel.layer({ workflows: [approve] }),
        Layer.mergeAll(AnthropicModel.layer({ baseURL: server.url, defaultModel: "claude-haiku-4-5", stream: true }), store, ToolRegistry.layer([lookup]))
      )
      const kernel = yield* Effect.provide(Kernel.Kernel, layer)
      const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
      const result = yield* kernel.execute(approve, { runId: "s-1", tenant, input: "c-7" })
      expect(result).toEqual({ status: "completed", runId: "s-1", output: { approved: true } })
      const events = yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "s-1")), store)
      const completed = events.flatMap((e) => (e.payload._tag === "ModelCompleted" ? [e.payload] : []))
      expect(completed.map((c) => c.message.toolCalls?.map((t) => t.name) ?? c.message.content)).toEqual([["lookup"], "{\"approved\":true}"])
      expect(completed[0]!.costUsd).toBeCloseTo((1000 * 1 + 100 * 5) / 1e6, 12)
      expect(server.requests.every((r) => (r.body as { stream?: boolean }).stream === true)).toBe(true)
      yield* Effect.promise(() => server.close())
      expect(yield* kernel.replay(approve, { tenantId: "acme", runId: "s-1" })).toEqual(result)
    }))
})
