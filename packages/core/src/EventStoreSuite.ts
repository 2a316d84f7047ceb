/**
 * The contract every `EventStore` implementation passes: the in-memory store, SQLite, Postgres. Each test
 * builds a fresh layer, so a store backed by a database gets one database per test.
 *
 * @example
 * import { EventStoreSuite } from "@artana/core/testing/suites"
 * EventStoreSuite.suite("sqlite", () => Layer.orDie(SqliteStore.layer({ filename: tempFile() })))
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Event, EventPayload, RunInfo } from "./Event.js"
import type { OwnershipLost, SequenceConflict, StoreError } from "./Errors.js"
import * as EventStore from "./EventStore.js"
import type { AppendRequest, ListRunsFilter, Service } from "./EventStore.js"
import * as TenantIsolation from "./TenantIsolation.js"
import * as Kernel from "./Kernel.js"
import * as ScriptedModel from "./ScriptedModel.js"
import { chain, T0 } from "./TestLog.js"
import { TenantContext } from "./Tenant.js"
import * as Tool from "./Tool.js"
import * as ToolRegistry from "./ToolRegistry.js"
import * as Verify from "./Verify.js"
import { verifyEvents } from "./Verify.js"
import * as Workflow from "./Workflow.js"


const tenantA = TenantContext.make({ tenantId: "tenant-a", capabilities: ["finance:read"], budgetUsdLimit: 5 })
const tenantB = TenantContext.make({ tenantId: "tenant-b", capabilities: [], budgetUsdLimit: 1 })


const started = (
  tenant: TenantContext,
  workflow = "review",
  lineage: { readonly parentRunId?: string; readonly rootRunId?: string } = {}
): EventPayload => ({ _tag: "RunStarted", workflow, input: { document: "contract.pdf", pages: 3 }, tenant, ...lineage })

const modelCompleted = (costUsd: number): EventPayload => ({
  _tag: "ModelCompleted",
  model: "gpt-test",
  message: { role: "assistant", content: "ok" },
  usage: { inputTokens: 10, outputTokens: 2 },
  costUsd
})

/** A run's log as a test grows it: appends a batch after the current head and remembers it. */
interface Log {
  readonly runId: string
  readonly tenantId: string
  readonly events: ReadonlyArray<Event>
  /** The batch that would follow the head, without appending it. */
  readonly next: (payloads: ReadonlyArray<EventPayload>) => AppendRequest
  readonly append: (...payloads: ReadonlyArray<EventPayload>) => Effect.Effect<ReadonlyArray<Event>, SequenceConflict | OwnershipLost | StoreError>
  /** `append` as an owner: with its epoch, claiming the run when `claim` is set. */
  readonly appendAs: (
    owner: { readonly ownerEpoch: number; readonly claim?: boolean },
    ...payloads: ReadonlyArray<EventPayload>
  ) => Effect.Effect<ReadonlyArray<Event>, SequenceConflict | OwnershipLost | StoreError>
}

const makeLog = (store: Service, runId: string, tenant: TenantContext, start = T0): Log => {
  const events: Array<Event> = []
  const next = (payloads: ReadonlyArray<EventPayload>): AppendRequest => ({
    runId,
    tenantId: tenant.tenantId,
    expectedSeq: events.length,
    events: chain(runId, tenant.tenantId, events, payloads, start)
  })
  const appendAs = (owner: { readonly ownerEpoch?: number; readonly claim?: boolean }, payloads: ReadonlyArray<EventPayload>) =>
    Effect.suspend(() => {
      const request = { ...next(payloads), ...owner }
      return Effect.as(
        Effect.tap(store.append(request), () => Effect.sync(() => events.push(...request.events))),
        request.events
      )
    })
  return {
    runId,
    tenantId: tenant.tenantId,
    events,
    next,
    append: (...payloads) => appendAs({}, payloads),
    appendAs: (owner, ...payloads) => appendAs(owner, payloads)
  }
}

/** Every event type, with every optional field that JSON can carry, so a round trip loses nothing. */
const everyEventType = (tenant: TenantContext): ReadonlyArray<ReadonlyArray<EventPayload>> => [
  [
    started(tenant, "review", { parentRunId: "parent-1", rootRunId: "root-1" }),
    { _tag: "RunResumed", reason: "recovery" },
    {
      _tag: "ModelRequested",
      model: "gpt-test",
      messages: [
        { role: "system", content: "You review contracts." },
        { role: "user", content: "Résumé ✓ — 日本語 \"quoted\" \\ back\nslash" },
        { role: "assistant", content: null, toolCalls: [{ id: "call-1", name: "get_balance", arguments: "{\"accountId\":\"acc-1\"}" }] },
        { role: "tool", toolCallId: "call-1", name: "get_balance", content: "{\"balance\":1200}" }
      ],
      tools: ["get_balance", "transfer"],
      requestHash: "a".repeat(64),
      outputSchema: { type: "object", properties: { approved: { type: "boolean" } }, required: ["approved"] }
    },
    {
      _tag: "ModelCompleted",
      model: "gpt-test",
      message: { role: "assistant", content: null, toolCalls: [{ id: "call-2", name: "notify", arguments: "{}" }] },
      usage: { inputTokens: 1200, outputTokens: 35, cachedInputTokens: 1000 },
      costUsd: 0.00125
    }
  ],
  [
    { _tag: "ModelFailed", kind: "rate_limited", error: "429" },
    { _tag: "ToolRequested", tool: "notify", arguments: "{\"text\":\"hi\"}", idempotencyKey: "run:tool:1", toolCallId: "call-2" },
    {
      _tag: "ToolCompleted",
      tool: "notify",
      result: { sent: true, ids: [1, 2.5, -3e-7, 1e21], nested: { empty: {}, list: [], none: null, flag: false } },
      reconciled: true
    },
    { _tag: "ToolFailed", tool: "transfer", kind: "invalid_arguments", error: "amount must be positive", path: "$.amount", reconciled: false },
    { _tag: "ReconciliationRequired", tool: "transfer", idempotencyKey: "run:tool:2" },
    { _tag: "StepCompleted", name: "fetch", value: [1, "two", { three: 3 }] }
  ],
  [
    { _tag: "PauseRequested", reason: "approve the transfer", ticket: "ticket-1", responseSchema: { type: "boolean" } },
    { _tag: "HumanResponded", ticket: "ticket-1", payload: { approved: true, note: "fine" } },
    { _tag: "PolicyDenied", tool: "transfer", reason: "missing capability", capability: "finance:write", middleware: "capabilities" },
    { _tag: "BudgetExceeded", limitUsd: 5, spentUsd: 5.5, phase: "after_call" },
    { _tag: "MiddlewareNote", middleware: "pii", note: "scrubbed 2 emails", data: { emails: 2 } },
    { _tag: "RunFailed", errorTag: "ToolError", error: "boom" },
    { _tag: "RunCompleted", output: "done" }
  ]
]

/** Registers one of the contract's tests. */
type Test = (title: string, body: (store: Service) => Effect.Effect<void, unknown>) => void

