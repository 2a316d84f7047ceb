import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, Schema, TestClock } from "effect"
import { type Event, EventStore, Kernel, Tenant, Verify, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

const Decision = Schema.Struct({ approve: Schema.Boolean, by: Schema.String })

/** Waits for a "decision" (with a timeout when the input gives one), then returns who decided and when it came. */
const approval = Workflow.make({
  name: "approval",
  input: Schema.Struct({ timeoutMinutes: Schema.optional(Schema.Number) }),
  output: Schema.String,
  run: (input, ctx) =>
    Effect.gen(function*() {
      yield* ctx.step("prepare", Effect.succeed("ready"), Schema.String)
      const decision = yield* ctx.waitForSignal("decision", Decision, input.timeoutMinutes === undefined ? {} : { timeout: `${input.timeoutMinutes} minutes` }).pipe(
        Effect.catchTag("SignalTimeout", () => Effect.succeed({ approve: false, by: "timeout" })),
        Effect.catchTag("InvalidSignalPayload", (e) => Effect.succeed({ approve: false, by: `invalid: ${e.reason}` }))
      )
      return `${decision.approve ? "approved" : "declined"} by ${decision.by}`
    })
})

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })
const logOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))
/** A kernel whose waits hold the run in their process (they never pause). */
const holding = kernelLayer([], [], { kernel: { signalWaitHold: Duration.infinity } })

const shape = (events: ReadonlyArray<{ readonly type: string; readonly stepKey: string }>) => events.map((e) => `${e.type}@${e.stepKey}`)

