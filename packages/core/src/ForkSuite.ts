/**
 * Forks over a real store (`Kernel.fork`, `EventStore.appendPaged`): the copy is one transaction, written a page at a
 * time; a fork of a long run keeps its original intact; another tenant's run is not found. Run by every store package.
 *
 * @example
 * import { ForkSuite } from "@artana/core/testing/suites"
 * ForkSuite.suite("sqlite", () => Layer.orDie(SqliteStore.layer({ filename: tempFile() })))
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { RunNotFound, StoreError } from "./Errors.js"
import * as Chat from "./Chat.js"
import type { Event, EventPayload } from "./Event.js"
import * as EventStore from "./EventStore.js"
import * as Fork from "./Fork.js"
import * as Kernel from "./Kernel.js"
import * as ScriptedModel from "./ScriptedModel.js"
import { TenantContext } from "./Tenant.js"
import { chain } from "./TestLog.js"
import * as Tool from "./Tool.js"
import * as ToolRegistry from "./ToolRegistry.js"
import * as Workflow from "./Workflow.js"

const tenant = TenantContext.make({ tenantId: "fork-a", capabilities: [], budgetUsdLimit: 1 })

const STEPS = 700

/** A long run of memoized steps; its output sums them, so an override shows in it. */
const long = Workflow.make({
  name: "fork.long",
  input: Schema.Null,
  output: Schema.Number,
  run: (_, ctx) =>
    Effect.gen(function*() {
      let sum = 0
      for (let i = 0; i < STEPS; i++) sum += yield* ctx.step("n", Effect.succeed(1), Schema.Number, { key: `n:${i}` })
      return sum
    })
})

const started: EventPayload = { _tag: "RunStarted", workflow: "paged", input: null, tenant }
const step = (n: number): EventPayload => ({ _tag: "StepCompleted", name: "n", value: n })

/** `appendPaged`'s batches: a run of `pages` batches of 100 steps, after its `RunStarted`. */
const batches = (runId: string, pages: number) => {
  const events = chain(runId, tenant.tenantId, [], [started, ...Array.from({ length: pages * 100 }, (_, i) => step(i))])
  const requests: Array<EventStore.AppendRequest> = []
  requests.push({ runId, tenantId: tenant.tenantId, expectedSeq: 0, events: events.slice(0, 1) })
  for (let p = 0; p < pages; p++) requests.push({ runId, tenantId: tenant.tenantId, expectedSeq: 1 + p * 100, events: events.slice(1 + p * 100, 1 + (p + 1) * 100) })
  return requests
}

/** Pulls `requests` one by one, then None; `fail` at index i: fails there instead. */
const pulling = <E = never>(requests: ReadonlyArray<EventStore.AppendRequest>, fail?: { readonly at: number; readonly error: E }) => {
  let i = 0
  return Effect.suspend((): Effect.Effect<Option.Option<EventStore.AppendRequest>, E> => {
    if (fail !== undefined && i === fail.at) return Effect.fail(fail.error)
    const next = requests[i++]
    return Effect.succeed(next === undefined ? Option.none() : Option.some(next))
  })
}

// --- a run with one step of each kind, forked at each of its events