/** Appends and reads: order, conflicts, creating a run. */
const readsAndConflicts = (test: Test): void => {
    test("append then readEvents returns the events as they were written", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-roundtrip", tenantA)
        for (const batch of everyEventType(tenantA)) yield* log.append(...batch)

        const read = yield* store.readEvents(tenantA.tenantId, log.runId)
        expect(read).toEqual(log.events)
        expect(read.map((e) => e.payload._tag)).toEqual(everyEventType(tenantA).flat().map((p) => p._tag))
        const first = read[0]?.payload
        expect(first?._tag === "RunStarted" && first.tenant instanceof TenantContext).toBe(true)
        // The hashes still match the content: nothing was reordered, rounded or dropped on the way.
        expect(verifyEvents(log.runId, read)).toMatchObject({ ok: true, events: log.events.length })

        expect(yield* store.readEvents(tenantA.tenantId, log.runId, 4)).toEqual(log.events.slice(3))
        expect(yield* store.readEvents(tenantA.tenantId, log.runId, log.events.length + 1)).toEqual([])
      }))

    test("events come back in seq order, from any seq", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-order", tenantA)
        yield* log.append(started(tenantA))
        for (let i = 0; i < 20; i++) {
          const batch = Array.from({ length: (i % 3) + 1 }, (_, j): EventPayload => ({
            _tag: "StepCompleted",
            name: `step-${i}-${j}`,
            value: i * 10 + j
          }))
          yield* log.append(...batch)
        }
        const read = yield* store.readEvents(tenantA.tenantId, log.runId)
        expect(read.map((e) => e.seq)).toEqual(log.events.map((_, i) => i + 1))
        expect(read).toEqual(log.events)
        const tail = yield* store.readEvents(tenantA.tenantId, log.runId, 17)
        expect(tail.map((e) => e.seq)).toEqual(log.events.slice(16).map((e) => e.seq))
        // A page: at most `limit` events from `fromSeq`; past the head, none.
        expect(yield* store.readEvents(tenantA.tenantId, log.runId, 5, 3)).toEqual(log.events.slice(4, 7))
        expect(yield* store.readEvents(tenantA.tenantId, log.runId, log.events.length - 1, 10)).toEqual(log.events.slice(-2))
        expect(yield* store.readEvents(tenantA.tenantId, log.runId, log.events.length + 1, 10)).toEqual([])
        // Streamed in pages of any size, the log is the same events, each page one chunk.
        for (const pageSize of [1, 7, log.events.length, log.events.length + 5]) {
          const pages = yield* Stream.runCollect(Stream.chunks(EventStore.stream(store, tenantA.tenantId, log.runId, { pageSize })))
          expect(Chunk.toReadonlyArray(pages).flatMap((page) => Chunk.toReadonlyArray(page))).toEqual(log.events)
          expect(Chunk.toReadonlyArray(pages).every((page) => Chunk.size(page) <= pageSize)).toBe(true)
        }
        const fromTen = yield* Stream.runCollect(EventStore.stream(store, tenantA.tenantId, log.runId, { fromSeq: 10, pageSize: 4 }))
        expect(Chunk.toReadonlyArray(fromTen)).toEqual(log.events.slice(9))
        // Verified a page at a time, the chain holds as it does read whole.
        const verifier = Verify.make(log.runId)
        for (let from = 1; from <= log.events.length; from += 6) {
          expect(verifier.push(yield* store.readEvents(tenantA.tenantId, log.runId, from, 6))).toBeUndefined()
        }
        expect(verifier.finish()).toEqual(verifyEvents(log.runId, log.events))
      }))

    test("a stale or future expectedSeq fails with SequenceConflict", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-stale", tenantA)
        yield* log.append(started(tenantA), { _tag: "StepCompleted", name: "a", value: 1 })
        const stale = log.next([{ _tag: "StepCompleted", name: "b", value: 2 }])
        yield* log.append({ _tag: "StepCompleted", name: "c", value: 3 })

        const error = yield* Effect.flip(store.append(stale))
        expect(error).toMatchObject({ _tag: "SequenceConflict", runId: log.runId, expectedSeq: 2 })

        // A batch numbered on from seq 7 while the head is at 3.
        const sevenBefore = Array.from({ length: 7 }, (_, i) => log.events[Math.min(i, log.events.length - 1)]!)
        const future = {
          runId: log.runId,
          tenantId: tenantA.tenantId,
          expectedSeq: 7,
          events: chain(log.runId, tenantA.tenantId, sevenBefore, [{ _tag: "StepCompleted", name: "d", value: 4 }])
        }
        expect(yield* Effect.flip(store.append(future))).toMatchObject({ _tag: "SequenceConflict", expectedSeq: 7 })
        // A batch whose seqs do not follow its own expectedSeq is malformed: refused before it reaches the log.
        const malformed = { ...log.next([{ _tag: "StepCompleted", name: "e", value: 5 }]), expectedSeq: 2 }
        expect(yield* Effect.flip(store.append(malformed))).toMatchObject({ _tag: "StoreError", operation: "append" })
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
      }))

    test("a batch linked to another head is kept as written (the store does not mend links), and verifying finds it", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-foreign-link", tenantA)
        yield* log.append(started(tenantA), { _tag: "StepCompleted", name: "a", value: 1 })
        const other = makeLog(store, "run-other-head", tenantA, T0 + 1_000)
        yield* other.append(started(tenantA), { _tag: "StepCompleted", name: "b", value: 2 })
        const written: Array<Event> = [...log.events]
        // Linked to the other run's head: each event hashes right over its own material; the batch's first link is
        // wrong. A tool step's batch (one event, no status, no cost) and a longer one: the store's events-only append.
        const batches: ReadonlyArray<ReadonlyArray<EventPayload>> = [
          [{ _tag: "StepCompleted", name: "c", value: 3 }],
          [{ _tag: "StepCompleted", name: "d", value: 4 }, { _tag: "StepCompleted", name: "e", value: 5 }]
        ]
        for (const payloads of batches) {
          const head = written.length
          const events = chain(log.runId, tenantA.tenantId, [...written.slice(0, -1), other.events[other.events.length - 1]!], payloads)
          expect(events[0]!.prevHash).not.toBe(written[head - 1]!.hash)
          yield* store.append({ runId: log.runId, tenantId: tenantA.tenantId, expectedSeq: head, events })
          written.push(...events)
          expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(written)
          expect(verifyEvents(log.runId, written)).toMatchObject({ ok: false, firstBrokenSeq: 3 })
        }
      }))

    test("creating a run that exists in the tenant fails with SequenceConflict", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-twice", tenantA)
        yield* log.append(started(tenantA))
        const again = chain(log.runId, tenantA.tenantId, [], [started(tenantA, "other")], T0 + 50)
        const sameTenant = yield* Effect.flip(store.append({ runId: log.runId, tenantId: tenantA.tenantId, expectedSeq: 0, events: again }))
        expect(sameTenant).toMatchObject({ _tag: "SequenceConflict", runId: log.runId, expectedSeq: 0 })
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
        expect((yield* store.getRun(tenantA.tenantId, log.runId)).workflow).toBe("review")
      }))

}


