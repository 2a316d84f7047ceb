// Forks (`Kernel.fork`): a fork at every event of a run that has a model step, a tool step, a memoized step, a pause,
// an approval and a signal; overrides that change what follows; the original untouched; tenancy; idempotence.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Chat, Errors, type Event, EventStore, Fork, Kernel, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, tenant } from "./fixtures.js"

/** Every handler run, by tool: a fork runs live only what follows its prefix. */
const ran: Array<string> = []

const lookup = Tool.make({
  name: "lookup",
  description: "Reads a balance",
  parameters: Schema.Struct({ account: Schema.String }),
  success: Schema.Struct({ balance: Schema.Number }),
  idempotent: true,
  handler: () => Effect.sync(() => (ran.push("lookup"), { balance: 100 }))
})

const pay = Tool.make({
  name: "pay",
  description: "Pays (a person approves it)",
  parameters: Schema.Struct({ amount: Schema.Number }),
  needsApproval: true,
  handler: ({ amount }) => Effect.sync(() => (ran.push("pay"), `paid ${amount}`))
})

/** One of each kind of step, under explicit keys. */
export const tour = Workflow.make({
  name: "fork.tour",
  input: Schema.Struct({ topic: Schema.String }),
  output: Schema.String,
  run: ({ topic }, ctx) =>
    Effect.gen(function*() {
      const reply = yield* ctx.modelStep({ messages: [Chat.user(topic)], key: "ask" })
      const { balance } = yield* ctx.tool(lookup, { account: "acc-1" }, { key: "balance" })
      const picked = yield* ctx.step("pick", Effect.succeed(balance / 10), Schema.Number, { key: "pick" })
      const answer = yield* ctx.pauseForHuman({ reason: "confirm", schema: Schema.String, key: "confirm" })
      const paid = yield* ctx.tool(pay, { amount: picked }, { key: "pay" })
      const go = yield* ctx.waitForSignal("go", Schema.String, { key: "go" })
      return [reply.message.content, balance, picked, answer, paid, go].join("|")
    })
})

const replies = Array.from({ length: 40 }, () => ScriptedModel.text("hello", { costUsd: 0.01 }))
const layer = () => kernelLayer(replies, [lookup, pay], { kernel: { workflows: [tour] } })

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })

/** Answers whatever the run waits for (the human, the approval, the signal) until it completes. */
const finish = (first: Kernel.RunResult<string>) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    let result = first
    for (let i = 0; i < 10 && result.status === "paused"; i++) {
      const { runId } = result
      if (result.approval !== undefined) {
        yield* kernel.decideApproval({ tenantId: tenant.tenantId, approvalId: result.approval.approvalId, approver: "ops", decision: "approve" })
        result = yield* kernel.resume({ ...ref(runId), workflow: tour })
      } else if (result.reason.includes("signal")) {
        yield* kernel.signal({ ...ref(runId), name: "go", payload: "go" })
        result = yield* kernel.resume({ ...ref(runId), workflow: tour })
      } else result = yield* kernel.resume({ ...ref(runId), workflow: tour, response: "yes" })
    }
    return result
  })

const original = (runId: string) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const done = yield* finish(yield* kernel.execute(tour, { runId, tenant, input: { topic: "hi" } }))
    expect(done).toEqual({ status: "completed", runId, output: "hello|100|10|yes|paid 10|go" })
    return yield* kernel.readEvents(ref(runId))
  })

/**
 * Where a fork asked to end at an event of each type ends: `at` that event, or `before` its step (the step is cut off
 * whole and runs live in the fork), or before the run's end.
 */
const expected: Record<string, "at" | "before"> = {
  RunStarted: "at",
  ModelRequested: "before",
  ModelCompleted: "at",
  ToolRequested: "before",
  ToolCompleted: "at",
  StepCompleted: "at",
  PauseRequested: "at",
  RunResumed: "at",
  HumanResponded: "at",
  ApprovalRequested: "before",
  ApprovalDecided: "before",
  SignalAwaited: "at",
  SignalSent: "at",
  SignalReceived: "at",
  RunCompleted: "before"
}