const tourTenant = TenantContext.make({ tenantId: "fork-t", capabilities: [], budgetUsdLimit: 1 })

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
const tour = Workflow.make({
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

const ref = (runId: string) => ({ tenantId: tourTenant.tenantId, runId })

/** Answers whatever the run waits for (the human, the approval, the signal) until it completes. */
const finish = (first: Kernel.RunResult<string>) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    let result = first
    for (let i = 0; i < 10 && result.status === "paused"; i++) {
      const { runId } = result
      if (result.approval !== undefined) {
        yield* kernel.decideApproval({ tenantId: tourTenant.tenantId, approvalId: result.approval.approvalId, approver: "ops", decision: "approve" })
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
    const done = yield* finish(yield* kernel.execute(tour, { runId, tenant: tourTenant, input: { topic: "hi" } }))
    expect(done).toEqual({ status: "completed", runId, output: "hello|100|10|yes|paid 10|go" })
    return yield* kernel.readEvents(ref(runId))
  })

/**
 * The run the suite forks at each of its events, for a store's own fork tests: its workflow (a model step "ask", an
 * idempotent tool step "balance", a memoized step "pick", a pause "confirm", a tool step "pay" that needs approval, a
 * signal wait "go"), its tools and model replies, the handlers run so far (`ran`), `original` (runs it to the end
 * with the kernel in context, answering every wait) and `finish` (answers a run's waits until it completes).
 */
export const Tour = { workflow: tour, tools: [lookup, pay], replies, ran, tenant: tourTenant, original, finish }

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
const cutFor = (events: ReadonlyArray<Event>, at: Event): number => {
  if (at.type === "RunCompleted") return at.seq - 1
  if (expected[at.type] === "at") {
    // The approval's step is still open after its decision's run resumed: that is cut off too.
    const open = events.find((e) => e.stepKey === "pay" && e.type === "ApprovalRequested")!
    const settled = events.find((e) => e.stepKey === "pay" && e.type === "ToolCompleted")!
    return at.seq > open.seq && at.seq < settled.seq ? open.seq - 1 : at.seq
  }
  return events.find((e) => e.stepKey === at.stepKey)!.seq - 1
}


export const suite = (name: string, makeLayer: () => Layer.Layer<EventStore.EventStore, unknown>): void => {
  const tourLayer = () =>
    Layer.provideMerge(Kernel.layer({ workflows: [tour] }), Layer.mergeAll(makeLayer(), ScriptedModel.layer(replies), ToolRegistry.layer([lookup, pay])))
  describe(`fork over the EventStore: ${name}`, () => {
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
      // The original's forks, listed on their index: each fork's record names the run it was copied from.
      const store = yield* EventStore.EventStore
      const forks = yield* store.listRuns(ref("tour").tenantId, { forkedFrom: "tour" })
      expect(forks.map((r) => r.runId).sort()).toEqual([...seen].map((cut) => Fork.forkRunId("tour", cut)).sort())
      expect(forks.every((r) => r.forkedFrom === "tour")).toBe(true)
      expect((yield* store.getRun(ref("tour").tenantId, "tour")).forkedFrom).toBeUndefined()
      // The original: the same events, its chain intact.
      expect((yield* kernel.readEvents(ref("tour"))).map((e) => e.hash)).toEqual(log.map((e) => e.hash))
      expect((yield* kernel.verify(ref("tour"))).ok).toBe(true)
    }).pipe(Effect.provide(tourLayer())), 600_000)

    it.effect("appendPaged writes every batch in one transaction, or none: a refused batch or a failed pull leaves nothing", () =>
      Effect.gen(function*() {
        const store = yield* EventStore.EventStore
        yield* store.appendPaged(pulling(batches("whole", 3)))
        const whole = yield* store.getRun(tenant.tenantId, "whole")
        expect([whole.headSeq, whole.status]).toEqual([301, "running"])
        expect((yield* store.readEvents(tenant.tenantId, "whole")).map((e) => e.seq)).toEqual(Array.from({ length: 301 }, (_, i) => i + 1))
        // The third batch says it follows seq 100: refused, and the two before it are rolled back with it.
        const [first, second, third] = batches("refused", 3)
        const refused = yield* Effect.flip(store.appendPaged(pulling([first!, second!, { ...third!, expectedSeq: 100 }])))
        expect(["StoreError", "SequenceConflict"]).toContain(refused._tag)
        expect(yield* Effect.flip(store.getRun(tenant.tenantId, "refused"))).toBeInstanceOf(RunNotFound)
        // The pull fails after two batches were written: nothing of them stays, and its error is the caller's.
        const error = new StoreError({ operation: "test", reason: "the source went away" })
        const pulled = yield* Effect.flip(store.appendPaged(pulling(batches("pulled", 3), { at: 2, error })))
        expect([pulled._tag, pulled.message]).toEqual(["StoreError", error.message])
        expect(yield* Effect.flip(store.getRun(tenant.tenantId, "pulled"))).toBeInstanceOf(RunNotFound)
      }).pipe(Effect.provide(makeLayer())), 120_000)

    it.effect("a fork of a long run: its prefix copied in pages, re-chained; the fork goes on from it; the original is untouched", () => {
      const layer = Layer.provideMerge(Kernel.layer({ workflows: [long] }), Layer.mergeAll(makeLayer(), ScriptedModel.layer([]), ToolRegistry.layer([])))
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const store = yield* EventStore.EventStore
        const ref = { tenantId: tenant.tenantId, runId: "long" }
        expect(yield* kernel.execute(long, { ...ref, tenant, input: null })).toMatchObject({ status: "completed", output: STEPS })
        const before = yield* store.getRun(tenant.tenantId, "long")
        // Through step n:599 (seq 601), the step n:10 counted as 100: the code adds the rest live.
        const done = yield* kernel.fork({ ...ref, atStep: "n:599", overrides: { "n:10": 100 }, workflow: long })
        expect(done).toMatchObject({ status: "completed", output: STEPS + 99 })
        const fork = yield* store.getRun(tenant.tenantId, done.runId)
        expect([fork.status, fork.rootRunId, fork.headSeq]).toEqual(["completed", done.runId, STEPS + 3])
        const events = yield* kernel.readEvents({ tenantId: tenant.tenantId, runId: done.runId })
        expect(events[0]!.payload).toMatchObject({ forkedFrom: { runId: "long", seq: 601, overridden: ["n:10"] } })
        expect(events[601]).toMatchObject({ type: "RunResumed", payload: { reason: "fork of run long at seq 601: its first execution" } })
        expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId: done.runId })).ok).toBe(true)
        expect(yield* store.getRun(tenant.tenantId, "long")).toEqual(before)
        expect((yield* kernel.verify(ref)).ok).toBe(true)
        // Another tenant cannot fork it, nor learn that it exists.
        expect(yield* Effect.flip(kernel.forkLog({ tenantId: "fork-b", runId: "long", atSeq: 5 }))).toBeInstanceOf(RunNotFound)
      }).pipe(Effect.provide(layer))
    }, 240_000)

    it.effect("a copy that fails midway leaves no fork: the pages written before roll back with it", () => {
      // The source's page from seq 257 is read twice: by the search for the boundary, then by the copy, inside its
      // transaction after the first page was written there. The second read fails.
      let reads = 0
      const failing = Layer.effect(EventStore.EventStore, Effect.map(EventStore.EventStore, (inner): EventStore.Service => ({
        ...inner,
        readEvents: (tenantId, runId, fromSeq, limit) =>
          runId === "source" && fromSeq === 257 && ++reads === 2
            ? Effect.fail(new StoreError({ operation: "readEvents", reason: "the disk went away" }))
            : inner.readEvents(tenantId, runId, fromSeq, limit)
      }))).pipe(Layer.provide(makeLayer()))
      const layer = Layer.provideMerge(Kernel.layer({ workflows: [long] }), Layer.mergeAll(failing, ScriptedModel.layer([]), ToolRegistry.layer([])))
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const store = yield* EventStore.EventStore
        yield* kernel.execute(long, { runId: "source", tenant, input: null })
        const failed = yield* Effect.flip(kernel.forkLog({ tenantId: tenant.tenantId, runId: "source", atSeq: 400 }))
        expect(failed.message).toContain("the disk went away")
        expect((yield* store.listRuns(tenant.tenantId)).map((r) => r.runId)).toEqual(["source"])
        // Asked again, it is written whole.
        const forked = yield* kernel.forkLog({ tenantId: tenant.tenantId, runId: "source", atSeq: 400 })
        expect([forked.created, (yield* store.getRun(tenant.tenantId, forked.runId)).headSeq]).toEqual([true, 400])
      }).pipe(Effect.provide(layer))
    }, 240_000)
  })
}