/** Atomic appends to several runs (`appendAll`): the handover of continue-as-new. */
const handover = (test: Test): void => {
  const continued = (nextRunId: string): EventPayload => ({ _tag: "RunContinued", nextRunId, input: { page: 2 } })
  const successor = (from: string, lineage: { readonly rootRunId: string }): EventPayload => ({
    _tag: "RunStarted",
    workflow: "review",
    input: { page: 2 },
    tenant: tenantA,
    ...lineage,
    continuedFrom: { runId: from, chainRunId: from, generation: 1 }
  })

  test("appendAll writes a run's last event and its successor's first together, each run's record as append keeps it", (store) =>
    Effect.gen(function*() {
      const old = makeLog(store, "chain", tenantA)
      yield* old.append(started(tenantA), modelCompleted(0.25))
      const next = makeLog(store, "chain::continued::1", tenantA, T0 + 10)
      const end = old.next([continued(next.runId)])
      const first = next.next([successor(old.runId, { rootRunId: old.runId }), modelCompleted(0.5)])
      yield* store.appendAll([{ ...end, ownerEpoch: 1 }, { ...first, ownerEpoch: 1 }])

      expect(yield* store.readEvents(tenantA.tenantId, old.runId)).toEqual([...old.events, ...end.events])
      expect(yield* store.readEvents(tenantA.tenantId, next.runId)).toEqual(first.events)
      expect(yield* store.getRun(tenantA.tenantId, old.runId)).toMatchObject({ status: "continued", headSeq: 3, costUsd: 0.25 })
      expect(yield* store.getRun(tenantA.tenantId, next.runId)).toMatchObject({ status: "running", headSeq: 2, rootRunId: old.runId, costUsd: 0.5, ownerEpoch: 1 })
      // The lineage is the chain: its spend is both runs'.
      expect(yield* store.lineageCostUsd(tenantA.tenantId, old.runId)).toBe(0.75)
      expect((yield* store.listRuns(tenantA.tenantId, { status: "continued" })).map((r) => r.runId)).toEqual([old.runId])
    }))

  test("appendAll writes nothing when one of its batches is refused: a successor that exists, a stale head, a fenced owner", (store) =>
    Effect.gen(function*() {
      const old = makeLog(store, "refused", tenantA)
      yield* old.appendAs({ ownerEpoch: 2 }, started(tenantA))
      const taken = makeLog(store, "refused::continued::1", tenantA, T0 + 5)
      yield* taken.append(started(tenantA, "someone-else"))
      const next = (runId: string) => makeLog(store, runId, tenantA, T0 + 10)
      const expectUntouched = Effect.gen(function*() {
        expect(yield* store.readEvents(tenantA.tenantId, old.runId)).toEqual(old.events)
        expect(yield* store.getRun(tenantA.tenantId, old.runId)).toMatchObject({ status: "running", headSeq: 1, ownerEpoch: 2 })
      })

      // The successor exists: the old run's end is rolled back with it.
      const onTaken = next(taken.runId).next([successor(old.runId, { rootRunId: old.runId })])
      const error = yield* Effect.flip(store.appendAll([{ ...old.next([continued(taken.runId)]), ownerEpoch: 2 }, onTaken]))
      expect(error).toMatchObject({ _tag: "SequenceConflict", runId: taken.runId, expectedSeq: 0 })
      yield* expectUntouched
      expect(yield* store.readEvents(tenantA.tenantId, taken.runId)).toEqual(taken.events)

      // A writer a newer owner fenced: OwnershipLost, and no successor.
      const fresh = next("refused::continued::2")
      const fenced = yield* Effect.flip(store.appendAll([{ ...old.next([continued(fresh.runId)]), ownerEpoch: 1 }, fresh.next([successor(old.runId, { rootRunId: old.runId })])]))
      expect(fenced._tag).toBe("OwnershipLost")
      expect(yield* Effect.flip(store.getRun(tenantA.tenantId, fresh.runId))).toMatchObject({ _tag: "RunNotFound" })
      yield* expectUntouched

      // The old run's head moved on since the handover was built: no successor is created.
      const stale = { ...old.next([continued(fresh.runId)]), ownerEpoch: 2 }
      yield* old.appendAs({ ownerEpoch: 2 }, { _tag: "StepCompleted", name: "later", value: 1 })
      expect((yield* Effect.flip(store.appendAll([stale, fresh.next([successor(old.runId, { rootRunId: old.runId })])])))._tag).toBe("SequenceConflict")
      expect(yield* Effect.flip(store.getRun(tenantA.tenantId, fresh.runId))).toMatchObject({ _tag: "RunNotFound" })
      expect(yield* store.readEvents(tenantA.tenantId, old.runId)).toEqual(old.events)
    }))

  test("lineageCostUsd sums every run of a lineage: each predecessor of a continue-as-new chain, a sub-run, no other tenant's or lineage's", (store) =>
    Effect.gen(function*() {
      // A chain of 12 runs, each continued as the next, each spending $0.125.
      const links = 12
      let previous = makeLog(store, "spender", tenantA)
      yield* previous.append(started(tenantA), modelCompleted(0.125))
      for (let i = 1; i < links; i++) {
        const next = makeLog(store, `spender::continued::${i}`, tenantA, T0 + i * 10)
        yield* previous.append(continued(next.runId))
        yield* next.append(successor(previous.runId, { rootRunId: "spender" }), modelCompleted(0.125))
        previous = next
      }
      // A sub-run of the last link draws on the same root; a lineage of its own, and the same root id in another
      // tenant, do not.
      const child = makeLog(store, "spender::sub", tenantA, T0 + 500)
      yield* child.append(started(tenantA, "sub", { parentRunId: previous.runId, rootRunId: "spender" }), modelCompleted(0.5))
      const other = makeLog(store, "other-root", tenantA, T0 + 600)
      yield* other.append(started(tenantA), modelCompleted(2))
      const elsewhere = makeLog(store, "spender", tenantB, T0 + 700)
      yield* elsewhere.append(started(tenantB), modelCompleted(1))

      expect(yield* store.lineageCostUsd(tenantA.tenantId, "spender")).toBeCloseTo(links * 0.125 + 0.5, 9)
      expect(yield* store.lineageCostUsd(tenantA.tenantId, "other-root")).toBe(2)
      expect(yield* store.lineageCostUsd(tenantB.tenantId, "spender")).toBe(1)
      expect(yield* store.lineageCostUsd(tenantA.tenantId, "no-such-root")).toBe(0)
      // The sum is the runs' own costs, as listed.
      const listed = yield* store.listRuns(tenantA.tenantId, { rootRunId: "spender" })
      expect(listed.length).toBe(links + 1)
      expect(listed.reduce((sum, r) => sum + r.costUsd, 0)).toBeCloseTo(yield* store.lineageCostUsd(tenantA.tenantId, "spender"), 9)
    }))

  test("a handover retried after it committed fails with SequenceConflict: one successor, one end", (store) =>
    Effect.gen(function*() {
      const old = makeLog(store, "retried", tenantA)
      yield* old.append(started(tenantA))
      const next = makeLog(store, "retried::continued::1", tenantA, T0 + 10)
      const handover = [old.next([continued(next.runId)]), next.next([successor(old.runId, { rootRunId: old.runId })])]
      yield* store.appendAll(handover)
      expect((yield* Effect.flip(store.appendAll(handover)))._tag).toBe("SequenceConflict")
      expect((yield* store.readEvents(tenantA.tenantId, old.runId)).map((e) => e.type)).toEqual(["RunStarted", "RunContinued"])
      expect((yield* store.readEvents(tenantA.tenantId, next.runId)).map((e) => e.type)).toEqual(["RunStarted"])
      expect((yield* store.listRuns(tenantA.tenantId)).map((r) => r.runId).sort()).toEqual([old.runId, next.runId].sort())
    }))
}