/** The seq a fork asked for `at` ends at, by the table. */
const cutFor = (events: ReadonlyArray<Event.Event>, at: Event.Event): number => {
  if (at.type === "RunCompleted") return at.seq - 1
  if (expected[at.type] === "at") {
    // The approval's step is still open after its decision's run resumed: that is cut off too.
    const open = events.find((e) => e.stepKey === "pay" && e.type === "ApprovalRequested")!
    const settled = events.find((e) => e.stepKey === "pay" && e.type === "ToolCompleted")!
    return at.seq > open.seq && at.seq < settled.seq ? open.seq - 1 : at.seq
  }
  return events.find((e) => e.stepKey === at.stepKey)!.seq - 1
}

describe("Kernel.fork", () => {
  it.effect("a fork at every event: the prefix up to its step boundary, re-chained; the fork completes; the original is untouched", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const log = yield* original("tour")
      const types = new Set(log.map((e) => e.type))
      // The run has every kind of event the table speaks of.
      expect([...types].sort()).toEqual(Object.keys(expected).sort())
      // Two points that cut back to one boundary are one fork: the second finds it (driven to its end already).
      const seen = new Set<number>()
      for (const at of log) {
        ran.length = 0
        const forked = yield* kernel.forkLog({ ...ref("tour"), atSeq: at.seq })
        const cut = cutFor(log, at)
        expect([at.seq, at.type, forked.forkedFrom.seq, forked.created]).toEqual([at.seq, at.type, cut, !seen.has(cut)])
        expect(forked.runId).toBe(Fork.forkRunId("tour", cut))
        const copied = (yield* kernel.readEvents(ref(forked.runId))).slice(0, cut)
        // The prefix as recorded, under the fork's id and chain; its RunStarted says where it came from.
        expect(copied.map((e) => [e.seq, e.type, e.stepKey])).toEqual(log.slice(0, cut).map((e) => [e.seq, e.type, e.stepKey]))
        expect(copied.slice(1).map((e) => e.payload)).toEqual(log.slice(1, cut).map((e) => e.payload))
        expect(copied[0]!.payload).toMatchObject({ _tag: "RunStarted", workflow: "fork.tour", forkedFrom: { runId: "tour", seq: cut } })
        expect(copied.every((e, i) => e.runId === forked.runId && e.hash !== log[i]!.hash)).toBe(true)
        expect((yield* kernel.verify(ref(forked.runId))).ok).toBe(true)
        // Driven on by the code, the fork ends as the original did, running live only what follows its prefix.
        const done = yield* finish(yield* kernel.fork({ ...ref("tour"), atSeq: at.seq, workflow: tour }))
        expect(done).toEqual({ status: "completed", runId: forked.runId, output: "hello|100|10|yes|paid 10|go" })
        const handlers = [
          ...(cut < log.find((e) => e.type === "ToolCompleted" && e.stepKey === "balance")!.seq ? ["lookup"] : []),
          ...(cut < log.find((e) => e.type === "ToolCompleted" && e.stepKey === "pay")!.seq ? ["pay"] : [])
        ]
        expect(ran).toEqual(seen.has(cut) ? [] : handlers)
        seen.add(cut)
      }
      // The original: the same events, its chain intact.
      expect((yield* kernel.readEvents(ref("tour"))).map((e) => e.hash)).toEqual(log.map((e) => e.hash))
      expect((yield* kernel.verify(ref("tour"))).ok).toBe(true)
    }).pipe(Effect.provide(layer())), 120_000)

  it.effect("an override replaces a step's result, and what follows runs on it", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* original("what-if")
      ran.length = 0
      // What if the balance had been 500? The step after it (pick) runs on it, and so on.
      const first = yield* kernel.fork({ ...ref("what-if"), atStep: "balance", overrides: { balance: { balance: 500 } }, workflow: tour })
      const done = yield* finish(first)
      expect(done).toMatchObject({ status: "completed", output: "hello|500|50|yes|paid 50|go" })
      expect(ran).toEqual(["pay"])
      const events = yield* kernel.readEvents(ref(done.runId))
      expect(events[0]!.payload).toMatchObject({ forkedFrom: { runId: "what-if", overridden: ["balance"] } })
      expect(events.find((e) => e.stepKey === "balance" && e.type === "ToolCompleted")!.payload).toMatchObject({ result: { balance: 500 } })
      // A human's answer and a model's reply, replaced.
      const answered = yield* finish(yield* kernel.fork({ ...ref("what-if"), atStep: "confirm", overrides: { confirm: "no" }, workflow: tour }))
      expect(answered).toMatchObject({ status: "completed", output: "hello|100|10|no|paid 10|go" })
      const replied = yield* finish(yield* kernel.fork({ ...ref("what-if"), atStep: "ask", overrides: { ask: "bonjour" }, workflow: tour }))
      expect(replied).toMatchObject({ status: "completed", output: "bonjour|100|10|yes|paid 10|go" })
      // Each override is a fork of its own; the original is untouched.
      expect(new Set([done.runId, answered.runId, replied.runId]).size).toBe(3)
      expect((yield* kernel.verify(ref("what-if"))).ok).toBe(true)
    }).pipe(Effect.provide(layer())), 60_000)

  it.effect("an override of a step outside the prefix, or of one that records no result, is refused and writes nothing", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const log = yield* original("bad")
      const balanceDone = log.find((e) => e.stepKey === "balance" && e.type === "ToolCompleted")!.seq
      const refused = yield* Effect.flip(kernel.forkLog({ ...ref("bad"), atSeq: balanceDone - 1, overrides: { balance: 1 } }))
      expect(refused).toBeInstanceOf(Errors.InvalidInput)
      expect(refused.message).toContain(`override of step "balance"`)
      const model = yield* Effect.flip(kernel.forkLog({ ...ref("bad"), atStep: "ask", overrides: { ask: { role: "user" } } }))
      expect(model.message).toContain("assistant message")
      const missing = yield* Effect.flip(kernel.forkLog({ ...ref("bad"), atStep: "nope" }))
      expect(missing.message).toContain(`no step "nope"`)
      expect((yield* store.listRuns(tenant.tenantId)).map((r) => r.runId)).toEqual(["bad"])
    }).pipe(Effect.provide(layer())), 60_000)

  it.effect("another tenant's run cannot be forked: RunNotFound, as for a run that never existed", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* original("mine")
      const theirs = yield* Effect.flip(kernel.forkLog({ tenantId: "other", runId: "mine", atSeq: 3 }))
      const none = yield* Effect.flip(kernel.forkLog({ tenantId: "other", runId: "never", atSeq: 3 }))
      expect(theirs).toBeInstanceOf(Errors.RunNotFound)
      expect(theirs.message).toBe(none.message.replace("never", "mine"))
      expect((yield* EventStore.EventStore.pipe(Effect.flatMap((s) => s.listRuns("other"))))).toEqual([])
    }).pipe(Effect.provide(layer())), 60_000)

  it.effect("the same request twice is the same fork; a given id is used; the fork's spend starts with its prefix's", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const log = yield* original("again")
      const at = log.find((e) => e.stepKey === "pick")!.seq
      const a = yield* kernel.forkLog({ ...ref("again"), atSeq: at })
      const b = yield* kernel.forkLog({ ...ref("again"), atSeq: at })
      expect([a.created, b.created, b.runId]).toEqual([true, false, a.runId])
      const named = yield* kernel.forkLog({ ...ref("again"), atSeq: at, forkRunId: "try-2" })
      expect(named).toMatchObject({ runId: "try-2", created: true })
      // A given id that is another run's is refused.
      const taken = yield* Effect.flip(kernel.forkLog({ ...ref("again"), atSeq: 1, forkRunId: "try-2" }))
      expect(taken).toBeInstanceOf(Errors.InvalidInput)
      // Its own root, charged what its prefix's model step cost (the original's record is unchanged).
      const fork = yield* store.getRun(tenant.tenantId, a.runId)
      const source = yield* store.getRun(tenant.tenantId, "again")
      expect([fork.rootRunId, fork.parentRunId, fork.costUsd, fork.status]).toEqual([a.runId, undefined, 0.01, "running"])
      expect(source.costUsd).toBe(0.01)
      expect(yield* store.lineageCostUsd(tenant.tenantId, a.runId)).toBe(0.01)
    }).pipe(Effect.provide(layer())), 60_000)
})
