// Per-tool approvals in the kernel (the SQLite and PostgreSQL stores, processes and races are tested in their
// packages): the pending approval records the arguments after the `beforeTool` middleware, its notes before it; a
// predicate that fails asks for approval; an edit passes the middleware again; a response is no decision.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Chat, Errors, EventStore, Kernel, type Middleware, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, tenant } from "./fixtures.js"

const sent: Array<unknown> = []
const send = Tool.make({
  name: "send",
  description: "Sends a message",
  parameters: Schema.Struct({ to: Schema.String, text: Schema.String }),
  // Fails for the address it cannot judge: the call then waits for a person (fail closed).
  needsApproval: ({ to }) => (to === "?" ? Effect.fail("cannot tell") : Effect.succeed(to.endsWith("@external.example"))),
  handler: (args) =>
    Effect.sync(() => {
      sent.push(args)
      return "sent"
    })
})

/** Puts the real address back for `<ADDR>` (as the PII middleware restores its placeholders), and says so in a note. */
const restore: Middleware.Interceptor = {
  name: "restore",
  beforeTool: (call, ctx) =>
    call.arguments.includes("<ADDR>")
      ? Effect.as(ctx.note("restore", "restored", { count: 1 }), { ...call, arguments: call.arguments.replace("<ADDR>", "bob@external.example") })
      : Effect.succeed(call)
}

const notify = Workflow.make({
  name: "notify",
  input: Schema.Struct({ to: Schema.String }),
  output: Schema.String,
  run: ({ to }, ctx) => Effect.map(ctx.tool(send, { to, text: "hello" }), (r) => String(r))
})

const layer = () => kernelLayer([ScriptedModel.toolCall("send", { to: "<ADDR>", text: "hi" }), ScriptedModel.text("done")], [send], {
  middleware: [restore],
  kernel: { workflows: [notify] }
})

describe("per-tool approvals in the kernel", () => {
  it.effect("the approval holds the arguments after the middleware, its notes before it; an edit passes the middleware again", () =>
    Effect.gen(function*() {
      sent.length = 0
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const paused = yield* kernel.chat({ runId: "c-1", tenant, messages: [Chat.user("say hi to bob")], tools: [send] })
      expect(paused).toMatchObject({ status: "paused", approval: { tool: "send", arguments: '{"to":"bob@external.example","text":"hi"}', stepKey: "tool:1" } })
      const events = yield* store.readEvents(tenant.tenantId, "c-1")
      expect(events.slice(-2).map((e) => [e.type, e.stepKey])).toEqual([["MiddlewareNote", "tool:1"], ["ApprovalRequested", "tool:1"]])
      const [pending] = yield* kernel.approvals({ tenantId: tenant.tenantId })
      expect(pending).toMatchObject({ runId: "c-1", workflow: "artana.chat", tool: "send" })
      // An edit with a placeholder again: the middleware restores it when the call runs, and notes it in the call's batch.
      yield* kernel.decideApproval({ tenantId: tenant.tenantId, approvalId: pending!.approvalId, approver: "ops", decision: "approve", arguments: { to: "<ADDR>", text: "hi there" } })
      const done = yield* kernel.chat({ runId: "c-1", tenant, messages: [Chat.user("say hi to bob")], tools: [send] })
      expect(done.status).toBe("completed")
      expect(sent).toEqual([{ to: "bob@external.example", text: "hi there" }])
      const after = (yield* store.readEvents(tenant.tenantId, "c-1")).filter((e) => e.stepKey === "tool:1").map((e) => e.type)
      expect(after).toEqual(["MiddlewareNote", "ApprovalRequested", "ApprovalDecided", "ToolRequested", "MiddlewareNote", "ToolCompleted"])
    }).pipe(Effect.provide(layer())))

  it.effect("a predicate that fails asks for approval; a response meant for a pause is refused; a decision resumes", () =>
    Effect.gen(function*() {
      sent.length = 0
      const kernel = yield* Kernel.Kernel
      expect(yield* kernel.execute(notify, { runId: "n-1", tenant, input: { to: "ann@internal.example" } })).toMatchObject({ status: "completed" })
      const paused = yield* kernel.execute(notify, { runId: "n-2", tenant, input: { to: "?" } })
      expect(paused).toMatchObject({ status: "paused", approval: { tool: "send" } })
      expect(yield* Effect.flip(kernel.resume({ tenantId: tenant.tenantId, runId: "n-2", response: { ok: true } }))).toBeInstanceOf(Errors.InvalidRunState)
      expect(yield* kernel.resume({ tenantId: tenant.tenantId, runId: "n-2" })).toEqual(paused)
      const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
      yield* kernel.decideApproval({ tenantId: tenant.tenantId, approvalId, approver: "ops", decision: "reject", reason: "unknown address" })
      const failed = yield* Effect.flip(kernel.resume({ tenantId: tenant.tenantId, runId: "n-2", workflow: notify }))
      expect(failed).toMatchObject({ _tag: "ApprovalRejected", tool: "send", approver: "ops", reason: "unknown address" })
      expect(sent).toEqual([{ to: "ann@internal.example", text: "hello" }])
      // Replay: the same failure, from the log.
      expect(yield* Effect.flip(kernel.replay(notify, { tenantId: tenant.tenantId, runId: "n-2" }))).toMatchObject({ _tag: "ApprovalRejected" })
    }).pipe(Effect.provide(layer())))
})

describe("approvals and signals", () => {
  it.effect("a signal sent to a run waiting for approval leaves the approval pending, listed and decidable", () =>
    Effect.gen(function*() {
      sent.length = 0
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(notify, { runId: "s-1", tenant, input: { to: "?" } })
      const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
      // A steering message (or any signal) arrives while the call waits for a person.
      yield* kernel.signal({ tenantId: tenant.tenantId, runId: "s-1", name: "note", payload: { text: "hurry" } })
      expect((yield* kernel.approvals({ tenantId: tenant.tenantId, runId: "s-1" })).map((a) => a.approvalId)).toEqual([approvalId])
      expect(yield* kernel.resume({ tenantId: tenant.tenantId, runId: "s-1" })).toEqual(paused)
      yield* kernel.decideApproval({ tenantId: tenant.tenantId, approvalId, approver: "ops", decision: "approve" })
      expect(yield* kernel.resume({ tenantId: tenant.tenantId, runId: "s-1", workflow: notify })).toMatchObject({ status: "completed", output: "sent" })
      expect(sent).toEqual([{ to: "?", text: "hello" }])
      expect(yield* kernel.replay(notify, { tenantId: tenant.tenantId, runId: "s-1" })).toMatchObject({ status: "completed", output: "sent" })
    }).pipe(Effect.provide(layer())))
})
