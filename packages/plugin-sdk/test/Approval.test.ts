// A plugin tool that waits for approval: its predicate runs with none of the host's services, the pause and the
// decision go through the real kernel, and an edit is checked against the tool's raw JSON Schema (Ajv).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Artana, EventStore } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { defineTool } from "@artana/plugin-sdk"

const tenant = { tenantId: "acme", budgetUsdLimit: 1 }

describe("defineTool({ needsApproval })", () => {
  it.effect("a call the predicate flags pauses for approval; an edit Ajv refuses writes nothing; an approved one runs", () =>
    Effect.gen(function*() {
      const calls: Array<unknown> = []
      const sawHost: Array<boolean> = []
      const payout = defineTool<{ readonly amount: number }>({
        name: "bank.payout",
        description: "Pays out",
        parameters: { type: "object", properties: { amount: { type: "number", exclusiveMinimum: 0 } }, required: ["amount"] },
        needsApproval: ({ amount }) =>
          Effect.map(Effect.serviceOption(EventStore.EventStore), (store) => {
            sawHost.push(Option.isSome(store))
            return amount > 1000
          }),
        approvers: ["treasurer"],
        handler: (args) => Effect.sync(() => calls.push(args))
      })
      const model = ScriptedModel.layer([
        ScriptedModel.toolCall("bank.payout", { amount: 10 }),
        ScriptedModel.toolCall("bank.payout", { amount: 5000 }),
        ScriptedModel.text("paid")
      ])
      const program = Effect.gen(function*() {
        const paused = yield* Artana.chat({ runId: "p-1", tenant, prompt: "Pay", tools: [payout] })
        expect(paused).toMatchObject({ status: "paused", approval: { tool: "bank.payout", arguments: '{"amount":5000}', approvers: ["treasurer"] } })
        expect(calls).toEqual([{ amount: 10 }])
        expect(sawHost).toEqual([false, false])
        const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
        const head = (yield* Artana.getRun({ tenantId: "acme", runId: "p-1" })).headSeq
        const refused = yield* Effect.flip(Artana.decide({ tenantId: "acme", approvalId, approver: "treasurer", decision: "approve", arguments: { amount: 0 }, tool: payout }))
        expect(refused).toMatchObject({ _tag: "InvalidToolArguments", path: "$.amount" })
        expect((yield* Artana.getRun({ tenantId: "acme", runId: "p-1" })).headSeq).toBe(head)
        const decided = yield* Artana.decide({ tenantId: "acme", approvalId, approver: "treasurer", decision: "approve", arguments: { amount: 4000 }, tool: payout })
        expect(decided).toMatchObject({ decision: "approved", arguments: '{"amount":4000}', runId: "p-1" })
        expect(calls).toEqual([{ amount: 10 }])
        // A chat run goes on when the same chat is run again under its id (the workflow of a chat is its options).
        const done = yield* Artana.chat({ runId: "p-1", tenant, prompt: "Pay", tools: [payout] })
        expect(done).toMatchObject({ status: "completed", output: "paid" })
        expect(calls).toEqual([{ amount: 10 }, { amount: 4000 }])
      })
      yield* Effect.provide(program, Layer.merge(Artana.layer({ model, tools: [payout] }), model))
    }))
})
