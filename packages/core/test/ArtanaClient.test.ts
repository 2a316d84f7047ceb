import { describe, expect, it } from "vitest"
import { Effect, Schema } from "effect"
import { Artana, Tool, Workflow } from "@artana/core"
import { ScriptedModel, TestLog } from "@artana/core/testing"

const acme = { tenantId: "acme", budgetUsdLimit: 1 }
const ref = (runId: string) => ({ tenantId: "acme", runId })

describe("Artana.create: one client, every operation", () => {
  it("status, reconcile (with the step checked), run and replay of a run whose tool call was left in doubt", async () => {
    const calls: Array<string> = []
    let crash = true
    const charge = Tool.make({
      name: "charge",
      description: "Charges a card (not idempotent)",
      parameters: Schema.Struct({ cents: Schema.Number }),
      handler: ({ cents }) =>
        Effect.suspend(() => {
          calls.push(`charge:${cents}`)
          // The process dies mid-handler: the execution stops with no outcome written.
          return crash ? Effect.interrupt : Effect.succeed(cents)
        })
    })
    const pay = Workflow.make({
      name: "pay",
      input: Schema.Struct({ cents: Schema.Number }),
      output: Schema.Struct({ charged: Schema.Number, human: Schema.String }),
      run: ({ cents }, ctx) =>
        Effect.gen(function*() {
          const charged = yield* ctx.tool(charge, { cents })
          const human = yield* ctx.pauseForHuman({ reason: "confirm", schema: Schema.String })
          return { charged, human }
        })
    })
    const artana = Artana.create({ model: ScriptedModel.layer([]), tools: [charge], workflows: [pay] })
    try {
      await expect(artana.run(pay, { runId: "r-1", tenant: acme, input: { cents: 5 } })).rejects.toBeDefined()
      expect(await artana.status(ref("r-1"))).toEqual({ status: "running", runId: "r-1" })
      crash = false
      expect(await artana.run(pay, { runId: "r-1", tenant: acme, input: { cents: 5 } })).toMatchObject({ status: "needs_reconciliation", stepKey: "tool:0" })
      expect(await artana.status(ref("r-1"))).toEqual({ status: "needs_reconciliation", runId: "r-1", stepKey: "tool:0", tool: "charge" })
      // The step the caller checked is passed through: another one settles nothing.
      await expect(artana.reconcile({ ...ref("r-1"), stepKey: "tool:9", outcome: { ok: true, result: 5 } })).rejects.toMatchObject({
        _tag: "InvalidRunState",
        expected: "in doubt at step tool:9"
      })
      expect((await artana.status(ref("r-1"))).status).toBe("needs_reconciliation")
      await artana.reconcile({ ...ref("r-1"), stepKey: "tool:0", outcome: { ok: true, result: 5 } })
      const paused = await artana.resume(ref("r-1"))
      expect(paused).toMatchObject({ status: "paused", reason: "confirm" })
      expect(await artana.status(ref("r-1"))).toMatchObject({ status: "paused", reason: "confirm" })
      expect(await artana.resume({ ...ref("r-1"), response: "ann" })).toEqual({ status: "completed", runId: "r-1", output: { charged: 5, human: "ann" } })
      expect(await artana.status(ref("r-1"))).toEqual({ status: "completed", runId: "r-1", output: { charged: 5, human: "ann" } })
      const replayed = await artana.replay(pay, ref("r-1"))
      expect(replayed).toEqual({ status: "completed", runId: "r-1", output: { charged: 5, human: "ann" } })
      // The call in doubt ran once, in the execution that died; settled by a person, it never ran again.
      expect(calls).toEqual(["charge:5"])
      expect((await artana.verify(ref("r-1"))).ok).toBe(true)
      await expect(artana.status({ tenantId: "other", runId: "r-1" })).rejects.toMatchObject({ _tag: "RunNotFound" })
    } finally {
      await artana.close()
    }
  })
})

