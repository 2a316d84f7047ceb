import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Either, Layer, Redacted } from "effect"
import { Chat, ModelPort, Pricing } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"
import { bodyOf, request, setup } from "./fixtures.js"

const balanceTool: Chat.ToolSpec = {
  name: "get_balance",
  description: "Balance of an account in USD",
  parameters: { type: "object", properties: { accountId: { type: "string" } }, required: ["accountId"], additionalProperties: false }
}

const Decision = { type: "object", properties: { approved: { type: "boolean" } }, required: ["approved"], additionalProperties: false }

const failureOf = (model: ModelPort.Service, req = request()) => Effect.flip(model.generate(req))

describe("AnthropicModel.generate over the real SDK", () => {
  it.scopedLive("a text answer: system hoisted, max_tokens defaulted, usage with cache reads and writes", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeAnthropic.text("Hello!", { usage: { inputTokens: 20, outputTokens: 7, cacheReadTokens: 300, cacheWriteTokens: 50 } })
      ])
      const response = yield* model.generate(request())
      expect(response).toEqual({
        model: "claude-haiku-4-5",
        message: { role: "assistant", content: "Hello!" },
        usage: { inputTokens: 370, outputTokens: 7, cachedInputTokens: 300 },
        notes: [{ source: "anthropic", note: "cache_write", data: { inputTokens: 50 } }]
      })
      expect(bodyOf(server, 0)).toEqual({
        model: "claude-haiku-4-5",
        max_tokens: 4096,
        system: "Be brief.",
        messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }]
      })
      expect(server.requests[0]!.path).toBe("/v1/messages")
    }))

  it.scopedLive("tools and tool results map both ways; results of one turn travel in one user turn; dotted names renamed", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeAnthropic.toolCalls([
          { name: "fs_read", input: { path: "b.txt" }, id: "toolu_b" },
          { name: "get_balance", input: { accountId: "acc-2" }, id: "toolu_c" }
        ], { text: "Let me look." })
      ])
      const fsRead: Chat.ToolSpec = { name: "fs.read", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } }
      const response = yield* model.generate(request({
        messages: [
          Chat.user("Read a.txt and check acc-1"),
          Chat.assistant(null, [
            { id: "toolu_a", name: "fs.read", arguments: "{\"path\":\"a.txt\"}" },
            { id: "toolu_x", name: "get_balance", arguments: "{\"accountId\":\"acc-1\"}" }
          ]),
          { role: "tool", toolCallId: "toolu_a", name: "fs.read", content: "contents of a" },
          { role: "tool", toolCallId: "toolu_x", name: "get_balance", content: "{\"balance\":1200}" }
        ],
        tools: [fsRead, balanceTool],
        maxOutputTokens: 300
      }))
      expect(response.message).toEqual({
        role: "assistant",
        content: "Let me look.",
        toolCalls: [
          { id: "toolu_b", name: "fs.read", arguments: "{\"path\":\"b.txt\"}" },
          { id: "toolu_c", name: "get_balance", arguments: "{\"accountId\":\"acc-2\"}" }
        ]
      })
      const body = bodyOf(server, 0)
      expect(body["max_tokens"]).toBe(300)
      expect(body["tools"]).toEqual([
        { name: "fs_read", description: "Reads a file", input_schema: fsRead.parameters },
        { name: "get_balance", description: balanceTool.description, input_schema: balanceTool.parameters }
      ])
      expect(body["tool_choice"]).toBeUndefined()
      expect(body["messages"]).toEqual([
        { role: "user", content: [{ type: "text", text: "Read a.txt and check acc-1" }] },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "toolu_a", name: "fs_read", input: { path: "a.txt" } },
            { type: "tool_use", id: "toolu_x", name: "get_balance", input: { accountId: "acc-1" } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_a", content: "contents of a" },
            { type: "tool_result", tool_use_id: "toolu_x", content: "{\"balance\":1200}" }
          ]
        }
      ])
    }))

  it.scopedLive("structured output is an answer tool the model must call; its input comes back as the answer's JSON", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeAnthropic.output({ approved: true }),
        FakeAnthropic.output({ approved: false }),
        FakeAnthropic.output({ value: ["a", "b"] })
      ])
      const alone = yield* model.generate(request({ outputFormat: { name: "output", schema: Decision } }))
      expect(alone.message).toEqual({ role: "assistant", content: "{\"approved\":true}" })
      expect(bodyOf(server, 0)["tools"]).toEqual([{ name: "output", description: expect.any(String), input_schema: Decision }])
      expect(bodyOf(server, 0)["tool_choice"]).toEqual({ type: "tool", name: "output" })

      // Beside other tools (one of them named like the answer tool), the model must call one of them.
      const clash: Chat.ToolSpec = { ...balanceTool, name: "output" }
      const withTools = yield* model.generate(request({ outputFormat: { name: "output", schema: Decision }, tools: [clash] }))
      expect(withTools.message).toEqual({ role: "assistant", content: "{\"approved\":false}" })
      expect((bodyOf(server, 1)["tools"] as ReadonlyArray<{ name: string }>).map((t) => t.name)).toEqual(["output", "output_2"])
      expect(bodyOf(server, 1)["tool_choice"]).toEqual({ type: "any" })

      // A schema whose root is not an object (a tool's input must be one) travels as { value }.
      const list = { type: "array", items: { type: "string" } }
      const wrapped = yield* model.generate(request({ outputFormat: { name: "output", schema: list } }))
      expect(wrapped.message).toEqual({ role: "assistant", content: "[\"a\",\"b\"]" })
      expect(bodyOf(server, 2)["tools"]).toEqual([{
        name: "output",
        description: expect.any(String),
        input_schema: { type: "object", properties: { value: list }, required: ["value"], additionalProperties: false }
      }])
    }))

  it.scopedLive("an API key goes with every request; without one (a local server), no credential at all", () =>
    Effect.gen(function*() {
      const keyed = yield* setup([FakeAnthropic.text("a")], { apiKey: Redacted.make("sk-ant-test") })
      yield* keyed.model.generate(request())
      const headers = keyed.server.requests[0]!.headers
      expect(`${headers["x-api-key"] ?? ""} ${headers["authorization"] ?? ""}`).toContain("sk-ant-test")
      expect(headers["anthropic-version"]).toBeDefined()

      const keyless = yield* setup([FakeAnthropic.text("b")])
      yield* keyless.model.generate(request())
      expect(keyless.server.requests[0]!.headers["authorization"]).toBeUndefined()
      expect(keyless.server.requests[0]!.headers["x-api-key"]).toBeUndefined()

      // api.anthropic.com without a key: refused before any request.
      const nowhere = yield* AnthropicModel.make({})
      const refused = yield* failureOf(nowhere)
      expect(refused).toMatchObject({ kind: "authentication", retryable: false })
      expect(refused.reason).toContain("ANTHROPIC_API_KEY")
    }))

  it("Claude's dated snapshots are priced as their family; unknown models are not priced", () => {
    expect(Pricing.priceOf("claude-sonnet-4-5-20250929", AnthropicModel.prices)).toEqual({ input: 3, cachedInput: 0.3, output: 15 })
    expect(Pricing.priceOf("claude-opus-4-1-20250805", AnthropicModel.prices)).toEqual({ input: 15, cachedInput: 1.5, output: 75 })
    expect(Pricing.priceOf("claude-haiku-4-5-20251001", AnthropicModel.prices)).toEqual({ input: 1, cachedInput: 0.1, output: 5 })
    expect(Pricing.priceOf("claude-sonnet-4-5-preview", AnthropicModel.prices)).toBeUndefined()
  })
})

