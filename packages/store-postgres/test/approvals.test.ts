// Two approvers deciding one pending tool call at the same time on PostgreSQL, each through a pool of its own (as two
// processes would): PostgreSQL's one-statement append checks the head, so exactly one decision is written.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Effect, Either, Schema } from "effect"
import { Artana, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))
const tenant = { tenantId: "acme", budgetUsdLimit: 1 }

const makeClient = (url: string, calls: Array<unknown>) => {
  const wire = Tool.make({
    name: "wire",
    description: "Wires money",
    parameters: Schema.Struct({ amount: Schema.Number }),
    needsApproval: true,
    handler: (args) =>
      Effect.sync(() => {
        calls.push(args)
        return "sent"
      })
  })
  const pay = Workflow.make({
    name: "pay",
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.Unknown,
    run: ({ amount }, ctx) => ctx.tool(wire, { amount })
  })
  return { pay, client: Artana.create({ store: PostgresStore.layer({ url }), model: ScriptedModel.layer([]), tools: [wire], workflows: [pay] }) }
}

describe.skipIf(pg.url === undefined)(`approvals on PostgreSQL (${pg.description})`, () => {
  it.live("two approvers at once, on two pools: exactly one decision is written, and the call runs at most once", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const calls: Array<unknown> = []
      const first = makeClient(url, calls)
      const second = makeClient(url, calls)
      for (let round = 0; round < 5; round++) {
        const runId = `wire-${round}`
        const paused = yield* Effect.promise(() => first.client.run(first.pay, { runId, tenant, input: { amount: 100 + round } }))
        const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
        const [a, b] = yield* Effect.all([
          Effect.either(Effect.tryPromise(() => first.client.decide({ tenantId: "acme", approvalId, approver: "alice", decision: "approve" }))),
          Effect.either(Effect.tryPromise(() => second.client.decide({ tenantId: "acme", approvalId, approver: "bob", decision: "reject", reason: "no" })))
        ], { concurrency: "unbounded" })
        expect([a, b].filter(Either.isRight)).toHaveLength(1)
        const loser = [a, b].find(Either.isLeft)!
        expect(Either.isLeft(loser) && String(loser.left.error)).toContain("is not pending")
        const events = yield* Effect.promise(() => first.client.readEvents({ tenantId: "acme", runId }))
        const decisions = events.filter((e) => e.payload._tag === "ApprovalDecided")
        expect(decisions).toHaveLength(1)
        // The run goes on with the one decision: the approved call runs once; a rejected one fails the direct call.
        const decided = decisions[0]!.payload
        const before = calls.length
        const done = yield* Effect.either(Effect.tryPromise(() => first.client.resume({ tenantId: "acme", runId, workflow: first.pay })))
        if (decided._tag === "ApprovalDecided" && decided.decision === "approved") {
          expect(done).toEqual(Either.right({ status: "completed", runId, output: "sent" }))
          expect(calls.length).toBe(before + 1)
        } else {
          expect(Either.isLeft(done) && String(done.left.error)).toContain("was rejected by bob: no")
          expect(calls.length).toBe(before)
        }
      }
      yield* Effect.promise(() => Promise.all([first.client.close(), second.client.close()]))
    }).pipe(Effect.scoped), 120_000)
})
