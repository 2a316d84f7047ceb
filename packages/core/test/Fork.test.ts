// Forks (`Kernel.fork`) on the in-memory store: overrides that change what follows; refused overrides; tenancy;
// idempotence and spend. The fork at every event of a run is core's ForkSuite (run here, on SQLite and on PostgreSQL).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Errors, EventStore, Kernel, type Middleware } from "@artana/core"
import { ForkSuite } from "@artana/core/testing/suites"
import { kernelLayer } from "./fixtures.js"

const { finish, original, ran, replies, tenant, tools, workflow: tour } = ForkSuite.Tour
const layer = () => kernelLayer(replies, tools, { kernel: { workflows: [tour] } })

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })

// The fork at every event, the long fork, the copy's atomicity: the suite every store runs.
ForkSuite.suite("memory", () => EventStore.layerMemory)

describe("Kernel.fork", () => {
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

  it.effect("a step's notes written before its request stay with it: a fork at a note is cut back before the step", () => {
    // A middleware that notes every tool call: for a call that needs approval, its note leads the approval's batch.
    const noting: Middleware.Interceptor = { name: "noting", beforeTool: (call, ctx) => Effect.as(ctx.note("noting", "seen", { tool: call.tool }), call) }
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const log = yield* original("noted")
      const note = log.find((e) => e.type === "MiddlewareNote" && e.stepKey === "pay")!
      expect(log[note.seq]).toMatchObject({ type: "ApprovalRequested", stepKey: "pay" })
      const forked = yield* kernel.forkLog({ ...ref("noted"), atSeq: note.seq })
      expect(forked.forkedFrom.seq).toBe(note.seq - 1)
      expect(yield* finish(yield* kernel.fork({ ...ref("noted"), atSeq: note.seq, workflow: tour }))).toMatchObject({ status: "completed", output: "hello|100|10|yes|paid 10|go" })
    }).pipe(Effect.provide(kernelLayer(replies, tools, { middleware: [noting], kernel: { workflows: [tour] } })))
  }, 60_000)
})
