/**
 * Signals: durable messages into a run. A sender (`Kernel.signal`) appends a `SignalSent` to the run's own hash chain
 * under the append's sequence check, so it serializes with the run's own appends (an execution whose append
 * conflicts with a signal adopts it and writes again after it: `Ledger.catchUp`). `ctx.waitForSignal` takes the
 * oldest signal of its name the run has not taken yet, and logs what it took (`SignalReceived`, with the payload) or
 * that its logged deadline passed (`SignalTimedOut`) as its step: a replay takes the same signal at the same point.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import * as Json from "../Json.js"
import type { SignalReceipt, SignalRequest } from "../Kernel.js"
import { firstIssue } from "../Tool.js"
import type { WaitForSignalOptions } from "../Workflow.js"
import * as Ledger from "./ledger.js"
import type { StepEnv } from "./stepEnv.js"

type SignalSent = Extract<EventPayload, { readonly _tag: "SignalSent" }>

/** A signal in the run's log that no wait took yet. */
interface Pending {
  readonly seq: number
  readonly payload: SignalSent
}

/**
 * The signals an execution knows of and has not taken: those read in its log and those it adopted since. A recorded
 * `SignalReceived` removes its signal (a signal is always logged before the step that takes it).
 */
export const makeInbox = () => {
  const pending = new Map<number, Pending>()
  return {
    add: (events: ReadonlyArray<Event>) => {
      for (const event of events) {
        if (event.payload._tag === "SignalSent" && event.stepKey === RUN_STEP_KEY) pending.set(event.seq, { seq: event.seq, payload: event.payload })
      }
    },
    /** The oldest signal named `name` not taken yet. */
    oldest: (name: string): Pending | undefined => {
      for (const signal of pending.values()) if (signal.payload.name === name) return signal
      return undefined
    },
    take: (seq: number) => void pending.delete(seq)
  }
}

export type Inbox = ReturnType<typeof makeInbox>

/** How often a waiting execution reads its run's log for new signals, unless the kernel was told otherwise. */
export const DEFAULT_POLL_MILLIS = 200

/** `ctx.waitForSignal`, over an execution's step environment, its inbox and its ledger's catch-up. */
export const makeWait = (env: StepEnv, inbox: Inbox, catchUp: Ledger.Ledger["catchUp"], pollMillis: number) => {
  const { runId } = env

  const decode = <A, I>(schema: Schema.Schema<A, I>, received: Extract<EventPayload, { readonly _tag: "SignalReceived" }>) => {
    const value = Schema.decodeUnknownEither(schema)(received.payload)
    if (Either.isRight(value)) return Effect.succeed(value.right)
    const issue = firstIssue(value.left)
    return Effect.fail(new Errors.InvalidSignalPayload({ runId, name: received.name, signalId: received.signalId, reason: `${issue.path}: ${issue.reason}` }))
  }

  /** Takes the oldest signal of `name` into step `key` (logged), if the run has one: catches up with senders first. */
  const takeSignal = (key: string, name: string) =>
    Effect.gen(function*() {
      const caught = yield* Effect.catchAll(catchUp(), env.fault)
      if (caught === "foreign") {
        return yield* env.fault(new Errors.SequenceConflict({ runId, expectedSeq: env.head() }))
      }
      const signal = inbox.oldest(name)
      if (signal === undefined) return undefined
      const received = { _tag: "SignalReceived", name, signalId: signal.payload.signalId, signalSeq: signal.seq, payload: signal.payload.payload } as const
      yield* env.append(key, [received])
      inbox.take(signal.seq)
      return received
    })

  /** Waits in this process, reading the log every `pollMillis`, until a signal comes or the deadline passes. */
  const waitFor = <A, I>(key: string, name: string, schema: Schema.Schema<A, I>, deadline: number | undefined) =>
    Effect.gen(function*() {
      while (true) {
        const received = yield* takeSignal(key, name)
        if (received !== undefined) return yield* decode(schema, received)
        const now = yield* Clock.currentTimeMillis
        if (deadline !== undefined && now >= deadline) {
          yield* env.append(key, [{ _tag: "SignalTimedOut", name, deadline }])
          return yield* new Errors.SignalTimeout({ runId, name, deadline })
        }
        yield* env.checkOwnership(`(waiting for signal "${name}")`)
        yield* Effect.sleep(Duration.millis(deadline === undefined ? pollMillis : Math.min(pollMillis, deadline - now)))
      }
    })

  return <A, I>(name: string, schema: Schema.Schema<A, I>, options: WaitForSignalOptions = {}): Effect.Effect<A, Errors.WaitForSignalError> =>
    Effect.gen(function*() {
      const halted = env.halted()
      if (halted !== undefined) return yield* env.halt(halted)
      const key = env.cursor.nextKey("signal", options.key)
      const actual = `a wait for signal "${name}"`
      let found = env.cursor.lookup(key, () => actual)
      if (found._tag === "Pending") found = yield* env.loaded(found)
      if (found._tag === "Diverged") return yield* env.fault(found.error)
      if (found._tag === "Recorded") {
        const first = found.events[0]!.payload
        const isWait = first._tag === "SignalAwaited" || first._tag === "SignalReceived" || first._tag === "SignalTimedOut"
        if (!isWait || first.name !== name) return yield* env.mismatch(key, found.events, actual)
        for (const event of found.events) {
          const p = event.payload
          if (p._tag === "SignalReceived") {
            inbox.take(p.signalSeq)
            return yield* decode(schema, p)
          }
          if (p._tag === "SignalTimedOut") return yield* new Errors.SignalTimeout({ runId, name, deadline: p.deadline })
        }
        // The run was waiting here when it stopped: a replay stops here too; a live execution waits what is left.
        if (env.mode === "replay") return yield* env.halt({ _tag: "Paused", ticket: key, reason: `waiting for signal "${name}"` })
        return yield* waitFor(key, name, schema, first._tag === "SignalAwaited" ? first.deadline : undefined)
      }
      const received = yield* takeSignal(key, name)
      if (received !== undefined) return yield* decode(schema, received)
      const now = yield* Clock.currentTimeMillis
      const deadline = options.timeout === undefined ? undefined : now + Duration.toMillis(Duration.decode(options.timeout))
      if (deadline !== undefined && deadline <= now) {
        // A wait of no time: one event says nothing was there.
        yield* env.append(key, [{ _tag: "SignalTimedOut", name, deadline }])
        return yield* new Errors.SignalTimeout({ runId, name, deadline })
      }
      yield* env.append(key, [{ _tag: "SignalAwaited", name, ...(deadline === undefined ? {} : { deadline }) }])
      return yield* waitFor(key, name, schema, deadline)
    })
}

