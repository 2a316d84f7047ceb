// Approvals on PostgreSQL: two approvers deciding one pending tool call at the same time, each through a pool of its
// own (as two processes would): PostgreSQL's one-statement append checks the head, so exactly one decision is
// written. And the inbox through the client: longest waiting first, pages with a cursor, filters.
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

  it.live("the inbox is longest waiting first and pages with a cursor through every approval once; its filters hold across pages", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const { client, pay } = makeClient(url, [])
      const ms = (n: number) => Effect.promise(() => new Promise<void>((r) => setTimeout(r, n)))
      // Paused in an order their ids do not sort in: the inbox follows the pauses.
      const order = ["b-first", "c-second", "a-third", "d-fourth"]
      for (const runId of order) {
        expect((yield* Effect.promise(() => client.run(pay, { runId, tenant, input: { amount: 100 } }))).status).toBe("paused")
        yield* ms(3)
      }
      const all = yield* Effect.promise(() => client.approvals({ tenantId: "acme" }))
      expect(all.map((p) => p.runId)).toEqual(order)
      expect(all.map((p) => p.requestedAt)).toEqual([...all.map((p) => p.requestedAt)].sort((a, b) => a - b))
      for (const limit of [1, 3]) {
        const seen: Array<string> = []
        let after: string | undefined
        let pages = 0
        do {
          const page = yield* Effect.promise(() => client.approvalsPage({ tenantId: "acme", limit, ...(after === undefined ? {} : { after }) }))
          seen.push(...page.approvals.map((p) => p.runId))
          after = page.next
          pages++
        } while (after !== undefined)
        expect(seen).toEqual(order)
        expect(pages).toBe(Math.ceil(order.length / limit))
      }
      // Decided: out of the inbox; the next page starts where the cursor says, with nothing seen twice.
      const [first] = all
      yield* Effect.promise(() => client.decide({ tenantId: "acme", approvalId: first!.approvalId, approver: "alice", decision: "approve" }))
      const page = yield* Effect.promise(() => client.approvalsPage({ tenantId: "acme", tool: "wire", limit: 2 }))
      expect(page.approvals.map((p) => p.runId)).toEqual(["c-second", "a-third"])
      const rest = yield* Effect.promise(() => client.approvalsPage({ tenantId: "acme", tool: "wire", after: page.next }))
      expect(rest).toMatchObject({ approvals: [{ runId: "d-fourth" }] })
      expect(rest.next).toBeUndefined()
      expect(yield* Effect.promise(() => client.approvalsPage({ tenantId: "acme", olderThan: "1 hour" }))).toEqual({ approvals: [] })
      expect(yield* Effect.promise(() => client.approvalsPage({ tenantId: "other" }))).toEqual({ approvals: [] })
      const bad = yield* Effect.promise(() => client.approvalsPage({ tenantId: "acme", after: "nope" }).then(() => "resolved", (e: { _tag: string }) => e._tag))
      expect(bad).toBe("InvalidInput")
      yield* Effect.promise(() => client.close())
    }).pipe(Effect.scoped), 120_000)

  it.live("a signal sent to a run waiting for approval moves neither its place in the inbox nor its age", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const { client, pay } = makeClient(url, [])
      const ms = (n: number) => Effect.promise(() => new Promise<void>((r) => setTimeout(r, n)))
      expect((yield* Effect.promise(() => client.run(pay, { runId: "first", tenant, input: { amount: 100 } }))).status).toBe("paused")
      yield* ms(20)
      expect((yield* Effect.promise(() => client.run(pay, { runId: "second", tenant, input: { amount: 200 } }))).status).toBe("paused")
      const [asked] = yield* Effect.promise(() => client.approvals({ tenantId: "acme", runId: "second" }))
      yield* ms(200)
      yield* Effect.promise(() => client.signal({ tenantId: "acme", runId: "first", name: "note", payload: { text: "any news?" } }))
      const events = yield* Effect.promise(() => client.readEvents({ tenantId: "acme", runId: "first" }))
      expect(events.at(-1)?.type).toBe("SignalSent")
      expect((yield* Effect.promise(() => client.approvals({ tenantId: "acme" }))).map((p) => p.runId)).toEqual(["first", "second"])
      const old = yield* Effect.promise(() => client.approvalsPage({ tenantId: "acme", olderThan: `${Date.now() - asked!.requestedAt} millis` }))
      expect(old.approvals.map((p) => p.runId)).toEqual(["first", "second"])
      yield* Effect.promise(() => client.close())
    }).pipe(Effect.scoped), 120_000)
})