describe("AnthropicModel errors: the OpenAI adapter's kinds", () => {
  it.scopedLive("429 and 529 are retried (retry-after honoured), and each retry is a note", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeAnthropic.error(429, { retryAfter: "0.01" }),
        FakeAnthropic.error(529, { message: "Overloaded" }),
        FakeAnthropic.text("done")
      ])
      const response = yield* model.generate(request())
      expect(response.message.content).toBe("done")
      expect(response.notes).toEqual([
        { source: "anthropic", note: "retry", data: { attempt: 1, kind: "rate_limited", delayMs: 10 } },
        { source: "anthropic", note: "retry", data: { attempt: 2, kind: "server_error", delayMs: expect.any(Number) } }
      ])
      expect(server.requests).toHaveLength(3)
    }))

  it.scopedLive("errors a retry cannot fix fail at once, with the kind and a reason that names the fix", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [FakeAnthropic.Reply, ModelPort.ModelRequest, string, string]> = [
        [FakeAnthropic.error(401, { message: "invalid x-api-key" }), request(), "authentication", "ANTHROPIC_API_KEY"],
        [FakeAnthropic.error(403), request(), "authentication", "workspace"],
        [FakeAnthropic.error(402, { message: "credit balance is too low" }), request(), "rate_limited", "retrying will not help"],
        [FakeAnthropic.error(413, { message: "request too large" }), request(), "context_length_exceeded", "compact"],
        [FakeAnthropic.error(400, { message: "prompt is too long: 201234 tokens > 200000 maximum" }), request(), "context_length_exceeded", "compact"],
        [FakeAnthropic.error(404, { message: "model: claude-nope" }), request({ model: "claude-nope" }), "bad_request", "claude-nope"],
        [FakeAnthropic.error(400, { message: "tools.0.name: bad" }), request(), "bad_request", "tools.0.name: bad"],
        [FakeAnthropic.refusal("I can't help with that."), request(), "refusal", "I can't help with that."],
        [FakeAnthropic.error(500, { headers: { "x-should-retry": "false" } }), request(), "server_error", "failed"]
      ]
      const { model, server } = yield* setup(cases.map(([reply]) => reply))
      for (const [i, [, req, kind, says]] of cases.entries()) {
        const error = yield* failureOf(model, req)
        expect(error, `case ${i}`).toMatchObject({ _tag: "ModelError", kind, retryable: false })
        expect(error.reason, `case ${i}`).toContain(says)
      }
      expect(server.requests).toHaveLength(cases.length)
    }))

  it.scopedLive("a server that does not answer in time is a timeout, retried, and the request is aborted", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeAnthropic.hang, FakeAnthropic.hang], { timeout: "200 millis", maxRetries: 1 })
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "timeout", retryable: true })
      expect(error.reason).toContain("gave up after 2 attempts")
      yield* Effect.promise(() => Promise.all(server.requests.map((r) => r.abandoned)))
    }))

  it.scopedLive("a server that is not there is a connection error naming ANTHROPIC_BASE_URL", () =>
    Effect.gen(function*() {
      const server = yield* Effect.promise(() => FakeAnthropic.start([]))
      yield* Effect.promise(() => server.close())
      const model = yield* AnthropicModel.make({ baseURL: server.url, maxRetries: 0 })
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "connection", retryable: true })
      expect(error.reason).toContain("ANTHROPIC_BASE_URL")
    }))
})