/** Tenants: one run id in two tenants, another tenant's id. */
const tenancy = (test: Test): void => {
    test("the same run id in two tenants is two runs, each with its own log, head, status, cost and lineage", (store) =>
      Effect.gen(function*() {
        const a = makeLog(store, "shared-id", tenantA)
        yield* a.append(started(tenantA), modelCompleted(0.5))
        const b = makeLog(store, "shared-id", tenantB, T0 + 100)
        yield* b.append(started(tenantB, "other"))
        // Interleaved appends: each moves its own run's head only.
        yield* a.append({ _tag: "StepCompleted", name: "a", value: 1 })
        yield* b.append(modelCompleted(0.25), { _tag: "RunCompleted", output: "b done" })
        yield* a.append({ _tag: "StepCompleted", name: "a2", value: 2 })
        yield* a.append({ _tag: "PauseRequested", reason: "wait", ticket: "t" })
        // Sub-runs with one id in both tenants: lineage stays within the tenant.
        const childA = makeLog(store, "shared-id::child", tenantA, T0 + 200)
        yield* childA.append(started(tenantA, "sub", { parentRunId: a.runId, rootRunId: a.runId }))
        const childB = makeLog(store, "shared-id::child", tenantB, T0 + 300)
        yield* childB.append(started(tenantB, "sub", { parentRunId: b.runId, rootRunId: b.runId }), modelCompleted(0.125))

        expect(yield* store.readEvents(tenantA.tenantId, a.runId)).toEqual(a.events)
        expect(yield* store.readEvents(tenantB.tenantId, b.runId)).toEqual(b.events)
        expect(yield* store.readEvents(tenantB.tenantId, b.runId, 2)).toEqual(b.events.slice(1))
        expect(yield* store.getRun(tenantA.tenantId, a.runId)).toMatchObject({
          tenantId: tenantA.tenantId,
          workflow: "review",
          status: "paused",
          headSeq: 5,
          headHash: a.events[4]!.hash,
          costUsd: 0.5
        })
        expect(yield* store.getRun(tenantB.tenantId, b.runId)).toMatchObject({
          tenantId: tenantB.tenantId,
          workflow: "other",
          status: "completed",
          headSeq: 3,
          headHash: b.events[2]!.hash,
          costUsd: 0.25
        })
        expect(verifyEvents(a.runId, yield* store.readEvents(tenantA.tenantId, a.runId))).toMatchObject({ ok: true, events: 5 })
        expect(verifyEvents(b.runId, yield* store.readEvents(tenantB.tenantId, b.runId))).toMatchObject({ ok: true, events: 3 })

        const ids = (runs: ReadonlyArray<RunInfo>) => runs.map((r) => `${r.tenantId}/${r.runId}`)
        expect(ids(yield* store.listRuns(tenantA.tenantId))).toEqual(["tenant-a/shared-id::child", "tenant-a/shared-id"])
        expect(ids(yield* store.listRuns(tenantB.tenantId, { rootRunId: "shared-id" }))).toEqual(["tenant-b/shared-id::child", "tenant-b/shared-id"])
        expect(yield* store.listRuns(tenantA.tenantId, { parentRunId: "shared-id" })).toEqual([yield* store.getRun(tenantA.tenantId, childA.runId)])
        expect((yield* store.getRun(tenantB.tenantId, childB.runId)).costUsd).toBe(0.125)

        // Still one writer per run: a stale head conflicts, whatever the other tenant's head is.
        const stale = { runId: a.runId, tenantId: tenantA.tenantId, expectedSeq: 3, events: chain(a.runId, tenantA.tenantId, a.events.slice(0, 3), [{ _tag: "StepCompleted", name: "late", value: 0 }]) }
        expect(yield* Effect.flip(store.append(stale))).toMatchObject({ _tag: "SequenceConflict", expectedSeq: 3 })
        const recreate = chain(b.runId, tenantB.tenantId, [], [started(tenantB)], T0 + 900)
        expect(yield* Effect.flip(store.append({ runId: b.runId, tenantId: tenantB.tenantId, expectedSeq: 0, events: recreate })))
          .toMatchObject({ _tag: "SequenceConflict", expectedSeq: 0 })
        expect(yield* store.readEvents(tenantA.tenantId, a.runId)).toEqual(a.events)
        expect(yield* store.readEvents(tenantB.tenantId, b.runId)).toEqual(b.events)
      }))

    test("another tenant's run id behaves exactly like an id that never existed: same errors, zero rows, nothing written", (store) =>
      Effect.gen(function*() {
        const a = makeLog(store, "a-secret-run", tenantA)
        yield* a.append(started(tenantA), { _tag: "StepCompleted", name: "secret", value: "a's data" }, { _tag: "PauseRequested", reason: "wait", ticket: "t" })
        const child = makeLog(store, "a-secret-run::child", tenantA, T0 + 10)
        yield* child.append(started(tenantA, "sub", { parentRunId: a.runId, rootRunId: a.runId }))
        const never = "never-used-run"
        const B = tenantB.tenantId
        const sameFailure = <A, E>(f: (runId: string) => Effect.Effect<A, E>) =>
          Effect.gen(function*() {
            const theirs = yield* Effect.flip(f(a.runId))
            const none = yield* Effect.flip(f(never))
            expect(TenantIsolation.shape(theirs, a.runId)).toEqual(TenantIsolation.shape(none, never))
          })

        yield* sameFailure((id) => store.readEvents(B, id))
        yield* sameFailure((id) => store.readEvents(B, id, 2))
        yield* sameFailure((id) => store.getRun(B, id))
        yield* sameFailure((id) => store.getRun(B, `${id}::child`))
        // Appending after A's head, as B: the conflict of a run B never created.
        yield* sameFailure((id) =>
          store.append({ runId: id, tenantId: B, expectedSeq: 3, events: chain(id, B, a.events, [{ _tag: "RunCompleted", output: "hijacked" }]) })
        )
        // The same with events only (a tool step's batch: no status, no cost, the store's other append).
        yield* sameFailure((id) =>
          store.append({ runId: id, tenantId: B, expectedSeq: 3, events: chain(id, B, a.events, [{ _tag: "StepCompleted", name: "hijack", value: 1 }]) })
        )
        expect(yield* store.listRuns(B)).toEqual([])
        expect(yield* store.listRuns(B, { rootRunId: a.runId })).toEqual([])
        expect(yield* store.listRuns(B, { parentRunId: a.runId })).toEqual([])
        expect(yield* store.listRuns(B, { workflow: "review", status: "paused" })).toEqual([])
        expect(yield* store.readEvents(tenantA.tenantId, a.runId)).toEqual(a.events)
        expect(yield* store.getRun(tenantA.tenantId, a.runId)).toMatchObject({ status: "paused", headSeq: 3 })
      }))

    test("a run is its tenant's: a RunStarted naming another tenant, or an id holding a control character, is refused and nothing written", (store) =>
      Effect.gen(function*() {
        // A RunStarted for tenant B in tenant A's run: a kernel resuming it would act for B, with B's capabilities.
        const forB = chain("run-other", tenantA.tenantId, [], [started(tenantB)])
        const other = yield* Effect.flip(store.append({ runId: "run-other", tenantId: tenantA.tenantId, expectedSeq: 0, events: forB }))
        expect(other).toMatchObject({ _tag: "StoreError" })
        expect(String(other.message)).toContain("for tenant tenant-b")
        expect((yield* Effect.flip(store.getRun(tenantA.tenantId, "run-other")))._tag).toBe("RunNotFound")
        // Ids are joined with a NUL into keys: "tenant-a\u0000x" with run "r" would spell "tenant-a" with run "x\u0000r".
        for (const [tenantId, runId] of [[`${tenantA.tenantId}\u0000x`, "r"], [tenantA.tenantId, "x\u0000r"], [tenantA.tenantId, "tab\tr"]] as const) {
          const events = chain(runId, tenantId, [], [started(tenantA)])
          const refused = yield* Effect.flip(store.append({ runId, tenantId, expectedSeq: 0, events }))
          expect(refused).toMatchObject({ _tag: "StoreError" })
          expect(String(refused.message)).toContain("holds a control character")
        }
        expect(yield* store.listRuns(tenantA.tenantId)).toEqual([])
      }))
}

/** Fencing, and batches written whole or not at all. */
const fencingAndBatches = (test: Test): void => {
    test("an owner fenced by a newer claim appends nothing, whatever its batch; the claim raises the owner epoch", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-fenced", tenantA)
        const epoch = () => Effect.map(store.getRun(tenantA.tenantId, log.runId), (run) => run.ownerEpoch)
        yield* log.appendAs({ ownerEpoch: 1 }, started(tenantA))
        expect(yield* epoch()).toBe(1)
        // The first owner writes every kind of batch: events only, a cost, a status change.
        yield* log.appendAs({ ownerEpoch: 1 }, { _tag: "StepCompleted", name: "a", value: 1 })
        yield* log.appendAs({ ownerEpoch: 1 }, modelCompleted(0.5))
        // A claimer that read epoch 0 lost the race for epoch 1 (a conflict, as of any two writers); one for 2 claims.
        const early = yield* Effect.flip(log.appendAs({ ownerEpoch: 1, claim: true }, { _tag: "RunResumed", reason: "takeover" }))
        expect(early).toMatchObject({ _tag: "SequenceConflict", runId: log.runId })
        yield* log.appendAs({ ownerEpoch: 2, claim: true }, { _tag: "RunResumed", reason: "takeover" })
        expect(yield* epoch()).toBe(2)
        const before = yield* store.getRun(tenantA.tenantId, log.runId)

        // The first owner, at the right head (it even knows the claim's seq), is refused every kind of batch.
        const stale: ReadonlyArray<ReadonlyArray<EventPayload>> = [
          [{ _tag: "ToolRequested", tool: "charge", arguments: "{}", idempotencyKey: "k" }],
          [modelCompleted(0.25)],
          [{ _tag: "RunCompleted", output: "stale" }],
          [{ _tag: "RunResumed", reason: "again" }],
          Array.from({ length: 1_500 }, (_, i): EventPayload => ({ _tag: "StepCompleted", name: `s${i}`, value: i }))
        ]
        for (const payloads of stale) {
          const refused = yield* Effect.flip(store.append({ ...log.next(payloads), ownerEpoch: 1 }))
          expect(refused).toMatchObject({ _tag: "OwnershipLost", runId: log.runId, ownerEpoch: 1 })
          expect(refused.message).toContain("owner epoch 2")
        }
        // Behind the head as well: the newer owner is named, not a bare conflict.
        const late = chain(log.runId, tenantA.tenantId, log.events.slice(0, 2), [{ _tag: "StepCompleted", name: "late", value: 0 }])
        const refusedBehind = yield* Effect.flip(store.append({ runId: log.runId, tenantId: tenantA.tenantId, expectedSeq: 2, events: late, ownerEpoch: 1 }))
        expect(refusedBehind._tag).toBe("OwnershipLost")
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
        expect(yield* store.getRun(tenantA.tenantId, log.runId)).toEqual(before)

        // The new owner goes on; a large claim is written whole and claims once.
        yield* log.appendAs({ ownerEpoch: 2 }, { _tag: "StepCompleted", name: "b", value: 2 })
        yield* log.appendAs(
          { ownerEpoch: 3, claim: true },
          { _tag: "RunResumed", reason: "takeover" },
          ...Array.from({ length: 1_200 }, (_, i): EventPayload => ({ _tag: "StepCompleted", name: `c${i}`, value: i }))
        )
        expect(yield* epoch()).toBe(3)
        // A writer that is not an execution of the run (no epoch) is not fenced.
        yield* log.append({ _tag: "RunCompleted", output: "done" })
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
        expect(yield* store.getRun(tenantA.tenantId, log.runId)).toMatchObject({ status: "completed", ownerEpoch: 3, headSeq: log.events.length })
      }))

    test("a new run's first batch must start with RunStarted", (store) =>
      Effect.gen(function*() {
        const events = chain("run-headless", tenantA.tenantId, [], [{ _tag: "StepCompleted", name: "a", value: 1 }])
        const error = yield* Effect.flip(store.append({ runId: "run-headless", tenantId: tenantA.tenantId, expectedSeq: 0, events }))
        expect(error._tag).toBe("SequenceConflict")
        expect((yield* Effect.flip(store.getRun(tenantA.tenantId, "run-headless")))._tag).toBe("RunNotFound")
      }))

    test("a conflicting append writes nothing: no partial batch, no status or cost change", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-atomic", tenantA)
        yield* log.append(started(tenantA), modelCompleted(0.5))
        const stale = log.next([modelCompleted(0.25), { _tag: "StepCompleted", name: "lost", value: null }, { _tag: "RunCompleted", output: "lost" }])
        yield* log.append({ _tag: "StepCompleted", name: "won", value: true })
        const before = yield* store.getRun(tenantA.tenantId, log.runId)

        expect((yield* Effect.flip(store.append(stale)))._tag).toBe("SequenceConflict")
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
        const after = yield* store.getRun(tenantA.tenantId, log.runId)
        expect(after).toEqual(before)
        expect(after).toMatchObject({ status: "running", costUsd: 0.5, headSeq: 3, headHash: log.events[2]!.hash })

        // The losing writer of a new run leaves the winner's batch whole.
        const loser = chain(log.runId, tenantA.tenantId, [], [started(tenantA, "loser"), modelCompleted(1), { _tag: "RunCompleted", output: 1 }])
        expect((yield* Effect.flip(store.append({ runId: log.runId, tenantId: tenantA.tenantId, expectedSeq: 0, events: loser })))._tag)
          .toBe("SequenceConflict")
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
        expect(yield* store.getRun(tenantA.tenantId, log.runId)).toEqual(before)
      }))

    test("a batch of thousands of events (a new run, then more) is written whole, or not at all", (store) =>
      Effect.gen(function*() {
        const steps = (n: number, from: number): Array<EventPayload> =>
          Array.from({ length: n }, (_, i) => ({ _tag: "StepCompleted", name: `s${from + i}`, value: from + i }))
        const log = makeLog(store, "run-large", tenantA)
        yield* log.append(started(tenantA), ...steps(2_400, 0), modelCompleted(0.5))
        const stale = log.next([...steps(2_100, 2_400), modelCompleted(0.25), { _tag: "RunCompleted", output: "late" }])
        yield* log.append(...steps(1_500, 2_400), modelCompleted(0.25), { _tag: "RunCompleted", output: "done" })
        const before = yield* store.getRun(tenantA.tenantId, log.runId)
        expect(before).toMatchObject({ status: "completed", costUsd: 0.75, headSeq: 3_904, headHash: log.events[3_903]!.hash })

        expect((yield* Effect.flip(store.append(stale)))._tag).toBe("SequenceConflict")
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
        expect(yield* store.getRun(tenantA.tenantId, log.runId)).toEqual(before)
      }))

    test("an empty batch is a no-op", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-empty", tenantA)
        yield* log.append(started(tenantA))
        yield* store.append({ runId: log.runId, tenantId: tenantA.tenantId, expectedSeq: 1, events: [] })
        expect(yield* store.readEvents(tenantA.tenantId, log.runId)).toEqual(log.events)
      }))

}