describe("signals", () => {
  it.effect("a signal sent before the workflow waits is not lost: the wait takes it, logged, and a replay takes it again", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      // A workflow that pauses first: the signal arrives while it is paused, before it gets to its wait.
      const late = Workflow.make({
        name: "late",
        input: Schema.Null,
        output: Schema.String,
        run: (_i, ctx) =>
          Effect.gen(function*() {
            yield* ctx.pauseForHuman({ reason: "look first" })
            const d = yield* ctx.waitForSignal("decision", Decision)
            return d.by
          })
      })
      expect((yield* kernel.execute(late, { runId: "late", tenant, input: null })).status).toBe("paused")
      const receipt = yield* kernel.signal({ ...ref("late"), name: "decision", payload: { approve: true, by: "ann" } })
      const done = yield* kernel.resume({ ...ref("late"), workflow: late })
      expect(done).toEqual({ status: "completed", runId: "late", output: "ann" })
      const log = yield* logOf("late")
      expect(shape(log)).toEqual([
        "RunStarted@run", "PauseRequested@pause:0", "SignalSent@run", "HumanResponded@pause:0", "SignalReceived@signal:1", "RunCompleted@run"
      ])
      expect(log[4]!.payload).toMatchObject({ signalSeq: receipt.seq, signalId: receipt.signalId, payload: { approve: true, by: "ann" } })
      expect(Verify.verifyEvents("late", log).ok).toBe(true)
      expect(yield* kernel.replay(late, ref("late"))).toEqual(done)
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("signals of one name are taken oldest first, one per wait, and other names wait for their own waits", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const gate = Workflow.make({
        name: "gate",
        input: Schema.Null,
        output: Schema.Array(Schema.String),
        run: (_i, ctx) =>
          Effect.gen(function*() {
            yield* ctx.pauseForHuman({ reason: "hold" })
            const a = yield* ctx.waitForSignal("note", Schema.String)
            const b = yield* ctx.waitForSignal("note", Schema.String)
            const c = yield* ctx.waitForSignal("other", Schema.String)
            return [a, b, c]
          })
      })
      yield* kernel.execute(gate, { runId: "gate", tenant, input: null })
      for (const [name, payload] of [["other", "o1"], ["note", "n1"], ["note", "n2"], ["note", "n3"]] as const) {
        yield* kernel.signal({ ...ref("gate"), name, payload })
      }
      expect(yield* kernel.resume({ ...ref("gate"), workflow: gate })).toEqual({ status: "completed", runId: "gate", output: ["n1", "n2", "o1"] })
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("a signal sent while the run waits wakes it", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const fiber = yield* Effect.fork(kernel.execute(approval, { runId: "wake", tenant, input: {} }))
      yield* TestClock.adjust("1 second")
      expect(shape(yield* logOf("wake")).at(-1)).toBe("SignalAwaited@signal:1")
      expect(fiber.unsafePoll()).toBeNull()
      yield* kernel.signal({ ...ref("wake"), name: "decision", payload: { approve: true, by: "bob" } })
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(fiber)).toEqual({ status: "completed", runId: "wake", output: "approved by bob" })
      expect(shape(yield* logOf("wake"))).toEqual([
        "RunStarted@run", "StepCompleted@step:0", "SignalAwaited@signal:1", "SignalSent@run", "SignalReceived@signal:1", "RunCompleted@run"
      ])
    }).pipe(Effect.provide(holding)))

  it.effect("a signal to a completed run is refused with nothing written; another tenant's run is not found", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const fiber = yield* Effect.fork(kernel.execute(approval, { runId: "done", tenant, input: {} }))
      yield* TestClock.adjust("1 second")
      yield* kernel.signal({ ...ref("done"), name: "decision", payload: { approve: false, by: "cy" } })
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      const before = yield* logOf("done")
      const refused = yield* Effect.either(kernel.signal({ ...ref("done"), name: "decision", payload: { approve: true, by: "late" } }))
      expect(Either.isLeft(refused) && refused.left).toMatchObject({ _tag: "SignalRefused", runId: "done", status: "completed" })
      expect(yield* logOf("done")).toEqual(before)
      const other = Tenant.TenantContext.make({ tenantId: "globex", capabilities: [], budgetUsdLimit: 1 })
      const foreign = yield* Effect.either(kernel.signal({ tenantId: other.tenantId, runId: "done", name: "decision", payload: null }))
      expect(Either.isLeft(foreign) && foreign.left._tag).toBe("RunNotFound")
    }).pipe(Effect.provide(holding)))

  it.effect("a timeout is logged as a deadline; a run resumed after its process stopped waits only what is left", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const first = yield* Effect.fork(kernel.execute(approval, { runId: "slow", tenant, input: { timeoutMinutes: 60 } }))
      yield* TestClock.adjust("40 minutes")
      yield* Fiber.interrupt(first)
      const awaited = (yield* logOf("slow")).find((e) => e.payload._tag === "SignalAwaited")!
      expect(awaited.payload).toEqual({ _tag: "SignalAwaited", name: "decision", deadline: awaited.timestamp + 60 * 60 * 1000 })
      const second = yield* Effect.fork(kernel.execute(approval, { runId: "slow", tenant, input: { timeoutMinutes: 60 } }))
      yield* TestClock.adjust("19 minutes")
      expect(second.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(second)).toEqual({ status: "completed", runId: "slow", output: "declined by timeout" })
      const log = yield* logOf("slow")
      expect(shape(log)).toEqual([
        "RunStarted@run", "StepCompleted@step:0", "SignalAwaited@signal:1", "RunResumed@run", "SignalTimedOut@signal:1", "RunCompleted@run"
      ])
      expect(log[4]!.payload).toEqual({ _tag: "SignalTimedOut", name: "decision", deadline: awaited.payload._tag === "SignalAwaited" ? awaited.payload.deadline : -1 })
      // A signal after the timeout is too late for that wait; the run has ended, so it is refused.
      const late = yield* Effect.either(kernel.signal({ ...ref("slow"), name: "decision", payload: { approve: true, by: "late" } }))
      expect(Either.isLeft(late) && late.left._tag).toBe("SignalRefused")
      expect(yield* kernel.replay(approval, ref("slow"))).toEqual({ status: "completed", runId: "slow", output: "declined by timeout" })
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { signalPollInterval: "1 minute", signalWaitHold: Duration.infinity } }))))

  it.effect("a payload that does not decode is a typed failure the code handles, logged, and replayed the same way", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const fiber = yield* Effect.fork(kernel.execute(approval, { runId: "bad", tenant, input: {} }))
      yield* TestClock.adjust("1 second")
      yield* kernel.signal({ ...ref("bad"), name: "decision", payload: { approve: "yes" } })
      yield* TestClock.adjust("1 second")
      const done = yield* Fiber.join(fiber)
      expect(done.status === "completed" && done.output).toMatch(/^declined by invalid: /)
      expect(yield* kernel.replay(approval, ref("bad"))).toEqual(done)
    }).pipe(Effect.provide(holding)))

  it.effect("a replay is exact: code that waits for another signal at that point is NonDeterminism", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const fiber = yield* Effect.fork(kernel.execute(approval, { runId: "exact", tenant, input: {} }))
      yield* TestClock.adjust("1 second")
      yield* kernel.signal({ ...ref("exact"), name: "decision", payload: { approve: true, by: "dee" } })
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      const changed = Workflow.make({
        name: "approval",
        input: Schema.Struct({ timeoutMinutes: Schema.optional(Schema.Number) }),
        output: Schema.String,
        run: (_input, ctx) =>
          Effect.gen(function*() {
            yield* ctx.step("prepare", Effect.succeed("ready"), Schema.String)
            return yield* Effect.orDie(ctx.waitForSignal("veto", Schema.String))
          })
      })
      const replayed = yield* Effect.either(kernel.replay(changed, ref("exact")))
      expect(Either.isLeft(replayed) && replayed.left).toMatchObject({ _tag: "NonDeterminism", stepKey: "signal:1" })
    }).pipe(Effect.provide(holding)))

  it.effect("a signal appended between a run's own appends is adopted: the run goes on after it and takes it later", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const racer = Workflow.make({
        name: "racer",
        input: Schema.Null,
        output: Schema.String,
        run: (_i, ctx) =>
          Effect.gen(function*() {
            // The step's effect sends a signal to its own run: the step's append then conflicts with it.
            yield* ctx.step("send", Effect.orDie(kernel.signal({ ...ref(ctx.runId), name: "note", payload: "mid-step" })), Schema.Unknown)
            return yield* Effect.orDie(ctx.waitForSignal("note", Schema.String, { timeout: 0 }))
          })
      })
      expect(yield* kernel.execute(racer, { runId: "racer", tenant, input: null })).toEqual({ status: "completed", runId: "racer", output: "mid-step" })
      const log = yield* logOf("racer")
      expect(shape(log)).toEqual(["RunStarted@run", "SignalSent@run", "StepCompleted@step:0", "SignalReceived@signal:1", "RunCompleted@run"])
      expect(Verify.verifyEvents("racer", log).ok).toBe(true)
    }).pipe(Effect.provide(kernelLayer([], []))))
  it.effect("by default a wait pauses the run: a resume before a signal writes nothing; after one, the run takes it", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(approval, { runId: "p1", tenant, input: {} })
      expect(paused).toEqual({ status: "paused", runId: "p1", ticket: "signal:signal:1", reason: "waiting for signal \"decision\"" })
      const log = yield* logOf("p1")
      expect(shape(log)).toEqual(["RunStarted@run", "StepCompleted@step:0", "SignalAwaited@signal:1", "PauseRequested@signal:1"])
      expect((yield* Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, "p1"))).status).toBe("paused")
      // Nothing came: a resume (a worker polling, a person) finds the run still waiting and writes nothing.
      expect(yield* kernel.resume({ ...ref("p1"), workflow: approval })).toEqual(paused)
      expect(yield* logOf("p1")).toEqual(log)
      // A signal wait takes a signal, not a response.
      const answered = yield* Effect.either(kernel.resume({ ...ref("p1"), workflow: approval, response: { approve: true } }))
      expect(Either.isLeft(answered) && answered.left._tag).toBe("InvalidRunState")
      yield* kernel.signal({ ...ref("p1"), name: "decision", payload: { approve: true, by: "eve" } })
      expect(yield* kernel.resume({ ...ref("p1"), workflow: approval })).toEqual({ status: "completed", runId: "p1", output: "approved by eve" })
      expect(shape(yield* logOf("p1"))).toEqual([
        "RunStarted@run", "StepCompleted@step:0", "SignalAwaited@signal:1", "PauseRequested@signal:1",
        "SignalSent@run", "RunResumed@run", "SignalReceived@signal:1", "RunCompleted@run"
      ])
      expect(yield* kernel.replay(approval, ref("p1"))).toEqual({ status: "completed", runId: "p1", output: "approved by eve" })
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("a paused wait names its deadline; a resume before it writes nothing, one after it times the wait out", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* TestClock.setTime(1_000_000)
      const paused = yield* kernel.execute(approval, { runId: "p2", tenant, input: { timeoutMinutes: 60 } })
      const deadline = 1_000_000 + 60 * 60 * 1000
      expect(paused).toMatchObject({ status: "paused", ticket: "signal:signal:1", wakeAt: deadline })
      yield* TestClock.adjust("59 minutes")
      const log = yield* logOf("p2")
      expect(yield* kernel.resume({ ...ref("p2"), workflow: approval })).toEqual(paused)
      expect(yield* logOf("p2")).toEqual(log)
      yield* TestClock.adjust("1 minute")
      expect(yield* kernel.resume({ ...ref("p2"), workflow: approval })).toEqual({ status: "completed", runId: "p2", output: "declined by timeout" })
      const timedOut = (yield* logOf("p2")).find((e) => e.payload._tag === "SignalTimedOut")!
      expect(timedOut.payload).toEqual({ _tag: "SignalTimedOut", name: "decision", deadline })
      expect(timedOut.timestamp).toBe(deadline)
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("a failed run refuses signals too; one to a run that continued as new goes to its chain's last run", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const failing = Workflow.make({ name: "failing", input: Schema.Null, output: Schema.String, run: () => Effect.fail("no") })
      yield* Effect.either(kernel.execute(failing, { runId: "f1", tenant, input: null }))
      const failed = yield* Effect.either(kernel.signal({ ...ref("f1"), name: "decision", payload: null }))
      expect(Either.isLeft(failed) && failed.left).toMatchObject({ _tag: "SignalRefused", status: "failed" })
      const chain = Workflow.make({
        name: "chain",
        input: Schema.Number,
        output: Schema.String,
        run: (n, ctx) => n === 0 ? ctx.continueAsNew(1) : Effect.orDie(ctx.waitForSignal("decision", Schema.String))
      })
      const last = yield* kernel.execute(chain, { runId: "c1", tenant, input: 0 })
      expect(last).toMatchObject({ status: "paused", runId: "c1::continued::1" })
      expect(yield* kernel.signal({ ...ref("c1"), name: "decision", payload: "go" })).toMatchObject({ runId: "c1::continued::1" })
      expect(yield* kernel.resume({ ...ref("c1"), workflow: chain })).toEqual({ status: "completed", runId: "c1::continued::1", output: "go" })
    }).pipe(Effect.provide(kernelLayer([], []))))
})

