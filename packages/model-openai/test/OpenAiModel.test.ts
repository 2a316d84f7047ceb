import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Either, Exit, Fiber, Layer, Redacted } from "effect"
import { Chat, ModelPort } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { bodyOf, request, setup } from "./fixtures.js"

const balanceTool: Chat.ToolSpec = {
  name: "get_balance",
  description: "Balance of an account in USD",
  parameters: { type: "object", properties: { accountId: { type: "string" } }, required: ["accountId"], additionalProperties: false }
}

/** Runs `generate` and returns its ModelError (the test fails if the call succeeds). */
const failureOf = (model: ModelPort.Service, req = request()) =>
  Effect.flip(model.generate(req))

describe("OpenAiModel.generate", () => {
  for (const stream of [false, true]) {
    const mode = stream ? "streamed" : "non-streamed"

    it.scopedLive(`${mode}: a text answer, with usage and cached tokens`, () =>
      Effect.gen(function*() {
        const { model, server } = yield* setup(
          [FakeOpenAi.text("Hello there, how can I help?", { usage: { promptTokens: 21, completionTokens: 7, cachedTokens: 16 } })],
          { stream }
        )
        const response = yield* model.generate(request())
        expect(response).toEqual({
          model: "gpt-4o-mini",
          message: { role: "assistant", content: "Hello there, how can I help?" },
          usage: { inputTokens: 21, outputTokens: 7, cachedInputTokens: 16 }
        })
        const body = bodyOf(server, 0)
        expect(body).toMatchObject({
          model: "gpt-4o-mini",
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }]
        })
        expect(body["tools"]).toBeUndefined()
        expect(body["response_format"]).toBeUndefined()
        if (stream) expect(body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
        else expect(body["stream"]).toBe(false)
      }))

    it.scopedLive(`${mode}: tools, tool messages and tool calls map both ways`, () =>
      Effect.gen(function*() {
        const { model, server } = yield* setup([
          FakeOpenAi.toolCalls([
            { name: "get_balance", arguments: { accountId: "acc-2" }, id: "call_b" },
            { name: "get_balance", arguments: { accountId: "acc-3" }, id: "call_c" }
          ])
        ], { stream })
        const response = yield* model.generate(request({
          messages: [
            Chat.user("Balances of acc-1, acc-2 and acc-3?"),
            Chat.assistant(null, [{ id: "call_a", name: "get_balance", arguments: "{\"accountId\":\"acc-1\"}" }]),
            { role: "tool", toolCallId: "call_a", name: "get_balance", content: "{\"balance\":1200}" }
          ],
          tools: [balanceTool]
        }))
        expect(response.message).toEqual({
          role: "assistant",
          content: null,
          toolCalls: [
            { id: "call_b", name: "get_balance", arguments: "{\"accountId\":\"acc-2\"}" },
            { id: "call_c", name: "get_balance", arguments: "{\"accountId\":\"acc-3\"}" }
          ]
        })
        const body = bodyOf(server, 0)
        expect(body["tools"]).toEqual([{ type: "function", function: balanceTool }])
        expect(body["messages"]).toEqual([
          { role: "user", content: "Balances of acc-1, acc-2 and acc-3?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_a", type: "function", function: { name: "get_balance", arguments: "{\"accountId\":\"acc-1\"}" } }]
          },
          { role: "tool", tool_call_id: "call_a", content: "{\"balance\":1200}" }
        ])
      }))

    it.scopedLive(`${mode}: a refusal is a ModelError of kind refusal`, () =>
      Effect.gen(function*() {
        const { model, server } = yield* setup([FakeOpenAi.refusal("I can't help with that.")], { stream })
        const error = yield* failureOf(model)
        expect(error).toMatchObject({ _tag: "ModelError", kind: "refusal", retryable: false })
        expect(error.reason).toContain("I can't help with that.")
        expect(server.requests).toHaveLength(1)
      }))

    it.scopedLive(`${mode}: tool arguments that are not JSON are re-asked, then malformed_tool_call`, () =>
      Effect.gen(function*() {
        const { model, server } = yield* setup([
          FakeOpenAi.toolCall("get_balance", "{\"accountId\": \"acc-1\""),
          FakeOpenAi.toolCall("get_balance", { accountId: "acc-1" }),
          FakeOpenAi.toolCall("get_balance", "{oops"),
          FakeOpenAi.toolCall("get_balance", "not json either")
        ], { stream, maxRetries: 1 })
        const fixed = yield* model.generate(request({ tools: [balanceTool] }))
        expect(fixed.message.toolCalls?.[0]?.arguments).toBe("{\"accountId\":\"acc-1\"}")
        expect(fixed.notes).toEqual([{ source: "openai", note: "retry", data: { attempt: 1, kind: "malformed_tool_call", delayMs: expect.any(Number) } }])
        const error = yield* failureOf(model, request({ tools: [balanceTool] }))
        expect(error).toMatchObject({ kind: "malformed_tool_call", retryable: true })
        expect(error.reason).toContain("get_balance")
        expect(error.reason).toContain("not json either")
        expect(error.reason).toContain("gave up after 2 attempts")
        expect(server.requests).toHaveLength(4)
      }))
  }

  it.scopedLive("structured output: response_format json_schema, strict only when the schema allows it", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeOpenAi.json({ approved: true }), FakeOpenAi.json({ approved: true })])
      const closed = {
        type: "object",
        properties: { approved: { type: "boolean" }, note: { anyOf: [{ type: "string" }, { type: "null" }] } },
        required: ["approved", "note"],
        additionalProperties: false
      }
      yield* model.generate(request({ outputFormat: { name: "output", schema: closed }, maxOutputTokens: 200 }))
      expect(bodyOf(server, 0)).toMatchObject({
        response_format: { type: "json_schema", json_schema: { name: "output", schema: closed, strict: true } },
        max_completion_tokens: 200
      })
      // An optional property (not in `required`) and minLength are outside strict mode: sent with strict false.
      const open = {
        type: "object",
        properties: { approved: { type: "boolean" }, note: { type: "string", minLength: 1 } },
        required: ["approved"],
        additionalProperties: false
      }
      yield* model.generate(request({ outputFormat: { name: "my output!", schema: open } }))
      expect(bodyOf(server, 1)).toMatchObject({
        response_format: { type: "json_schema", json_schema: { name: "my_output_", schema: open, strict: false } }
      })
      expect(bodyOf(server, 1)["max_completion_tokens"]).toBeUndefined()
    }))

  it.scopedLive("429 then success: the retry is a note, and retry-after is honoured and capped", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeOpenAi.error(429, { message: "Rate limit reached", code: "rate_limit_exceeded" }),
        FakeOpenAi.error(429, { retryAfter: "0.05" }),
        FakeOpenAi.error(429, { retryAfter: "120" }),
        FakeOpenAi.text("finally")
      ], { retryMaxDelay: "80 millis" })
      const response = yield* model.generate(request())
      expect(response.message.content).toBe("finally")
      expect(server.requests).toHaveLength(4)
      expect(response.notes).toEqual([
        { source: "openai", note: "retry", data: { attempt: 1, kind: "rate_limited", delayMs: expect.any(Number) } },
        { source: "openai", note: "retry", data: { attempt: 2, kind: "rate_limited", delayMs: 50 } },
        { source: "openai", note: "retry", data: { attempt: 3, kind: "rate_limited", delayMs: 80 } }
      ])
    }))

  it.scopedLive("500s exhaust the retries: server_error, retryable, after 1 + maxRetries attempts", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup(Array.from({ length: 4 }, () => FakeOpenAi.error(500, { message: "The server had an error" })))
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ _tag: "ModelError", kind: "server_error", retryable: true })
      expect(error.reason).toContain("The server had an error")
      expect(error.reason).toContain("gave up after 4 attempts")
      expect(server.requests).toHaveLength(4)
      expect(server.remaining()).toBe(0)
    }))

  it.scopedLive("401 is authentication, not retried, and names OPENAI_API_KEY", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeOpenAi.error(401, { message: "Incorrect API key provided" })], {
        apiKey: Redacted.make("sk-wrong")
      })
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "authentication", retryable: false })
      expect(error.reason).toContain("OPENAI_API_KEY")
      expect(error.reason).toContain("Incorrect API key provided")
      expect(server.requests).toHaveLength(1)
      expect(server.requests[0]!.headers["authorization"]).toBe("Bearer sk-wrong")
    }))

  it.scopedLive("403 is authentication too, naming the organization and the model", () =>
    Effect.gen(function*() {
      const { model } = yield* setup([FakeOpenAi.error(403, { message: "no access" })], { apiKey: Redacted.make("sk-x") })
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "authentication", retryable: false })
      expect(error.reason).toContain("organization")
      expect(error.reason).toContain("gpt-4o-mini")
    }))

  it.scopedLive("400 context_length_exceeded says to compact or use a larger model; other 400s are bad_request", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([
        FakeOpenAi.error(400, { code: "context_length_exceeded", message: "This model's maximum context length is 128000 tokens." }),
        FakeOpenAi.error(400, { code: "invalid_value", message: "Invalid value for 'temperature'" }),
        FakeOpenAi.error(404, { code: "model_not_found", message: "The model `gpt-9` does not exist" })
      ])
      const tooLong = yield* failureOf(model)
      expect(tooLong).toMatchObject({ kind: "context_length_exceeded", retryable: false })
      expect(tooLong.reason).toContain("compact")
      expect(tooLong.reason).toContain("larger context")
      const bad = yield* failureOf(model)
      expect(bad).toMatchObject({ kind: "bad_request", retryable: false })
      expect(bad.reason).toContain("temperature")
      const missing = yield* failureOf(model, request({ model: "gpt-9" }))
      expect(missing).toMatchObject({ kind: "bad_request", retryable: false })
      expect(missing.reason).toContain("OPENAI_MODEL")
      expect(server.requests).toHaveLength(3)
    }))

  it.scopedLive("429 insufficient_quota is not retried: waiting does not add credit", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeOpenAi.error(429, { code: "insufficient_quota", message: "You exceeded your current quota" })])
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "rate_limited", retryable: false })
      expect(server.requests).toHaveLength(1)
    }))

  it.scopedLive("x-should-retry from the server overrides the status: a 500 it marks final is not retried", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeOpenAi.error(503, { headers: { "x-should-retry": "false" } })])
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "server_error", retryable: false })
      expect(server.requests).toHaveLength(1)
    }))

  it.scopedLive("a hung server hits the timeout, and the socket is closed (the request is aborted)", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeOpenAi.hang], { timeout: "300 millis", maxRetries: 0 })
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "timeout", retryable: true })
      // The adapter's deadline fired (the SDK's own is a backstop a second later), and the failure says which (not the
      // wall clock: a loaded machine may take seconds over the 300 ms).
      expect(error.reason).toContain("no complete answer")
      expect(error.reason).toContain("300 ms")
      // Bounded only so that a socket never closed fails with a message rather than the test's timeout.
      yield* Effect.promise(() => server.requests[0]!.abandoned).pipe(Effect.timeoutFail({
        duration: "20 seconds",
        onTimeout: () => new Error("the server never saw the client close the connection")
      }))
    }))

  it.scopedLive("a timeout is retried like any transport fault", () =>
    Effect.gen(function*() {
      // The retry must be answered within the deadline too: 2 s, so a loaded machine's slow answer is not a second timeout.
      const { model, server } = yield* setup([FakeOpenAi.hang, FakeOpenAi.text("ok")], { timeout: "2 seconds", maxRetries: 1, stream: true })
      const response = yield* model.generate(request())
      expect(response.message.content).toBe("ok")
      expect(response.notes).toEqual([{ source: "openai", note: "retry", data: { attempt: 1, kind: "timeout", delayMs: expect.any(Number) } }])
      expect(server.requests).toHaveLength(2)
    }))

  it.scopedLive("interrupting the caller aborts the HTTP request", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeOpenAi.hang])
      const fiber = yield* Effect.fork(model.generate(request()))
      while (server.requests.length === 0) yield* Effect.sleep("5 millis")
      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      yield* Effect.promise(() => server.requests[0]!.abandoned).pipe(Effect.timeoutFail({
        duration: "20 seconds",
        onTimeout: () => new Error("the request was not aborted")
      }))
    }))

  it.scopedLive("an unreachable server is a connection error naming OPENAI_BASE_URL", () =>
    Effect.gen(function*() {
      const gone = yield* Effect.promise(() => FakeOpenAi.start([]))
      yield* Effect.promise(() => gone.close())
      const model = yield* OpenAiModel.make({ baseURL: gone.url, maxRetries: 1, retryBaseDelay: "1 millis" })
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "connection", retryable: true })
      expect(error.reason).toContain("OPENAI_BASE_URL")
      expect(error.reason).toContain("gave up after 2 attempts")
    }))

  it.effect("no API key and no baseURL fails before any request, naming OPENAI_API_KEY", () =>
    Effect.gen(function*() {
      const model = yield* OpenAiModel.make({})
      const error = yield* failureOf(model)
      expect(error).toMatchObject({ kind: "authentication", retryable: false })
      expect(error.reason).toContain("OPENAI_API_KEY")
    }))

  it.scopedLive("a server without a key gets no Authorization header; one that reports no usage gets an estimate", () =>
    Effect.gen(function*() {
      const { model, server } = yield* setup([FakeOpenAi.text("Hello, world!", { usage: null })], { stream: true })
      const response = yield* model.generate(request())
      expect(server.requests[0]!.headers["authorization"]).toBeUndefined()
      // 3 + 1 + "Be brief." (3) + 3 + 1 + "Hi" (1) + 3 = 15 prompt tokens; "Hello, world!" is 4 tokens (o200k_base).
      expect(response.usage).toEqual({ inputTokens: 15, outputTokens: 4 })
      expect(response.notes).toEqual([{ source: "openai", note: "usage_estimated", data: { inputTokens: 15, outputTokens: 4 } }])
    }))

  it.scopedLive("a reply cut off by the token limit is noted as truncated", () =>
    Effect.gen(function*() {
      const { model } = yield* setup([FakeOpenAi.text("The answer is", { finishReason: "length" })])
      const response = yield* model.generate(request({ maxOutputTokens: 3 }))
      expect(response.notes).toEqual([{ source: "openai", note: "truncated", data: { finishReason: "length", maxOutputTokens: 3 } }])
    }))
})