describe("Artana.create: a run's events as an AsyncIterable", () => {
  it("yields every event of a run in order, read a page at a time, and the status of a paused run", async () => {
    const artana = Artana.create({ model: ScriptedModel.layer([]), tools: [], workflows: [TestLog.LongRun.workflow] })
    try {
      const paused = await artana.run(TestLog.LongRun.workflow, { runId: "long", tenant: acme, input: { steps: 1_234 } })
      expect(paused).toMatchObject({ status: "paused", reason: "approve the sum" })
      const seqs: Array<number> = []
      for await (const event of artana.events(ref("long"), { pageSize: 100 })) seqs.push(event.seq)
      expect(seqs).toEqual(Array.from({ length: 1_236 }, (_, i) => i + 1))
      expect(await artana.status(ref("long"))).toMatchObject({ status: "paused", runId: "long", reason: "approve the sum" })
    } finally {
      await artana.close()
    }
  })

})

describe("Artana.create: signals", () => {
  it("signal and waitForSignal in a Promise workflow: the run pauses at the wait, takes the signal once resumed; an ended run refuses one", async () => {
    const review = Artana.workflow({
      name: "review",
      input: Schema.Null,
      output: Schema.String,
      run: async (_input, ctx) => {
        const verdict = await ctx.waitForSignal("verdict", Schema.Struct({ ok: Schema.Boolean }))
        return verdict.ok ? "accepted" : "rejected"
      }
    })
    const artana = Artana.create({ model: ScriptedModel.layer([]), workflows: [review] })
    try {
      expect(await artana.run(review, { runId: "s-1", tenant: acme, input: null })).toMatchObject({ status: "paused", ticket: "signal:signal:0" })
      expect(await artana.status(ref("s-1"))).toMatchObject({ status: "paused", reason: "waiting for signal \"verdict\"" })
      const receipt = await artana.signal({ ...ref("s-1"), name: "verdict", payload: { ok: true } })
      expect(receipt.seq).toBe(4)
      expect(await artana.resume(ref("s-1"))).toEqual({ status: "completed", runId: "s-1", output: "accepted" })
      await expect(artana.signal({ ...ref("s-1"), name: "verdict", payload: { ok: false } })).rejects.toMatchObject({ _tag: "SignalRefused", status: "completed" })
      await expect(artana.signal({ tenantId: "globex", runId: "s-1", name: "verdict", payload: null })).rejects.toMatchObject({ _tag: "RunNotFound" })
      expect(await artana.replay(review, ref("s-1"))).toEqual({ status: "completed", runId: "s-1", output: "accepted" })
    } finally {
      await artana.close()
    }
  })
})

describe("Artana.create: the tenant's runs a page at a time", () => {
  it("pages through every run with `next`, none twice, within the tenant, and refuses a cursor no page gave", async () => {
    const noop = Workflow.make({ name: "noop", input: Schema.Struct({ i: Schema.Number }), output: Schema.Number, run: ({ i }) => Effect.succeed(i) })
    const artana = Artana.create({ model: ScriptedModel.layer([]), tools: [], workflows: [noop] })
    try {
      for (let i = 0; i < 7; i++) await artana.run(noop, { runId: `p-${i}`, tenant: acme, input: { i } })
      await artana.run(noop, { runId: "elsewhere", tenant: { tenantId: "other", budgetUsdLimit: 1 }, input: { i: 0 } })
      const seen: Array<string> = []
      let after: string | undefined
      let pages = 0
      do {
        const page = await artana.listRunsPage("acme", { limit: 3, ...(after === undefined ? {} : { after }) })
        expect(page.runs.length).toBeLessThanOrEqual(3)
        seen.push(...page.runs.map((r) => r.runId))
        after = page.next
        pages++
      } while (after !== undefined)
      expect(pages).toBe(3)
      expect([...seen].sort()).toEqual(Array.from({ length: 7 }, (_, i) => `p-${i}`))
      expect(seen).toEqual((await artana.listRuns("acme")).map((r) => r.runId))
      await expect(artana.listRunsPage("acme", { after: "not-a-cursor" })).rejects.toMatchObject({ _tag: "InvalidInput" })
    } finally {
      await artana.close()
    }
  })
})