describe("AnthropicModel.layer and layerConfig", () => {
  it.scopedLive("layer provides ModelPort and AnthropicClient (the SDK client, its own retries off)", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.text("hi")])
      const context = yield* Layer.build(AnthropicModel.layer({ baseURL: server.url, defaultModel: "claude-3-5-haiku-latest" }))
      const port = yield* Effect.provide(ModelPort.ModelPort, context)
      const { baseURL, client } = yield* Effect.provide(AnthropicModel.AnthropicClient, context)
      expect(port.defaultModel).toBe("claude-3-5-haiku-latest")
      expect(port.prices?.["claude-3-5-haiku-latest"]).toEqual({ input: 0.8, cachedInput: 0.08, output: 4 })
      expect(baseURL).toBe(server.url)
      expect(client.maxRetries).toBe(0)
      const response = yield* port.generate(request({ model: port.defaultModel }))
      expect(response).toMatchObject({ model: "claude-3-5-haiku-latest", message: { content: "hi" } })
    }))

  it.scopedLive("layerConfig reads ANTHROPIC_BASE_URL, ANTHROPIC_MODEL and ANTHROPIC_API_KEY; overrides go on top", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.text("from env")])
      const env = ConfigProvider.fromMap(new Map([
        ["ANTHROPIC_BASE_URL", server.url],
        ["ANTHROPIC_MODEL", "claude-sonnet-4-0"],
        ["ANTHROPIC_API_KEY", "sk-ant-env"]
      ]))
      const layer = AnthropicModel.layerConfig({ maxTokens: Config.succeed(777) }).pipe(Layer.provide(Layer.setConfigProvider(env)))
      const port = yield* Effect.provide(ModelPort.ModelPort, layer)
      const response = yield* port.generate(request({ model: port.defaultModel }))
      expect(response).toMatchObject({ model: "claude-sonnet-4-0", message: { content: "from env" } })
      expect(bodyOf(server, 0)).toMatchObject({ model: "claude-sonnet-4-0", max_tokens: 777 })
      const headers = server.requests[0]!.headers
      expect(`${headers["x-api-key"] ?? ""} ${headers["authorization"] ?? ""}`).toContain("sk-ant-env")
    }))

  it.effect("layerConfig without ANTHROPIC_API_KEY nor ANTHROPIC_BASE_URL is a ConfigError that says what to set", () =>
    Effect.gen(function*() {
      const layer = AnthropicModel.layerConfig().pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))))
      const result = yield* Effect.either(Effect.provide(ModelPort.ModelPort, layer))
      expect(Either.isLeft(result) && String(result.left)).toContain("ANTHROPIC_API_KEY")
      expect(Either.isLeft(result) && String(result.left)).toContain("ANTHROPIC_BASE_URL")
    }))
})