/** Unknown runs, tenant isolation of reads and writes, the run record. */
const runRecords = (test: Test): void => {
    test("unknown runs are RunNotFound", (store) =>
      Effect.gen(function*() {
        expect(yield* Effect.flip(store.readEvents(tenantA.tenantId, "nope"))).toMatchObject({
          _tag: "RunNotFound",
          runId: "nope",
          tenantId: tenantA.tenantId
        })
        expect(yield* Effect.flip(store.getRun(tenantA.tenantId, "nope"))).toMatchObject({ _tag: "RunNotFound", runId: "nope" })
        expect(yield* store.listRuns(tenantA.tenantId)).toEqual([])
      }))

    test("a tenant never sees, nor writes to, another tenant's run", (store) =>
      Effect.gen(function*() {
        const a = makeLog(store, "run-of-a", tenantA)
        yield* a.append(started(tenantA), { _tag: "StepCompleted", name: "secret", value: "a's data" })
        const b = makeLog(store, "run-of-b", tenantB, T0 + 100)
        yield* b.append(started(tenantB))

        expect(yield* Effect.flip(store.readEvents(tenantB.tenantId, a.runId))).toMatchObject({
          _tag: "RunNotFound",
          runId: a.runId,
          tenantId: tenantB.tenantId
        })
        expect(yield* Effect.flip(store.readEvents(tenantB.tenantId, a.runId, 2))).toMatchObject({ _tag: "RunNotFound" })
        expect(yield* Effect.flip(store.readEvents(tenantB.tenantId, a.runId, 1, 10))).toMatchObject({ _tag: "RunNotFound" })
        expect(yield* Effect.flip(Stream.runDrain(EventStore.stream(store, tenantB.tenantId, a.runId)))).toMatchObject({ _tag: "RunNotFound" })
        expect(yield* Effect.flip(store.getRun(tenantB.tenantId, a.runId))).toMatchObject({ _tag: "RunNotFound", runId: a.runId })
        expect((yield* store.listRuns(tenantB.tenantId)).map((r) => r.runId)).toEqual([b.runId])
        expect((yield* store.listRuns(tenantB.tenantId, { rootRunId: a.runId })).length).toBe(0)
        expect((yield* store.listRuns(tenantA.tenantId)).map((r) => r.runId)).toEqual([a.runId])

        // Appending at the right head but as the wrong tenant is refused and writes nothing.
        const intrusion = chain(a.runId, tenantB.tenantId, a.events, [{ _tag: "RunCompleted", output: "hijacked" }])
        const refused = yield* Effect.flip(store.append({ runId: a.runId, tenantId: tenantB.tenantId, expectedSeq: 2, events: intrusion }))
        expect(refused._tag).toBe("SequenceConflict")
        expect(yield* store.readEvents(tenantA.tenantId, a.runId)).toEqual(a.events)
        expect((yield* store.getRun(tenantA.tenantId, a.runId)).status).toBe("running")
      }))

    test("the run row follows the log: head, status and cost from summarize", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "run-status", tenantA)
        yield* log.append(started(tenantA), modelCompleted(0.25))
        const expected: RunInfo = {
          runId: log.runId,
          tenantId: tenantA.tenantId,
          workflow: "review",
          rootRunId: log.runId,
          status: "running",
          headSeq: 2,
          headHash: log.events[1]!.hash,
          costUsd: 0.25,
          createdAt: T0 + 1,
          updatedAt: T0 + 2,
          ownerEpoch: 0,
          version: "1"
        }
        const created = yield* store.getRun(tenantA.tenantId, log.runId)
        expect(created).toEqual(expected)
        expect("parentRunId" in created).toBe(false)

        const expectRun = (fields: Partial<RunInfo>) =>
          Effect.map(store.getRun(tenantA.tenantId, log.runId), (run) => {
            const last = log.events[log.events.length - 1]!
            expect(run).toEqual({ ...expected, headSeq: last.seq, headHash: last.hash, updatedAt: last.timestamp, ...fields })
          })

        yield* log.append(modelCompleted(0.5), modelCompleted(0.125))
        yield* expectRun({ costUsd: 0.875 })
        yield* log.append({ _tag: "PauseRequested", reason: "approve", ticket: "t-1" })
        yield* expectRun({ status: "paused", costUsd: 0.875 })
        yield* log.append({ _tag: "HumanResponded", ticket: "t-1", payload: true })
        yield* expectRun({ status: "running", costUsd: 0.875 })
        yield* log.append({ _tag: "ToolRequested", tool: "notify", arguments: "{}", idempotencyKey: "k" }, {
          _tag: "ReconciliationRequired",
          tool: "notify",
          idempotencyKey: "k"
        })
        yield* expectRun({ status: "needs_reconciliation", costUsd: 0.875 })
        yield* log.append({ _tag: "ToolCompleted", tool: "notify", result: "sent", reconciled: true })
        yield* expectRun({ status: "running", costUsd: 0.875 })
        // Within one batch the last status-changing event wins; costs add up across the batch.
        yield* log.append({ _tag: "PauseRequested", reason: "x", ticket: "t-2" }, modelCompleted(0.1), { _tag: "RunCompleted", output: { ok: true } })
        const done = yield* store.getRun(tenantA.tenantId, log.runId)
        expect(done.status).toBe("completed")
        expect(done.costUsd).toBeCloseTo(0.975, 12)

        const failed = makeLog(store, "run-failed", tenantA, T0 + 500)
        yield* failed.append(started(tenantA), modelCompleted(0.1), modelCompleted(0.2), { _tag: "RunFailed", errorTag: "ToolError", error: "boom" })
        const failedRun = yield* store.getRun(tenantA.tenantId, failed.runId)
        expect(failedRun.status).toBe("failed")
        expect(failedRun.costUsd).toBeCloseTo(0.3, 12)
      }))

}

