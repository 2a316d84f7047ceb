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
import type { EventPayload } from "./Event.js"
import * as EventStore from "./EventStore.js"
import * as Kernel from "./Kernel.js"
import * as ScriptedModel from "./ScriptedModel.js"
import { TenantContext } from "./Tenant.js"
import { chain } from "./TestLog.js"
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

export const suite = (name: string, makeLayer: () => Layer.Layer<EventStore.EventStore, unknown>): void => {
  describe(`fork over the EventStore: ${name}`, () => {
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
