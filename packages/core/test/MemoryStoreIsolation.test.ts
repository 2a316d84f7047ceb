// The in-memory store keeps what the kernel hashed, not the code's live values (found in review).
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Effect, Either, Layer, Schema } from "effect"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

describe("the in-memory store and mutable values", () => {
  it.effect("a workflow that keeps appending to the message array it gave a model step does not make its own log 'tampered'", () => {
    const chatty = Workflow.make({
      name: "chatty",
      input: Schema.Null,
      output: Schema.String,
      run: (_i, ctx) =>
        Effect.gen(function*() {
          // The usual pattern: one history array, grown as the conversation goes.
          const history: Array<Chat.ChatMessage> = [Chat.user("hello")]
          const first = yield* ctx.modelStep({ messages: history, key: "m0" })
          history.push(first.message, Chat.user("and then?"))
          yield* ctx.pauseForHuman({ reason: "look", key: "p" })
          return "done"
        })
    })
    const layer = Layer.provideMerge(Kernel.layer({ workflows: [chatty] }), Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([ScriptedModel.text("hi")]), ToolRegistry.layer([])))
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(chatty, { runId: "c", tenant, input: null })).status).toBe("paused")
      const read = yield* Effect.either(kernel.readEvents({ tenantId: "acme", runId: "c" }))
      const report = yield* kernel.verify({ tenantId: "acme", runId: "c" })
      expect({ read: Either.isRight(read) ? "ok" : read.left._tag, verify: report.ok }).toEqual({ read: "ok", verify: true })
    }).pipe(Effect.provide(layer))
  })

  it.effect("a caller that edits the events kernel.readEvents returned (redacting them for display) does not edit the stored log", () => {
    const w = Workflow.make({
      name: "w",
      input: Schema.Null,
      output: Schema.String,
      run: (_i, ctx) =>
        Effect.gen(function*() {
          yield* ctx.step("secret", Effect.succeed("s3cr3t"), Schema.String, { key: "s" })
          yield* ctx.pauseForHuman({ reason: "look", key: "p" })
          return "done"
        })
    })
    const layer = Layer.provideMerge(Kernel.layer({ workflows: [w] }), Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([]), ToolRegistry.layer([])))
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(w, { runId: "r", tenant, input: null })
      const events = yield* kernel.readEvents({ tenantId: "acme", runId: "r" })
      for (const e of events) if (e.payload._tag === "StepCompleted") (e.payload as { value: unknown }).value = "[redacted]"
      const resumed = yield* Effect.either(kernel.resume({ tenantId: "acme", runId: "r", response: null }))
      expect(Either.isRight(resumed) ? resumed.right.status : (resumed.left as { _tag: string })._tag).toBe("completed")
    }).pipe(Effect.provide(layer))
  })
})