/** `listRunsPage` against `listRuns`, a page at a time, under every filter. */
const pagesUnderEveryFilter = (store: Service) =>
  Effect.gen(function*() {
    // Created in this order; "tie-*" in one millisecond (their ids sort as they were created, the order every
    // store gives runs of one millisecond), one run of another tenant in the middle of them.
    const specs: ReadonlyArray<readonly [string, number, string, ReadonlyArray<EventPayload>]> = [
      ["old-1", 1000, "alpha", [{ _tag: "RunCompleted", output: null }]],
      ["old-2", 2000, "beta", []],
      ["tie-a", 3000, "alpha", [{ _tag: "RunCompleted", output: null }]],
      ["tie-b", 3000, "beta", [{ _tag: "RunCompleted", output: null }]],
      ["tie-c", 3000, "alpha", []],
      ["tie-d", 3000, "alpha", [{ _tag: "RunCompleted", output: null }]],
      ["new-1", 4000, "beta", [{ _tag: "RunCompleted", output: null }]],
      ["new-2", 5000, "alpha", []]
    ]
    for (const [runId, at, workflow, more] of specs) {
      if (runId === "tie-c") yield* makeLog(store, "tie-x", tenantB, T0 + at).append(started(tenantB, "alpha"))
      yield* makeLog(store, runId, tenantA, T0 + at).append(started(tenantA, workflow), ...more)
    }
    const ids = (runs: ReadonlyArray<RunInfo>) => runs.map((r) => r.runId)
    const walk = (filter: EventStore.ListRunsFilter, limit: number) =>
      Effect.gen(function*() {
        const pages: Array<ReadonlyArray<string>> = []
        let after: string | undefined
        do {
          const page = yield* store.listRunsPage(tenantA.tenantId, { ...filter, limit, after })
          pages.push(ids(page.runs))
          after = page.next
        } while (after !== undefined && pages.length < 20)
        return pages
      })
    expect(ids(yield* store.listRuns(tenantA.tenantId))).toEqual(["new-2", "new-1", "tie-a", "tie-b", "tie-c", "tie-d", "old-2", "old-1"])
    expect(yield* walk({}, 3)).toEqual([["new-2", "new-1", "tie-a"], ["tie-b", "tie-c", "tie-d"], ["old-2", "old-1"]])
    // A cursor between two runs of one millisecond, and a last page that is full: no cursor after it.
    expect(yield* walk({}, 4)).toEqual([["new-2", "new-1", "tie-a", "tie-b"], ["tie-c", "tie-d", "old-2", "old-1"]])
    expect(yield* walk({}, 1)).toEqual(ids(yield* store.listRuns(tenantA.tenantId)).map((id) => [id]))
    expect(yield* store.listRunsPage(tenantA.tenantId)).toEqual({ runs: yield* store.listRuns(tenantA.tenantId) })
    const filters: ReadonlyArray<EventStore.ListRunsFilter> = [
      { status: "completed" },
      { workflow: "alpha" },
      { workflow: "alpha", status: "completed" },
      { createdSince: T0 + 2001, createdUntil: T0 + 4001 },
      { status: "running", createdSince: T0 + 3001 },
      { workflow: "beta", createdUntil: T0 + 5000 }
    ]
    for (const filter of filters) {
      const all = ids(yield* store.listRuns(tenantA.tenantId, filter))
      expect((yield* walk(filter, 2)).flat()).toEqual(all)
      expect((yield* walk(filter, 1)).length).toBe(Math.max(1, all.length))
    }
    expect(ids(yield* store.listRuns(tenantA.tenantId, { createdSince: T0 + 2001, createdUntil: T0 + 4001 }))).toEqual(["tie-a", "tie-b", "tie-c", "tie-d", "old-2"])
    expect(ids(yield* store.listRuns(tenantA.tenantId, { workflow: "alpha", status: "completed" }))).toEqual(["tie-a", "tie-d", "old-1"])

    // A page is a place in the order, not an offset: runs created after the first page was read do not shift the
    // pages after it.
    const first = yield* store.listRunsPage(tenantA.tenantId, { limit: 3 })
    yield* makeLog(store, "newest", tenantA, T0 + 9000).append(started(tenantA, "alpha"))
    const second = yield* store.listRunsPage(tenantA.tenantId, { limit: 3, after: first.next })
    expect(ids(second.runs)).toEqual(["tie-b", "tie-c", "tie-d"])
    // The cursor is the tenant's: another tenant's listing from it holds only that tenant's runs (whether its run of the
    // same millisecond comes after a run it does not have is the store's own order).
    const fromOthers = (yield* store.listRunsPage(tenantB.tenantId, { after: first.next })).runs
    expect(fromOthers.every((r) => r.tenantId === tenantB.tenantId && r.runId === "tie-x")).toBe(true)

    // The cursor says where the page ended and nothing else: the last run's creation time and id, never a store-wide
    // counter (SQLite's rowid told a tenant how many runs every tenant made between two of its pages).
    const [version, body] = (first.next ?? "").split(".")
    expect(version).toBe("r2")
    const last = first.runs[first.runs.length - 1]
    expect(JSON.parse(Buffer.from(body ?? "", "base64url").toString("utf8"))).toEqual([last?.createdAt, last?.runId])

    for (const bad of ["", "page-2", "r2.!!!", "r2.bm90IGpzb24", `r2.${Buffer.from("[1,2,3]").toString("base64url")}`, `r2.${Buffer.from("[1,2]").toString("base64url")}`]) {
      const error = yield* Effect.flip(store.listRunsPage(tenantA.tenantId, { after: bad, limit: 2 }))
      expect(error._tag).toBe("InvalidInput")
      expect(error.message).toContain("cursor")
    }
    // A cursor an older version gave out (it held the store's own tie-breaker) is refused, saying so.
    const older = yield* Effect.flip(store.listRunsPage(tenantA.tenantId, { after: `r1.${Buffer.from("[1,2]").toString("base64url")}` }))
    expect(older.message).toContain("older version")
  })