describe("OpenAiModel.layer and layerConfig", () => {
  it.scopedLive("layer provides ModelPort and OpenAiClient (the SDK client, its own retries off)", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("hi")])
      const context = yield* Layer.build(OpenAiModel.layer({ baseURL: server.url, defaultModel: "llama3.2" }))
      const port = yield* Effect.provide(ModelPort.ModelPort, context)
      const { baseURL, client } = yield* Effect.provide(OpenAiModel.OpenAiClient, context)
      expect(port.defaultModel).toBe("llama3.2")
      expect(baseURL).toBe(server.url)
      expect(client.maxRetries).toBe(0)
      const response = yield* port.generate(request({ model: port.defaultModel }))
      expect(response).toMatchObject({ model: "llama3.2", message: { content: "hi" } })
    }))

  it.scopedLive("layerConfig reads OPENAI_BASE_URL, OPENAI_MODEL and OPENAI_API_KEY (sent, never logged)", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("from env")])
      const env = ConfigProvider.fromMap(new Map([
        ["OPENAI_BASE_URL", server.url],
        ["OPENAI_MODEL", "qwen2.5"],
        ["OPENAI_API_KEY", "sk-env"]
      ]))
      const layer = OpenAiModel.layerConfig({ stream: Config.succeed(true) }).pipe(Layer.provide(Layer.setConfigProvider(env)))
      const port = yield* Effect.provide(ModelPort.ModelPort, layer)
      const response = yield* port.generate(request({ model: port.defaultModel }))
      expect(response).toMatchObject({ model: "qwen2.5", message: { content: "from env" } })
      expect(bodyOf(server, 0)).toMatchObject({ model: "qwen2.5", stream: true })
      expect(server.requests[0]!.headers["authorization"]).toBe("Bearer sk-env")
    }))

  it.effect("layerConfig without OPENAI_API_KEY nor OPENAI_BASE_URL is a ConfigError that says what to set", () =>
    Effect.gen(function*() {
      const layer = OpenAiModel.layerConfig().pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))))
      const result = yield* Effect.either(Effect.provide(ModelPort.ModelPort, layer))
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(String(result.left)).toContain("OPENAI_API_KEY")
        expect(String(result.left)).toContain("OPENAI_BASE_URL")
      }
    }))
})
