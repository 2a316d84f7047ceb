// The Responses API (`api: "responses"`) over the real openai SDK against FakeOpenAi's /v1/responses: the same
// ModelResponse as Chat Completions, whole or streamed, tools and structured output, usage, retries, the kernel.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { Chat, EventStore, Kernel, type ModelPort, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { bodyOf, request, setup } from "./fixtures.js"

const balanceTool: Chat.ToolSpec = {
  name: "get_balance",
  description: "Balance of an account in USD",
  parameters: { type: "object", properties: { accountId: { type: "string" } }, required: ["accountId"], additionalProperties: false }
}
const Decision = { type: "object", properties: { approved: { type: "boolean" } }, required: ["approved"], additionalProperties: false }

const collect = (model: ModelPort.Service, req: ModelPort.ModelRequest) => Effect.map(Stream.runCollect(model.stream(req)), Chunk.toReadonlyArray)

describe("OpenAiModel with api: responses", () => {
  for (const stream of [false, true]) {
    const mode = stream ? "streamed" : "whole"

    it.scopedLive(`${mode}: a text answer is the same ModelResponse; POST /v1/responses with input items, store: false`, () =>
      Effect.gen(function*() {
        const { model, server } = yield* setup(
          [FakeOpenAi.text("Hello there, how can I help?", { usage: { promptTokens: 21, completionTokens: 7, cachedTokens: 16 } })],
          { api: "responses", stream }
        )
        const response = yield* model.generate(request({ maxOutputTokens: 300 }))
        expect(response).toEqual({
          model: "gpt-4o-mini",
          message: { role: "assistant", content: "Hello there, how can I help?" },
          usage: { inputTokens: 21, outputTokens: 7, cachedInputTokens: 16 }
        })
        expect(server.requests[0]!.path).toBe("/v1/responses")
        expect(bodyOf(server, 0)).toEqual({
          model: "gpt-4o-mini",
          input: [{ type: "message", role: "system", content: "Be brief." }, { type: "message", role: "user", content: "Hi" }],
          store: false,
          max_output_tokens: 300,
          stream
        })
      }))

    it.scopedLive(`${mode}: tool calls and results are function_call / function_call_output items; dotted names renamed both ways`, () =>
      Effect.gen(function*() {
        const { model, server } = yield* setup([
          FakeOpenAi.toolCalls([{ name: "fs_read", arguments: { path: "b.txt" }, id: "call_b" }, { name: "get_balance", arguments: { accountId: "acc-3" }, id: "call_c" }])
        ], { api: "responses", stream })
        const fsRead: Chat.ToolSpec = { name: "fs.read", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } }
        const response = yield* model.generate(request({
          messages: [
            Chat.user("Read a.txt"),
            Chat.assistant("Reading.", [{ id: "call_a", name: "fs.read", arguments: "{\"path\":\"a.txt\"}" }]),
            { role: "tool", toolCallId: "call_a", name: "fs.read", content: "contents of a" }
          ],
          tools: [fsRead, balanceTool]
        }))
        expect(response.message).toEqual({
          role: "assistant",
          content: null,
          toolCalls: [
            { id: "call_b", name: "fs.read", arguments: "{\"path\":\"b.txt\"}" },
            { id: "call_c", name: "get_balance", arguments: "{\"accountId\":\"acc-3\"}" }
          ]
        })
        const body = bodyOf(server, 0)
        expect(body["input"]).toEqual([
          { type: "message", role: "user", content: "Read a.txt" },
          { type: "message", role: "assistant", content: "Reading." },
          { type: "function_call", call_id: "call_a", name: "fs_read", arguments: "{\"path\":\"a.txt\"}" },
          { type: "function_call_output", call_id: "call_a", output: "contents of a" }
        ])
        expect(body["tools"]).toEqual([
          { type: "function", name: "fs_read", description: "Reads a file", parameters: fsRead.parameters, strict: false },
          { type: "function", ...balanceTool, strict: false }
        ])
      }))

    it.scopedLive(`${mode}: structured output is text.format json_schema; a refusal and a cut-off answer are what Chat Completions makes of them`, () =>
      Effect.gen(function*() {
        const { model, server } = yield* setup([
          FakeOpenAi.json({ approved: true }),
          FakeOpenAi.refusal("I can't help with that."),
          FakeOpenAi.text("a long ans", { finishReason: "length" })
        ], { api: "responses", stream })
        const answer = yield* model.generate(request({ outputFormat: { name: "decision", schema: Decision } }))
        expect(answer.message.content).toBe("{\"approved\":true}")
        expect(bodyOf(server, 0)["text"]).toEqual({ format: { type: "json_schema", name: "decision", schema: Decision, strict: true } })
        const refused = yield* Effect.flip(model.generate(request()))
        expect(refused).toMatchObject({ _tag: "ModelError", kind: "refusal", retryable: false })
        expect(refused.reason).toContain("I can't help with that.")
        const cut = yield* model.generate(request({ maxOutputTokens: 5 }))
        expect(cut.notes).toEqual([{ source: "openai", note: "truncated", data: { finishReason: "length", maxOutputTokens: 5 } }])
      }))
  }

  it.scopedLive("streamed: text and function-call arguments go out as deltas, then the reply; a 429 before the stream is retried", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeOpenAi.error(429, { message: "slow down" }),
        FakeOpenAi.toolCalls([{ name: "get_balance", arguments: { accountId: "acc-1" }, id: "call_1" }], { content: "Checking." })
      ], { api: "responses", stream: true })
      const parts = yield* collect(model, request({ tools: [balanceTool] }))
      expect(parts.filter((p) => p._tag !== "Finished")).toEqual([
        { _tag: "TextDelta", text: "Che" },
        { _tag: "TextDelta", text: "cki" },
        { _tag: "TextDelta", text: "ng." },
        { _tag: "ToolCallDelta", index: 0, id: "call_1", name: "get_balance", arguments: "" },
        { _tag: "ToolCallDelta", index: 0, arguments: "{\"accountId" },
        { _tag: "ToolCallDelta", index: 0, arguments: "\":\"acc-1\"}" }
      ])
      const last = parts[parts.length - 1]
      expect(last?._tag === "Finished" && last.response).toEqual({
        model: "gpt-4o-mini",
        message: { role: "assistant", content: "Checking.", toolCalls: [{ id: "call_1", name: "get_balance", arguments: "{\"accountId\":\"acc-1\"}" }] },
        usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0 },
        notes: [{ source: "openai", note: "retry", data: { attempt: 1, kind: "rate_limited", delayMs: expect.any(Number) } }]
      })
      expect(server.requests.map((r) => r.path)).toEqual(["/v1/responses", "/v1/responses"])
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

