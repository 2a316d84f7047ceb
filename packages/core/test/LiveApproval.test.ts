// Approvals in a run's live stream, in one process: the pending approval is an `ApprovalPending` event in the middle
// of the streamed turn that asked for it, and a reader that reconnects at its offset gets the decision (with the
// edited arguments), the tool, the next turn and the end. (Across a SIGKILL: model-openai/test/LiveApprovalCrash.)
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Schema, Stream } from "effect"
import { Kernel, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, tenant } from "./fixtures.js"

const transfer = Tool.make({
  name: "transfer_funds",
  description: "Moves money",
  parameters: Schema.Struct({ to: Schema.String, amount: Schema.Number }),
  needsApproval: true,
  handler: ({ amount, to }) => Effect.succeed(`sent ${amount} to ${to}`)
})

const pay = Workflow.make({
  name: "pay",
  input: Schema.String,
  output: Schema.String,
  run: (prompt, ctx) => Effect.map(ctx.chat({ prompt, tools: [transfer] }), (r) => r.output)
})

const script = [
  ScriptedModel.toolCall("transfer_funds", { to: "acc-2", amount: 500 }, { content: "Moving it now.", deltas: 3 }),
  ScriptedModel.text("Moved 250.", { deltas: 2 })
]

describe("approvals in the live stream", () => {
  it.effect("ApprovalPending inside the streamed turn; a reconnect at its offset gets the edited decision and the rest", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const run = { tenantId: tenant.tenantId, runId: "pay-1" }
      const paused = yield* kernel.execute(pay, { runId: run.runId, tenant, input: "Pay acc-2." })
      expect(paused.status).toBe("paused")
      const before = Chunk.toReadonlyArray(yield* kernel.live(run).pipe(Stream.takeUntil((e) => e._tag === "ApprovalPending"), Stream.runCollect))
      expect(before.map((e) => e._tag)).toEqual(["Logged", "ModelStreamStarted", "TextDelta", "TextDelta", "TextDelta", "ToolCallDelta", "ToolCallDelta", "ToolCallDelta", "Logged", "ModelCompleted", "ApprovalPending"])
      const pending = before[before.length - 1]!
      if (pending._tag !== "ApprovalPending") return
      expect(pending).toMatchObject({ tool: "transfer_funds", arguments: '{"to":"acc-2","amount":500}' })
      const reader = yield* Effect.fork(kernel.live(run, { after: pending.offset }).pipe(Stream.takeUntil((e) => e._tag === "Completed"), Stream.runCollect))
      yield* kernel.decideApproval({ tenantId: run.tenantId, approvalId: pending.approvalId, approver: "ann", decision: "approve", arguments: { to: "acc-2", amount: 250 } })
      expect(yield* kernel.resume({ ...run, workflow: pay })).toMatchObject({ status: "completed", output: "Moved 250." })
      const after = Chunk.toReadonlyArray(yield* reader)
      expect(after[0]).toMatchObject({ _tag: "ApprovalDecided", approvalId: pending.approvalId, decision: "approved", by: "ann", arguments: '{"to":"acc-2","amount":250}' })
      expect(after.find((e) => e._tag === "ToolCompleted")).toMatchObject({ tool: "transfer_funds", result: "sent 250 to acc-2" })
      expect(after[after.length - 1]?._tag).toBe("Completed")
    }).pipe(Effect.provide(kernelLayer(script, [transfer], { kernel: { workflows: [pay] } }))))

  it.effect("ApprovalPending names who may approve: the tool's approvers, or none (any approver of the tenant)", () => {
    const wire = Tool.make({
      name: "wire_funds",
      description: "Moves money abroad",
      parameters: Schema.Struct({ to: Schema.String, amount: Schema.Number }),
      needsApproval: true,
      approvers: ["ann", "bo"],
      handler: ({ amount, to }) => Effect.succeed(`wired ${amount} to ${to}`)
    })
    const both = Workflow.make({
      name: "both",
      input: Schema.String,
      output: Schema.String,
      run: (prompt, ctx) => Effect.map(ctx.chat({ prompt, tools: [wire, transfer] }), (r) => r.output)
    })
    const pendingOf = (kernel: Kernel.Service, runId: string) =>
      kernel.live({ tenantId: tenant.tenantId, runId }).pipe(
        Stream.takeUntil((e) => e._tag === "ApprovalPending"),
        Stream.runCollect,
        Effect.map((events) => Chunk.toReadonlyArray(events).find((e) => e._tag === "ApprovalPending"))
      )
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(both, { runId: "wire-1", tenant, input: "Wire it." })).status).toBe("paused")
      expect((yield* kernel.execute(both, { runId: "pay-2", tenant, input: "Pay it." })).status).toBe("paused")
      expect(yield* pendingOf(kernel, "wire-1")).toMatchObject({ _tag: "ApprovalPending", tool: "wire_funds", approvers: ["ann", "bo"] })
      const anyone = yield* pendingOf(kernel, "pay-2")
      expect(anyone).toMatchObject({ _tag: "ApprovalPending", tool: "transfer_funds" })
      expect(anyone !== undefined && "approvers" in anyone).toBe(false)
      // A reconnect at an offset before it gets the same event.
      const again = yield* kernel.live({ tenantId: tenant.tenantId, runId: "wire-1" }, { after: "1" }).pipe(
        Stream.takeUntil((e) => e._tag === "ApprovalPending"),
        Stream.runLast
      )
      expect(again).toMatchObject({ _tag: "Some", value: { approvers: ["ann", "bo"] } })
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("wire_funds", { to: "acc-9", amount: 5 }),
      ScriptedModel.toolCall("transfer_funds", { to: "acc-2", amount: 7 })
    ], [wire, transfer])))
  })
})
