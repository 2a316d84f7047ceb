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
})
