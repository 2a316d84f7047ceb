import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { Chat, Errors, EventStore, Kernel, type Middleware } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, makeTools, tenant } from "./fixtures.js"

const order: Array<string> = []
const tracer = (name: string): Middleware.Interceptor => ({
  name,
  beforeModel: (request, ctx) =>
    Effect.gen(function*() {
      order.push(`${name}:beforeModel`)
      yield* ctx.note(name, "seen", { messages: request.messages.length })
      return request
    }),
  afterModel: (_request, response) => Effect.sync(() => (order.push(`${name}:afterModel`), response))
})

const redactor: Middleware.Interceptor = {
  name: "redactor",
  beforeModel: (request) =>
    Effect.succeed({
      ...request,
      messages: request.messages.map((m) => (m.role === "user" ? { ...m, content: m.content.replaceAll("secret", "[REDACTED]") } : m))
    })
}

const denyTransfers: Middleware.Interceptor = {
  name: "no-notify",
  beforeTool: (call) =>
    call.tool === "notify" ? Effect.fail(new Errors.PolicyDenied({ tool: call.tool, reason: "notifications are off" })) : Effect.succeed(call)
}

describe("Middleware", () => {
  it.effect("runs before hooks in order and after hooks in reverse; notes land in the log", () =>
    Effect.gen(function*() {
      order.length = 0
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "mw-1", tenant, messages: [Chat.user("hi")] })
      expect(order).toEqual(["a:beforeModel", "b:beforeModel", "b:afterModel", "a:afterModel"])
      const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, "mw-1"))
      expect(events.map((e) => e.type)).toEqual(["RunStarted", "ModelRequested", "MiddlewareNote", "MiddlewareNote", "ModelCompleted", "RunCompleted"])
      expect(events[2]!.stepKey).toBe("model:0")
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("hello")], [], { middleware: [tracer("a"), tracer("b")] }))))

  it.effect("what is logged is what was sent: a rewriting middleware's output reaches the model and the log", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      yield* kernel.chat({ runId: "mw-2", tenant, messages: [Chat.user("my secret is 42")] })
      expect(scripted.requests()[0]!.messages[0]!.content).toBe("my [REDACTED] is 42")
      const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, "mw-2"))
      const requested = events.find((e) => e.payload._tag === "ModelRequested")!.payload
      expect(JSON.stringify(requested)).not.toContain("secret")
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("ok")], [], { middleware: [redactor] }))))

  it.effect("a tool call a middleware denies is logged as PolicyDenied with the middleware's name and never runs", () => {
    const tools = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "mw-3", tenant, messages: [Chat.user("tell bob")] })
      expect(tools.counter.calls).toEqual([])
      const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, "mw-3"))
      const denied = events.find((e) => e.payload._tag === "PolicyDenied")!.payload
      expect(denied).toMatchObject({ tool: "notify", middleware: "no-notify", reason: "notifications are off" })
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.toolCall("notify", { text: "hi bob" }), ScriptedModel.text("could not")], tools.all, { middleware: [denyTransfers] })))
  })

  it.effect("a middleware failing with BudgetExceeded stops the run", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* Effect.either(kernel.chat({ runId: "mw-4", tenant, messages: [Chat.user("x")] }))
      expect(Either.isLeft(result) && result.left._tag).toBe("BudgetExceeded")
      const run = yield* Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "mw-4"))
      expect(run.status).toBe("failed")
    }).pipe(Effect.provide(kernelLayer([], [], {
      middleware: [{
        name: "quota",
        beforeModel: (_r, ctx) => Effect.fail(new Errors.BudgetExceeded({ runId: ctx.runId, limitUsd: 0, spentUsd: 0 }))
      }]
    }))))
})