describe("signals with an id (de-duplication)", () => {
  /** Pauses, then takes two "note" signals (the second within a minute, else "none"). */
  const twoNotes = Workflow.make({
    name: "two-notes",
    input: Schema.Null,
    output: Schema.Array(Schema.String),
    run: (_i, ctx) =>
      Effect.gen(function*() {
        yield* ctx.pauseForHuman({ reason: "hold" })
        const a = yield* ctx.waitForSignal("note", Schema.String)
        const b = yield* ctx.waitForSignal("note", Schema.String)
        return [a, b]
      })
  })
  const sentIds = (log: ReadonlyArray<Event.Event>) => log.flatMap((e) => (e.payload._tag === "SignalSent" ? [e.payload.signalId] : []))

  it.effect("the same id sent twice (also at once) is written and delivered once; another id is a new signal", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(twoNotes, { runId: "dedup", tenant, input: null })).status).toBe("paused")
      const first = yield* kernel.signal({ ...ref("dedup"), name: "note", payload: "one", id: "msg-1" })
      expect(first).toMatchObject({ signalId: "msg-1" })
      expect(first.duplicate).toBeUndefined()
      // A retry, and two more at once: nothing written, each told where the first one is.
      const again = yield* Effect.all([
        kernel.signal({ ...ref("dedup"), name: "note", payload: "one (retried)", id: "msg-1" }),
        kernel.signal({ ...ref("dedup"), name: "note", payload: "one (retried)", id: "msg-1" }),
        kernel.signal({ ...ref("dedup"), name: "note", payload: "one (retried)", id: "msg-1" })
      ], { concurrency: "unbounded" })
      expect(again).toEqual([0, 1, 2].map(() => ({ signalId: "msg-1", runId: "dedup", seq: first.seq, duplicate: true })))
      expect(sentIds(yield* logOf("dedup"))).toEqual(["msg-1"])
      // Resumed, the run takes the one signal and waits for a second: the duplicates were never delivered.
      const waiting = yield* kernel.resume({ ...ref("dedup"), workflow: twoNotes })
      expect(waiting.status).toBe("paused")
      // Two different ids sent at once: both written.
      yield* Effect.all([
        kernel.signal({ ...ref("dedup"), name: "note", payload: "two", id: "msg-2" }),
        kernel.signal({ ...ref("dedup"), name: "other", payload: "x", id: "msg-3" })
      ], { concurrency: "unbounded" })
      const done = yield* kernel.resume({ ...ref("dedup"), workflow: twoNotes })
      expect(done).toMatchObject({ status: "completed", output: ["one", "two"] })
      expect([...sentIds(yield* logOf("dedup"))].sort()).toEqual(["msg-1", "msg-2", "msg-3"])
      // After the run ended: a retry of a delivered id is told it got through; a new id is refused.
      expect(yield* kernel.signal({ ...ref("dedup"), name: "note", payload: "two", id: "msg-2" })).toMatchObject({ duplicate: true })
      const refused = yield* Effect.either(kernel.signal({ ...ref("dedup"), name: "note", payload: "late", id: "msg-4" }))
      expect(Either.isLeft(refused) && refused.left._tag).toBe("SignalRefused")
      const empty = yield* Effect.either(kernel.signal({ ...ref("dedup"), name: "note", payload: "x", id: "" }))
      expect(Either.isLeft(empty) && empty.left._tag).toBe("InvalidInput")
    }).pipe(Effect.provide(kernelLayer([], []))))
})

describe("a waiting run is woken by a write to it, not by its poll", () => {
  /** Waits hold the run and poll once an hour: only a wake-up gets a signal to them in a test's time. */
  const slowPoll = kernelLayer([], [], { kernel: { signalWaitHold: Duration.infinity, signalPollInterval: "1 hour" } })

  it.live("a signal sent in the kernel's process wakes the wait that holds its run at once", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const fiber = yield* Effect.fork(kernel.execute(approval, { runId: "prompt", tenant, input: {} }))
      // The run is at its wait (its SignalAwaited is logged) before the signal is sent.
      while (!(yield* Effect.orElseSucceed(logOf("prompt"), () => [])).some((e) => e.payload._tag === "SignalAwaited")) yield* Effect.sleep("10 millis")
      yield* kernel.signal({ ...ref("prompt"), name: "decision", payload: { approve: true, by: "dee" } })
      const done = yield* Fiber.join(fiber).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the wait was not woken") }))
      expect(done).toMatchObject({ status: "completed", output: "approved by dee" })
    }).pipe(Effect.provide(slowPoll)))
})