export type SendError =
  | Errors.SignalRefused
  | Errors.RunNotFound
  | Errors.InvalidInput
  | Errors.StoreError
  | Errors.SequenceConflict
  | Errors.LogTampered

/** A run's statuses that take no signal: nothing would ever read it. */
const ended = (status: string) => status === "completed" || status === "failed" || status === "continued"

/** Times a sender re-reads the run after an execution's append got in before its signal. */
const SEND_ATTEMPTS = 50

/** Appends a `SignalSent` after the run's head (read again when an execution's append gets in first). */
export const send = (store: EventStore.Service, auditKey: string | undefined, request: SignalRequest): Effect.Effect<SignalReceipt, SendError> =>
  Effect.gen(function*() {
    const { tenantId, runId, name } = request
    const json = Json.fromUnknown(request.payload)
    if (!json.ok) return yield* new Errors.InvalidInput({ what: `payload of signal "${name}"`, reason: json.error })
    if (name.length === 0) return yield* new Errors.InvalidInput({ what: "signal name", reason: "empty" })
    const signalId = crypto.randomUUID()
    for (let attempt = 1;; attempt++) {
      const info = yield* store.getRun(tenantId, runId)
      if (ended(info.status)) return yield* new Errors.SignalRefused({ runId, name, status: info.status })
      const ledger = Ledger.make({
        store,
        auditKey,
        runId,
        tenantId,
        head: { seq: info.headSeq, hash: info.headHash },
        mode: "live",
        // The run's current epoch, claiming nothing: a sender is no owner, and fences no one.
        ownerEpoch: info.ownerEpoch,
        claim: false,
        onRefused: () => {}
      })
      const written = yield* Effect.either(ledger.append(RUN_STEP_KEY, [{ _tag: "SignalSent", signalId, name, payload: json.json }]))
      if (Either.isRight(written)) return { signalId, seq: ledger.head().seq }
      const error = written.left
      // The run's own execution appended (or claimed it) first: read its status and head again.
      if ((error._tag === "SequenceConflict" || error._tag === "OwnershipLost") && attempt < SEND_ATTEMPTS) continue
      if (error._tag === "OwnershipLost" || error._tag === "InvalidRunState") {
        return yield* new Errors.SequenceConflict({ runId, expectedSeq: info.headSeq })
      }
      return yield* Effect.fail(error)
    }
  })