/** Listing runs. */
const listing = (test: Test): void => {
    test("listRuns filters by status, workflow and lineage, newest first, within a limit", (store) =>
      Effect.gen(function*() {
        const root = makeLog(store, "root", tenantA, T0 + 1000)
        yield* root.append(started(tenantA, "alpha"))
        const done = makeLog(store, "done", tenantA, T0 + 2000)
        yield* done.append(started(tenantA, "beta"), { _tag: "RunCompleted", output: null })
        const paused = makeLog(store, "paused", tenantA, T0 + 3000)
        yield* paused.append(started(tenantA, "alpha"), { _tag: "PauseRequested", reason: "wait", ticket: "t" })
        const child = makeLog(store, "root::sub_agent::a", tenantA, T0 + 4000)
        yield* child.append(started(tenantA, "sub", { parentRunId: root.runId, rootRunId: root.runId }))
        const grandchild = makeLog(store, "root::sub_agent::a::sub_agent::b", tenantA, T0 + 5000)
        yield* grandchild.append(started(tenantA, "sub", { parentRunId: child.runId, rootRunId: root.runId }))
        const other = makeLog(store, "other-tenant-root", tenantB, T0 + 6000)
        yield* other.append(started(tenantB, "alpha"))

        const ids = (runs: ReadonlyArray<RunInfo>) => runs.map((r) => r.runId)
        const list = (filter?: ListRunsFilter) => Effect.map(store.listRuns(tenantA.tenantId, filter), ids)

        expect(yield* list()).toEqual([grandchild.runId, child.runId, paused.runId, done.runId, root.runId])
        expect(yield* list({ status: "completed" })).toEqual([done.runId])
        expect(yield* list({ status: "paused" })).toEqual([paused.runId])
        expect(yield* list({ status: "failed" })).toEqual([])
        expect(yield* list({ workflow: "alpha" })).toEqual([paused.runId, root.runId])
        expect(yield* list({ workflow: "alpha", status: "running" })).toEqual([root.runId])
        expect(yield* list({ parentRunId: root.runId })).toEqual([child.runId])
        expect(yield* list({ parentRunId: child.runId })).toEqual([grandchild.runId])
        expect(yield* list({ rootRunId: root.runId })).toEqual([grandchild.runId, child.runId, root.runId])
        expect(yield* list({ rootRunId: root.runId, limit: 2 })).toEqual([grandchild.runId, child.runId])
        expect(yield* list({ limit: 1 })).toEqual([grandchild.runId])
        expect(yield* list({ limit: 0 })).toEqual([])
        expect(ids(yield* store.listRuns(tenantB.tenantId, { workflow: "alpha" }))).toEqual([other.runId])

        const [listedChild] = yield* store.listRuns(tenantA.tenantId, { parentRunId: root.runId })
        expect(listedChild).toEqual(yield* store.getRun(tenantA.tenantId, child.runId))
        expect(listedChild).toMatchObject({ parentRunId: root.runId, rootRunId: root.runId, workflow: "sub", createdAt: T0 + 4001 })
      }))

    test("lastEvent finds a run's last event that matches, reading back from the head (or from a seq) a page at a time", (store) =>
      Effect.gen(function*() {
        const log = makeLog(store, "tail", tenantA)
        const payloads: Array<EventPayload> = [started(tenantA)]
        for (let i = 2; i <= 250; i++) payloads.push(i % 100 === 0 ? { _tag: "PauseRequested", reason: `p${i}`, ticket: `t${i}` } : { _tag: "StepCompleted", name: `s${i}`, value: i })
        yield* log.append(...payloads)
        const paused = (e: Event) => e.payload._tag === "PauseRequested"
        expect((yield* EventStore.lastEvent(store, tenantA.tenantId, "tail", paused))?.seq).toBe(200)
        expect((yield* EventStore.lastEvent(store, tenantA.tenantId, "tail", paused, { pageSize: 7 }))?.seq).toBe(200)
        expect((yield* EventStore.lastEvent(store, tenantA.tenantId, "tail", paused, { throughSeq: 199, pageSize: 30 }))?.seq).toBe(100)
        expect((yield* EventStore.lastEvent(store, tenantA.tenantId, "tail", (e) => e.seq === 1, { pageSize: 64 }))?.payload._tag).toBe("RunStarted")
        expect(yield* EventStore.lastEvent(store, tenantA.tenantId, "tail", (e) => e.payload._tag === "RunFailed")).toBeUndefined()
        expect((yield* Effect.flip(EventStore.lastEvent(store, tenantB.tenantId, "tail", paused)))._tag).toBe("RunNotFound")
      }))

    test("listRunsPage walks every run a page at a time with its cursor, in listRuns' order (newest first, ties in creation order), under every filter", (store) => pagesUnderEveryFilter(store))

    test("listRunsPage keeps the runs that cost at least minCostUsd, paged with the other filters", (store) =>
      Effect.gen(function*() {
        const specs: ReadonlyArray<readonly [string, number, ReadonlyArray<number>]> = [
          ["free", 1000, []],
          ["cheap", 2000, [0.01]],
          ["dear", 3000, [0.25, 0.5]],
          ["mid", 4000, [0.125]],
          ["dearer", 5000, [1]]
        ]
        for (const [runId, at, costs] of specs) {
          yield* makeLog(store, runId, tenantA, T0 + at).append(started(tenantA, "alpha"), ...costs.map(modelCompleted))
        }
        yield* makeLog(store, "other", tenantB, T0 + 6000).append(started(tenantB, "alpha"), modelCompleted(5))
        const ids = (runs: ReadonlyArray<RunInfo>) => runs.map((r) => r.runId)
        expect(ids(yield* store.listRuns(tenantA.tenantId, { minCostUsd: 0.1 }))).toEqual(["dearer", "mid", "dear"])
        const first = yield* store.listRunsPage(tenantA.tenantId, { minCostUsd: 0.1, limit: 2 })
        expect(ids(first.runs)).toEqual(["dearer", "mid"])
        expect(ids((yield* store.listRunsPage(tenantA.tenantId, { minCostUsd: 0.1, limit: 2, after: first.next })).runs)).toEqual(["dear"])
        expect(ids(yield* store.listRuns(tenantA.tenantId, { minCostUsd: 0 }))).toEqual(["dearer", "mid", "dear", "cheap", "free"])
        expect(ids(yield* store.listRuns(tenantA.tenantId, { minCostUsd: 0.01, createdUntil: T0 + 4000 }))).toEqual(["dear", "cheap"])
      }))
}

/** Another tenant's run ids through the kernel: resume, reconcile, verify and replay see none of them; execute starts its own. */
const tenantIsolation = (makeLayer: () => Layer.Layer<EventStore.EventStore, unknown>) => {
  let crash = true
  const calls: Array<string> = []
  const charge = Tool.make({
    name: "charge",
    description: "Charges a card (not idempotent)",
    parameters: Schema.Struct({ cents: Schema.Number }),
    handler: ({ cents }, ctx) =>
      Effect.suspend(() => {
        calls.push(`${ctx.tenant.tenantId}:${ctx.idempotencyKey}`)
        // The process dying mid-handler: the execution stops with no outcome written.
        return crash ? Effect.interrupt : Effect.succeed(cents)
      })
  })
  const approval = Workflow.make({
    name: "approval",
    input: Schema.Null,
    output: Schema.String,
    run: (_input, ctx) =>
      Effect.gen(function*() {
        const who = yield* ctx.step("who", Effect.succeed(ctx.tenant.tenantId), Schema.String)
        const approved = yield* ctx.pauseForHuman({ reason: "approve", schema: Schema.Boolean })
        return `${who} ${approved ? "approved" : "rejected"}`
      })
  })
  const payment = Workflow.make({ name: "payment", input: Schema.Null, output: Schema.Number, run: (_input, ctx) => ctx.tool(charge, { cents: 5 }) })
  const kernelLayer = Layer.provideMerge(
    Kernel.layer({ workflows: [approval, payment] }),
    Layer.mergeAll(makeLayer(), ScriptedModel.layer([]), ToolRegistry.layer([charge]))
  )
  return Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const A = tenantA.tenantId
    const B = tenantB.tenantId
    expect(yield* kernel.execute(approval, { runId: "shared-approval", tenant: tenantA, input: null })).toMatchObject({ status: "paused" })
    expect((yield* Effect.exit(kernel.execute(payment, { runId: "shared-payment", tenant: tenantA, input: null })))._tag).toBe("Failure")
    crash = false
    expect(yield* kernel.execute(payment, { runId: "shared-payment", tenant: tenantA, input: null })).toMatchObject({ status: "needs_reconciliation" })

    const sameFailure = <X, E>(id: string, f: (runId: string) => Effect.Effect<X, E>) =>
      Effect.gen(function*() {
        const never = `never-${id}`
        const theirs = yield* Effect.flip(f(id))
        const none = yield* Effect.flip(f(never))
        expect(TenantIsolation.shape(theirs, id)).toEqual(TenantIsolation.shape(none, never))
      })
    for (const id of ["shared-approval", "shared-payment"]) {
      yield* sameFailure(id, (runId) => kernel.resume({ tenantId: B, runId, response: true }))
      yield* sameFailure(id, (runId) => kernel.reconcile({ tenantId: B, runId, stepKey: "tool:0", outcome: { ok: true, result: 5 } }))
      yield* sameFailure(id, (runId) => kernel.reconcile({ tenantId: B, runId, outcome: { ok: false, error: "did not happen" } }))
      yield* sameFailure(id, (runId) => kernel.verify({ tenantId: B, runId }))
      yield* sameFailure(id, (runId) => kernel.replay(approval, { tenantId: B, runId }))
      yield* sameFailure(id, (runId) => kernel.replay(payment, { tenantId: B, runId }))
    }
    expect(calls).toEqual([`${A}:shared-payment/tool:0`])

    // B's execute with A's ids starts B's own runs, which A's never see.
    expect(yield* kernel.execute(approval, { runId: "shared-approval", tenant: tenantB, input: null })).toMatchObject({ status: "paused" })
    expect(yield* kernel.resume({ tenantId: B, runId: "shared-approval", response: true }))
      .toEqual({ status: "completed", runId: "shared-approval", output: `${B} approved` })
    expect(yield* kernel.execute(payment, { runId: "shared-payment", tenant: tenantB, input: null }))
      .toEqual({ status: "completed", runId: "shared-payment", output: 5 })
    expect(calls).toEqual([`${A}:shared-payment/tool:0`, `${B}:shared-payment/tool:0`])

    // A's runs are where A left them, and finish as A decides.
    expect(yield* kernel.resume({ tenantId: A, runId: "shared-approval", response: false }))
      .toEqual({ status: "completed", runId: "shared-approval", output: `${A} rejected` })
    yield* kernel.reconcile({ tenantId: A, runId: "shared-payment", stepKey: "tool:0", outcome: { ok: true, result: 7 } })
    expect(yield* kernel.execute(payment, { runId: "shared-payment", tenant: tenantA, input: null }))
      .toEqual({ status: "completed", runId: "shared-payment", output: 7 })
    expect(calls).toHaveLength(2)
    for (const tenantId of [A, B]) {
      for (const runId of ["shared-approval", "shared-payment"]) {
        expect(yield* kernel.verify({ tenantId, runId })).toMatchObject({ ok: true })
      }
    }
  }).pipe(Effect.provide(kernelLayer))
}

