// Signals and continue-as-new: a signal sent to a chain reaches the chain's later waits. A review found a signal that
// landed during a handover failing it (SequenceConflict) and lost; a signal a run did not take is carried over.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })
const logOf = (runId: string) => Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, runId))
const shape = (events: ReadonlyArray<{ readonly type: string; readonly stepKey: string }>) => events.map((e) => `${e.type}@${e.stepKey}`)

/** Generation 0 does a step and continues as new; generation 1 takes a "go" signal (it never pauses: timeout 0). */
const relay = Workflow.make({
  name: "relay",
  input: Schema.Number,
  output: Schema.String,
  run: (generation, ctx) =>
    Effect.gen(function*() {
      yield* ctx.step("work", Effect.succeed(generation), Schema.Number)
      if (generation === 0) return yield* ctx.continueAsNew(1)
      return yield* ctx.waitForSignal("go", Schema.String, { timeout: 0 }).pipe(Effect.catchTag("SignalTimeout", () => Effect.succeed("no signal")), Effect.orDie)
    })
})

describe("signals across continue-as-new", () => {
  it.effect("a signal that lands while the run hands over is adopted and carried to the successor, whose wait takes it", () =>
    Effect.gen(function*() {
      const inner = yield* EventStore.makeMemory
      const sender = kernelLayer([], [], { store: Layer.succeed(EventStore.EventStore, inner) })
      let raced: { readonly runId: string; readonly seq: number } | undefined
      // A sender's signal lands between the code's last look at the run and the handover's transaction.
      const wrapped: EventStore.Service = {
        ...inner,
        appendAll: (requests) =>
          Effect.gen(function*() {
            if (raced === undefined && requests.some((r) => r.events.some((e) => e.payload._tag === "RunContinued"))) {
              raced = yield* Effect.orDie(Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.signal({ ...ref("h"), name: "go", payload: "raced" })), sender))
            }
            return yield* inner.appendAll(requests)
          })
      }
      const result = yield* Effect.provide(
        Effect.flatMap(Kernel.Kernel, (k) => k.execute(relay, { runId: "h", tenant, input: 0 })),
        kernelLayer([], [], { store: Layer.succeed(EventStore.EventStore, wrapped) })
      )
      // The sender was told the signal is in run h (it was running); the chain's next wait took it.
      expect(raced).toMatchObject({ runId: "h", seq: 3 })
      expect(result).toEqual({ status: "completed", runId: "h::continued::1", output: "raced" })
      expect(shape(yield* inner.readEvents(tenant.tenantId, "h"))).toEqual(["RunStarted@run", "StepCompleted@step:0", "SignalSent@run", "RunContinued@run"])
      const successor = yield* inner.readEvents(tenant.tenantId, "h::continued::1")
      expect(shape(successor)).toEqual(["RunStarted@run", "SignalSent@run", "StepCompleted@step:0", "SignalReceived@signal:1", "RunCompleted@run"])
      expect(successor[1]!.payload).toMatchObject({ _tag: "SignalSent", name: "go", payload: "raced", carriedFrom: { runId: "h", seq: 3 } })
      // Both logs verify, and a replay of the chain takes the carried signal at the same point.
      yield* Effect.provide(
        Effect.gen(function*() {
          const kernel = yield* Kernel.Kernel
          for (const runId of ["h", "h::continued::1"]) expect(yield* kernel.verify(ref(runId))).toMatchObject({ ok: true })
          expect(yield* kernel.replay(relay, ref("h"))).toEqual(result)
        }),
        sender
      )
    }))

  it.effect("a signal the run did not take goes on to its successor; one it took does not", () => {
    /** Takes a "first" signal, then continues as new; the successor takes a "later" signal sent before the handover. */
    const twoStage = Workflow.make({
      name: "two-stage",
      input: Schema.Number,
      output: Schema.Array(Schema.String),
      run: (generation, ctx) =>
        Effect.gen(function*() {
          if (generation === 0) {
            yield* Effect.orDie(ctx.waitForSignal("first", Schema.String))
            return yield* ctx.continueAsNew(1)
          }
          const later = yield* Effect.orDie(ctx.waitForSignal("later", Schema.String))
          const first = yield* ctx.waitForSignal("first", Schema.String, { timeout: 0 }).pipe(Effect.catchTag("SignalTimeout", () => Effect.succeed("none")), Effect.orDie)
          return [later, first]
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect(yield* kernel.execute(twoStage, { runId: "s", tenant, input: 0 })).toMatchObject({ status: "paused", runId: "s" })
      // Sent while generation 0 waits for "first": "later" waits in its log, untaken, when it continues as new.
      yield* kernel.signal({ ...ref("s"), name: "later", payload: "L", id: "later-1" })
      yield* kernel.signal({ ...ref("s"), name: "first", payload: "F" })
      expect(yield* kernel.resume({ ...ref("s"), workflow: twoStage })).toEqual({ status: "completed", runId: "s::continued::1", output: ["L", "none"] })
      const carried = (yield* logOf("s::continued::1")).filter((e) => e.payload._tag === "SignalSent").map((e) => e.payload)
      expect(carried).toEqual([{ _tag: "SignalSent", signalId: "later-1", name: "later", payload: "L", carriedFrom: { runId: "s", seq: 4 } }])
      // The keyed signal sent again to the chain is a duplicate: found where it was first written.
      expect(yield* Effect.either(kernel.signal({ ...ref("s"), name: "later", payload: "L", id: "later-1" }))).toMatchObject({
        _tag: "Right",
        right: { signalId: "later-1", runId: "s", seq: 4, duplicate: true }
      })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a signal to a run that continued as new goes to the last run of its chain; a keyed one is written once", () => {
    /** Continues as new twice, then waits for a "go" signal. */
    const chain = Workflow.make({
      name: "chain",
      input: Schema.Number,
      output: Schema.String,
      run: (n, ctx) => (n < 2 ? ctx.continueAsNew(n + 1) : Effect.orDie(ctx.waitForSignal("go", Schema.String)))
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect(yield* kernel.execute(chain, { runId: "c", tenant, input: 0 })).toMatchObject({ status: "paused", runId: "c::continued::2" })
      const receipt = yield* kernel.signal({ ...ref("c"), name: "go", payload: "yes", id: "go-1" })
      expect(receipt).toMatchObject({ signalId: "go-1", runId: "c::continued::2", seq: 4 })
      expect(receipt.duplicate).toBeUndefined()
      // Sent again, through either id: found in the last run's log, nothing written.
      expect(yield* kernel.signal({ ...ref("c::continued::1"), name: "go", payload: "yes", id: "go-1" })).toEqual({ ...receipt, duplicate: true })
      expect(yield* kernel.resume({ ...ref("c"), workflow: chain })).toEqual({ status: "completed", runId: "c::continued::2", output: "yes" })
      // The chain has ended: a new signal is refused, naming the run that completed.
      expect(yield* Effect.flip(kernel.signal({ ...ref("c"), name: "go", payload: "again" }))).toMatchObject({
        _tag: "SignalRefused",
        runId: "c::continued::2",
        status: "completed"
      })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a resumed run carries every untaken signal, also those on log pages its code's steps did not need read", () => {
    // Found by a review: a resume reads the log a page (256 events) at a time as the code asks for steps, and the
    // handover carried only the signals of the pages read; the rest stayed in the ended run.
    let crash = true
    const drain = Workflow.make({
      name: "drain",
      input: Schema.Number,
      output: Schema.Number,
      run: (generation, ctx) =>
        Effect.gen(function*() {
          if (generation === 0) {
            yield* ctx.step("work", Effect.succeed(1), Schema.Number)
            if (crash) return yield* Effect.die("the process died after the step")
            return yield* ctx.continueAsNew(1)
          }
          let taken = 0
          while (yield* ctx.waitForSignal("x", Schema.Number, { timeout: 0 }).pipe(Effect.as(true), Effect.catchTag("SignalTimeout", () => Effect.succeed(false)), Effect.orDie)) taken++
          return taken
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* Effect.exit(kernel.execute(drain, { runId: "p", tenant, input: 0 }))
      // 300 signals while it is down: more than the first page of a replay.
      for (let i = 0; i < 300; i++) yield* kernel.signal({ ...ref("p"), name: "x", payload: i })
      crash = false
      expect(yield* kernel.resume({ ...ref("p"), workflow: drain })).toEqual({ status: "completed", runId: "p::continued::1", output: 300 })
      expect((yield* logOf("p::continued::1")).filter((e) => e.payload._tag === "SignalSent")).toHaveLength(300)
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("code that continues as new before a wait its log holds is NonDeterminism: the signal it took is neither lost nor taken twice", () => {
    // Found by reviews: a deploy without ctx.patched that continues as new before a recorded wait handed the signal
    // that wait took to the successor, which took it again; not carrying it instead lost the order the sender sent.
    let deployed: "v1" | "v2" = "v1"
    const flow = Workflow.make({
      name: "flow",
      input: Schema.Number,
      output: Schema.String,
      run: (generation, ctx) =>
        Effect.gen(function*() {
          if (generation === 0 && deployed === "v1") {
            yield* Effect.orDie(ctx.waitForSignal("order", Schema.String))
            return yield* Effect.die("the process died")
          }
          if (generation === 0) return yield* ctx.continueAsNew(1)
          return yield* Effect.orDie(ctx.waitForSignal("order", Schema.String))
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(flow, { runId: "f", tenant, input: 0 })
      yield* kernel.signal({ ...ref("f"), name: "order", payload: "order-1" })
      yield* Effect.exit(kernel.resume({ ...ref("f"), workflow: flow }))
      expect(shape(yield* logOf("f")).at(-1)).toBe("SignalReceived@signal:0")
      deployed = "v2"
      expect(yield* Effect.flip(kernel.resume({ ...ref("f"), workflow: flow }))).toMatchObject({ _tag: "NonDeterminism", stepKey: "signal:0" })
      expect(yield* Effect.either(logOf("f::continued::1"))).toMatchObject({ _tag: "Left" })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  it.effect("a keyed signal an earlier run of the chain took is a duplicate when sent again to a later run", () => {
    // Found by a review: a webhook retrying with the run id the kernel reports now (the chain's last) paid twice.
    const payer = Workflow.make({
      name: "payer",
      input: Schema.Number,
      output: Schema.String,
      run: (generation, ctx) =>
        Effect.gen(function*() {
          const paid = yield* Effect.orDie(ctx.waitForSignal("pay", Schema.String))
          return generation === 0 ? yield* ctx.continueAsNew(1) : `second payment: ${paid}`
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.execute(payer, { runId: "pay", tenant, input: 0 })
      const first = yield* kernel.signal({ ...ref("pay"), name: "pay", payload: "invoice-1", id: "invoice-1" })
      expect(yield* kernel.resume({ ...ref("pay"), workflow: payer })).toMatchObject({ status: "paused", runId: "pay::continued::1" })
      const retry = yield* kernel.signal({ ...ref("pay::continued::1"), name: "pay", payload: "invoice-1", id: "invoice-1" })
      expect(retry).toEqual({ ...first, duplicate: true })
      expect(yield* kernel.resume({ ...ref("pay"), workflow: payer })).toMatchObject({ status: "paused", runId: "pay::continued::1" })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })

  describe("a concurrent branch continues as new while another branch had logged steps", () => {
    // Found by a review: the handover refused such code as NonDeterminism on replay and on resume (the other branch's
    // steps, interrupted by the halt, were never asked for again).
    // `late`: the fast branch also logs "fast-3" 40 ms in, after "slow" (30 ms), and the slow branch hands over 20 ms
    // after its step. On replay and on resume the slow step is read, not run: the handover comes at ~20 ms, before
    // "fast-3" is asked for again, and was NonDeterminism (a step after the last one consumed); now the handover lets
    // the fast branch consume it first.
    const branches = (state: { crash: boolean }, late = false) =>
      Workflow.make({
        name: "branches",
        input: Schema.Number,
        output: Schema.String,
        run: (generation, ctx) =>
          Effect.gen(function*() {
            if (generation > 0) return "done"
            const fast = Effect.gen(function*() {
              yield* ctx.step("fast-1", Effect.succeed(1), Schema.Number, { key: "fast-1" })
              yield* ctx.step("fast-2", Effect.succeed(2), Schema.Number, { key: "fast-2" })
              if (late) yield* Effect.zipRight(Effect.sleep("40 millis"), ctx.step("fast-3", Effect.succeed(3), Schema.Number, { key: "fast-3" }))
            })
            const slow = Effect.gen(function*() {
              yield* ctx.step("slow", Effect.as(Effect.sleep("30 millis"), 3), Schema.Number, { key: "slow" })
              if (late) yield* Effect.sleep("20 millis")
              if (state.crash) return yield* Effect.die("the process died after the slow step")
              return yield* ctx.continueAsNew(generation + 1)
            })
            yield* Effect.all([slow, fast], { concurrency: "unbounded", discard: true })
            return "unreachable"
          })
      })

    it.live.each([false, true])("a replay of the chain agrees with it (a step logged after the handing-over branch's: %s)", (late) => {
      const w = branches({ crash: false }, late)
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const result = yield* kernel.execute(w, { runId: "br", tenant, input: 0 })
        expect(result).toEqual({ status: "completed", runId: "br::continued::1", output: "done" })
        expect(yield* kernel.replay(w, ref("br"))).toEqual(result)
      }).pipe(Effect.provide(kernelLayer([], [])))
    })

    it.live.each([false, true])("a run resumed after a crash hands over (a step logged after the handing-over branch's: %s)", (late) => {
      const state = { crash: true }
      const w = branches(state, late)
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        yield* Effect.exit(kernel.execute(w, { runId: "bc", tenant, input: 0 }))
        state.crash = false
        expect(yield* kernel.resume({ ...ref("bc"), workflow: w })).toEqual({ status: "completed", runId: "bc::continued::1", output: "done" })
      }).pipe(Effect.provide(kernelLayer([], [])))
    })
  })

  it.effect("code that now continues as new before a logged step is NonDeterminism, on resume and on replay", () => {
    // Found by the third review: with the check dropped, the successor ran a logged charge again, and a replay of new
    // code that removed a step before its continue-as-new reported the chain as matching.
    let charges = 0
    let deployed: "v1" | "v2" = "v1"
    const charger = Workflow.make({
      name: "charger",
      input: Schema.Number,
      output: Schema.String,
      run: (generation, ctx) =>
        Effect.gen(function*() {
          if (generation === 0 && deployed === "v2") return yield* ctx.continueAsNew(1)
          yield* ctx.step("charge", Effect.sync(() => ++charges), Schema.Number)
          if (generation === 0) return yield* Effect.die("the process died after the charge")
          return "charged"
        })
    })
    const twoSteps = (version: "v1" | "v2") =>
      Workflow.make({
        name: "replayed",
        input: Schema.Number,
        output: Schema.String,
        run: (generation, ctx) =>
          Effect.gen(function*() {
            if (generation > 0) return "done"
            yield* ctx.step("a", Effect.succeed(1), Schema.Number)
            if (version === "v1") yield* ctx.step("b", Effect.succeed(2), Schema.Number)
            return yield* ctx.continueAsNew(1)
          })
      })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* Effect.exit(kernel.execute(charger, { runId: "c", tenant, input: 0 }))
      deployed = "v2"
      expect(yield* Effect.flip(kernel.resume({ ...ref("c"), workflow: charger }))).toMatchObject({ _tag: "NonDeterminism", stepKey: "step:0" })
      expect(charges).toBe(1)
      expect(yield* kernel.execute(twoSteps("v1"), { runId: "r", tenant, input: 0 })).toMatchObject({ status: "completed", runId: "r::continued::1" })
      expect(yield* Effect.flip(kernel.replay(twoSteps("v2"), ref("r")))).toMatchObject({ _tag: "NonDeterminism", stepKey: "step:1" })
    }).pipe(Effect.provide(kernelLayer([], [])))
  })
})
