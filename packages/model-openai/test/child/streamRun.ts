// The run of the streaming crash test, shared by the test and its child process.
import { Chat, Tenant, Workflow } from "@artana/core"
import { Effect, Schema } from "effect"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** Chats once, then waits for a person: the run stays live, so its deltas are kept. */
export const chatThenPause = Workflow.make({
  name: "chat-then-pause",
  input: Schema.String,
  output: Schema.String,
  run: (prompt, ctx) =>
    Effect.gen(function*() {
      const reply = yield* ctx.chat({ messages: [Chat.user(prompt)] })
      yield* ctx.pauseForHuman({ reason: "check the answer" })
      return reply.output
    })
})
