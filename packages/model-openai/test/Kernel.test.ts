import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Chat, EventStore, Kernel, Tenant, Tool, ToolRegistry } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { bodyOf } from "./fixtures.js"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit: 1 })

const Decision = Schema.Struct({ approved: Schema.Boolean, reason: Schema.String })


let reads = 0
const fsRead = Tool.make({
  name: "fs.read",
  description: "Reads a file",
  parameters: Schema.Struct({ path: Schema.String }),
  handler: ({ path }) => Effect.sync(() => (reads++, `contents of ${path}`))
})

const getBalance = Tool.make({
  name: "get_balance",
  description: "Balance of an account in USD",
  parameters: Schema.Struct({ accountId: Schema.String }),
  success: Schema.Struct({ accountId: Schema.String, balance: Schema.Number }),
  requiresCapability: "finance:read",
  idempotent: true,
  handler: ({ accountId }) => Effect.succeed({ accountId, balance: 1200 })
})

/** A kernel over the real adapter, talking HTTP to `server`, with an in-memory log. */
const kernelLayer = (server: FakeOpenAi.Server) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(
      OpenAiModel.layer({ baseURL: server.url, retryBaseDelay: "1 millis" }),
      EventStore.layerMemory,
      ToolRegistry.layer([getBalance, fsRead])
    )
  )

const eventsOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))

describe("Kernel.chat over OpenAiModel", () => {
  it.scopedLive("tool names the API refuses (fs.read) travel renamed and come back under their own name", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.toolCall("fs_read", { path: "notes.txt" }, { id: "call_1" }),
        FakeOpenAi.text("done")
      ])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.chat({ runId: "dotted", tenant, messages: [Chat.user("read notes.txt")], tools: ["fs.read"] })
        expect(result.status).toBe("completed")
        expect(reads).toBe(1)
        expect(bodyOf(server, 0)["tools"]).toEqual([{ type: "function", function: { ...fsRead.spec, name: "fs_read" } }])
        // The assistant's earlier call is sent back renamed, so the conversation stays consistent.
        expect(JSON.stringify(bodyOf(server, 1)["messages"])).toContain('"name":"fs_read"')
        const requested = (yield* eventsOf("dotted")).find((e) => e.payload._tag === "ToolRequested")!.payload
        expect(requested).toMatchObject({ tool: "fs.read" })
      }).pipe(Effect.provide(kernelLayer(server)))
    }))


  it.scopedLive("model -> tool -> model with a JSON-schema output, decoded and logged", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.toolCall("get_balance", { accountId: "acc-1" }, { id: "call_1" }),
        FakeOpenAi.json({ approved: true, reason: "balance 1200" })
      ])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.chat({ runId: "chat-1", tenant, messages: [Chat.user("Can acc-1 afford 100?")], outputSchema: Decision, tools: ["get_balance"] })
        expect(result.status).toBe("completed")
        if (result.status !== "completed") return
        expect(result.output.output).toEqual({ approved: true, reason: "balance 1200" })
        expect(result.output.usage).toEqual({ inputTokens: 20, outputTokens: 10, cachedInputTokens: 0 })

        const first = bodyOf(server, 0)
        expect(first["tools"]).toEqual([{ type: "function", function: getBalance.spec }])
        expect(first["response_format"]).toMatchObject({
          type: "json_schema",
          json_schema: { name: "output", strict: true, schema: { type: "object", required: ["approved", "reason"], additionalProperties: false } }
        })
        const second = bodyOf(server, 1)
        expect(second["messages"]).toEqual([
          { role: "user", content: "Can acc-1 afford 100?" },
          { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_balance", arguments: "{\"accountId\":\"acc-1\"}" } }] },
          { role: "tool", tool_call_id: "call_1", content: "{\"accountId\":\"acc-1\",\"balance\":1200}" }
        ])
        expect((yield* eventsOf("chat-1")).map((e) => e.type)).toEqual([
          "RunStarted", "ModelRequested", "ModelCompleted", "ToolRequested", "ToolCompleted",
          "ModelRequested", "ModelCompleted", "RunCompleted"
        ])
      }).pipe(Effect.provide(kernelLayer(server)))
    }))

  it.scopedLive("a 429 retried by the adapter is written into the run's log as a MiddlewareNote", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.error(429, { retryAfter: "0.01" }), FakeOpenAi.text("done")])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.chat({ runId: "retry-1", tenant, messages: [Chat.user("hi")] })
        expect(result.status === "completed" && result.output.output).toBe("done")
        const events = yield* eventsOf("retry-1")
        expect(events.map((e) => e.type)).toEqual(["RunStarted", "ModelRequested", "MiddlewareNote", "ModelCompleted", "RunCompleted"])
        expect(events[2]!.payload).toEqual({
          _tag: "MiddlewareNote",
          middleware: "openai",
          note: "retry",
          data: { attempt: 1, kind: "rate_limited", delayMs: 10 }
        })
        expect(server.requests).toHaveLength(2)
      }).pipe(Effect.provide(kernelLayer(server)))
    }))

  it.scopedLive("a model failure the adapter cannot fix fails the run with its kind in the log", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.error(401, { message: "Incorrect API key provided" })])
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* Effect.either(kernel.chat({ runId: "auth-1", tenant, messages: [Chat.user("hi")] }))
        expect(Either.isLeft(result) && result.left._tag).toBe("ModelError")
        const failed = (yield* eventsOf("auth-1")).find((e) => e.type === "ModelFailed")
        expect(failed?.payload).toMatchObject({ _tag: "ModelFailed", kind: "authentication" })
      }).pipe(Effect.provide(kernelLayer(server)))
    }))
})