describe("a governed chat over the Responses API", () => {
  it.scopedLive("model -> tool -> structured answer, streamed: logged with usage and cost; replay needs no server", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.toolCall("lookup", { id: "c-7" }, { usage: { promptTokens: 1000, completionTokens: 100 } }),
        FakeOpenAi.json({ approved: true }, { usage: { promptTokens: 1200, completionTokens: 20 } })
      ])
      const store = Layer.succeedContext(yield* Layer.build(EventStore.layerMemory))
      const layer = Layer.provideMerge(
        Kernel.layer({ workflows: [approve] }),
        Layer.mergeAll(OpenAiModel.layer({ baseURL: server.url, api: "responses", stream: true }), store, ToolRegistry.layer([lookup]))
      )
      const kernel = yield* Effect.provide(Kernel.Kernel, layer)
      const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
      const result = yield* kernel.execute(approve, { runId: "resp-1", tenant, input: "c-7" })
      expect(result).toEqual({ status: "completed", runId: "resp-1", output: { approved: true } })
      const events = yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "resp-1")), store)
      const completed = events.flatMap((e) => (e.payload._tag === "ModelCompleted" ? [e.payload] : []))
      expect(completed.map((c) => c.model)).toEqual(["gpt-4o-mini", "gpt-4o-mini"])
      expect(completed[0]!.costUsd).toBeCloseTo((1000 * 0.15 + 100 * 0.6) / 1e6, 12)
      // The second request carries the first call and its result as items.
      expect(bodyOf(server, 1)["input"]).toEqual(expect.arrayContaining([
        expect.objectContaining({ type: "function_call", name: "lookup" }),
        expect.objectContaining({ type: "function_call_output", output: expect.stringContaining("vip") })
      ]))
      yield* Effect.promise(() => server.close())
      expect(yield* kernel.replay(approve, { tenantId: "acme", runId: "resp-1" })).toEqual(result)
    }))
})