/** The kernel over the store: what a tenant may do with another tenant's run id. */
const kernelOverStore = (name: string, makeLayer: () => Layer.Layer<EventStore.EventStore, unknown>): void => {
  describe(`Kernel over the EventStore: ${name}`, () => {
    it.effect("a workflow that continues as new runs as a chain: each run's end and its successor's start in one commit", () => {
      const ran: Array<number> = []
      const chained = Workflow.make({
        name: "chained",
        input: Schema.Number,
        output: Schema.String,
        run: (n, ctx) =>
          Effect.gen(function*() {
            yield* ctx.step("work", Effect.sync(() => ran.push(n)), Schema.Number)
            return n < 2 ? yield* ctx.continueAsNew(n + 1) : `done after ${n + 1} runs`
          })
      })
      const kernelLayer = Layer.provideMerge(Kernel.layer({ workflows: [chained] }), Layer.mergeAll(makeLayer(), ScriptedModel.layer([]), ToolRegistry.layer([])))
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const store = yield* EventStore.EventStore
        const last = "chain-a::continued::2"
        const done = { status: "completed", runId: last, output: "done after 3 runs" }
        expect(yield* kernel.execute(chained, { runId: "chain-a", tenant: tenantA, input: 0 })).toEqual(done)
        expect(ran).toEqual([0, 1, 2])
        const runs = yield* store.listRuns(tenantA.tenantId, { rootRunId: "chain-a" })
        expect(runs.map((r) => `${r.runId}:${r.status}`).sort()).toEqual(["chain-a:continued", "chain-a::continued::1:continued", `${last}:completed`].sort())
        for (const r of runs) expect(yield* kernel.verify({ tenantId: tenantA.tenantId, runId: r.runId })).toMatchObject({ ok: true })
        expect(yield* kernel.resume({ tenantId: tenantA.tenantId, runId: "chain-a" })).toEqual(done)
        expect(yield* kernel.replay(chained, { tenantId: tenantA.tenantId, runId: "chain-a" })).toEqual(done)
        expect(ran).toEqual([0, 1, 2])
      }).pipe(Effect.provide(kernelLayer))
    })

    it.effect("the budget counts every predecessor's spend: a chain of continued runs is stopped by what the whole chain spent", () => {
      // Each run's model call costs $0.15 (a million input tokens of gpt-4o-mini); the budget allows $1.
      const budget = TenantContext.make({ tenantId: tenantA.tenantId, capabilities: [], budgetUsdLimit: 1 })
      const spender = Workflow.make({
        name: "spender",
        input: Schema.Number,
        output: Schema.Number,
        run: (n, ctx) =>
          Effect.gen(function*() {
            yield* ctx.chat({ messages: [{ role: "user", content: `call ${n}` }] })
            return n < 20 ? yield* ctx.continueAsNew(n + 1) : n
          })
      })
      const reply = ScriptedModel.text("ok", { usage: { inputTokens: 1_000_000, outputTokens: 0 } })
      const kernelLayer = Layer.provideMerge(
        Kernel.layer({ workflows: [spender] }),
        Layer.mergeAll(makeLayer(), ScriptedModel.layer(Array.from({ length: 20 }, () => reply), { model: "gpt-4o-mini" }), ToolRegistry.layer([]))
      )
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const store = yield* EventStore.EventStore
        const failed = yield* Effect.flip(kernel.execute(spender, { runId: "spend", tenant: budget, input: 0 }))
        expect(failed._tag).toBe("BudgetExceeded")
        // Six runs spent $0.90; the seventh's call passed $1 with what its six predecessors spent, not with its own $0.15.
        const runs = yield* store.listRuns(tenantA.tenantId, { rootRunId: "spend" })
        expect(runs.map((r) => r.status).sort()).toEqual([...Array.from({ length: 6 }, () => "continued"), "failed"].sort())
        const last = yield* store.getRun(tenantA.tenantId, "spend::continued::6")
        expect(last).toMatchObject({ status: "failed" })
        expect(last.costUsd).toBeCloseTo(0.15, 9)
        expect(yield* store.lineageCostUsd(tenantA.tenantId, "spend")).toBeCloseTo(1.05, 9)
      }).pipe(Effect.provide(kernelLayer))
    })

    it.effect("as another tenant, resume, reconcile, verify and replay of a run id fail as for an id that never existed; executing that id starts the tenant's own run", () => tenantIsolation(makeLayer))
  })
}

/** Workflow versions (issue 19): the row keeps its RunStarted's version; listing and counting by version. */
const versions = (test: Test) =>
  describe("versions", () => {
    test("a run's row keeps the version its RunStarted records (\"1\" without one); listRuns filters by it; versionCounts counts runs in flight", (store) =>
      Effect.gen(function*() {
        const v = (version: string | undefined, tenant = tenantA, workflow = "review"): EventPayload => {
          const payload = started(tenant, workflow)
          return payload._tag === "RunStarted" && version !== undefined ? { ...payload, version } : payload
        }
        yield* makeLog(store, "old", tenantA, T0).append(v(undefined))
        yield* makeLog(store, "v2-running", tenantA, T0 + 10).append(v("2"))
        const done = makeLog(store, "v2-done", tenantA, T0 + 20)
        yield* done.append(v("2"))
        yield* done.append({ _tag: "RunCompleted", output: null })
        yield* makeLog(store, "v2-paused", tenantA, T0 + 30).append(v("2"), { _tag: "PauseRequested", reason: "ok?", ticket: "t" })
        yield* makeLog(store, "other-workflow", tenantA, T0 + 40).append(v("2", tenantA, "triage"))
        yield* makeLog(store, "b-v3", tenantB, T0 + 50).append(v("3", tenantB))
        expect((yield* store.getRun(tenantA.tenantId, "old")).version).toBe("1")
        expect((yield* store.getRun(tenantA.tenantId, "v2-done")).version).toBe("2")
        const listed = yield* store.listRuns(tenantA.tenantId, { version: "2", workflow: "review" })
        expect(listed.map((r) => r.runId)).toEqual(["v2-paused", "v2-done", "v2-running"])
        const page = yield* store.listRunsPage(tenantA.tenantId, { version: "1", limit: 10 })
        expect(page.runs.map((r) => r.runId)).toEqual(["old"])
        expect(yield* store.versionCounts({ tenantId: tenantA.tenantId })).toEqual([
          { workflow: "review", version: "1", runs: 1, inFlight: 1, lastCreatedAt: T0 + 1 },
          { workflow: "review", version: "2", runs: 3, inFlight: 2, lastCreatedAt: T0 + 31 },
          { workflow: "triage", version: "2", runs: 1, inFlight: 1, lastCreatedAt: T0 + 41 }
        ])
        // Every tenant's, for an operator; and one workflow's.
        const all = yield* store.versionCounts()
        expect(all.map((c) => `${c.workflow}@${c.version}:${c.inFlight}/${c.runs}`)).toEqual(["review@1:1/1", "review@2:2/3", "review@3:1/1", "triage@2:1/1"])
        expect((yield* store.versionCounts({ workflow: "triage" })).map((c) => c.version)).toEqual(["2"])
      }))
  })

/**
 * Registers the contract tests for the store that `makeLayer` builds. `makeLayer` is called once per test.
 */
export const suite = (name: string, makeLayer: () => Layer.Layer<EventStore.EventStore, unknown>): void => {
  const test: Test = (title, body) => it.effect(title, () => Effect.provide(Effect.flatMap(EventStore.EventStore, body), makeLayer()))

  describe(`EventStore contract: ${name}`, () => {
    readsAndConflicts(test)
    tenancy(test)
    fencingAndBatches(test)
    runRecords(test)
    listing(test)
    handover(test)
    versions(test)
  })
  kernelOverStore(name, makeLayer)
}
