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
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY } from "../Event.js"
import * as EventStore from "../EventStore.js"
import * as Json from "../Json.js"
import type { SignalReceipt, SignalRequest } from "../Kernel.js"
import { firstIssue } from "../Tool.js"
import type { WaitForSignalOptions } from "../Workflow.js"
import type * as TaskQueue from "../TaskQueue.js"
import * as Ledger from "./ledger.js"
import type { StepEnv } from "./stepEnv.js"
import * as Tasks from "./taskQueue.js"

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

/**
 * The ticket of the pause a signal wait ends in: `signal:<step key>`. A human pause's ticket is a UUID, so the two
 * never meet; `resume` tells them apart by it.
 */
export const ticketOf = (stepKey: string): string => `signal:${stepKey}`
export const isSignalTicket = (ticket: string): boolean => ticket.startsWith("signal:")

const reasonOf = (name: string, deadline: number | undefined) =>
  `waiting for signal "${name}"${deadline === undefined ? "" : ` until ${new Date(deadline).toISOString()}`}`

/** `ctx.waitForSignal`, over an execution's step environment, its inbox and its ledger's catch-up. */
export const makeWait = (
  env: StepEnv,
  inbox: Inbox,
  catchUp: Ledger.Ledger["catchUp"],
  timing: { readonly pollMillis: number; readonly holdMillis: number }
) => {
  const { holdMillis, pollMillis } = timing
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

  /**
   * Pauses the run at the wait (a `PauseRequested` with a signal ticket, after `before`): the execution ends, and a
   * resume once a signal came or the deadline passed (a worker's, or anyone's) goes on from here.
   */
  const pause = <A, I>(key: string, name: string, schema: Schema.Schema<A, I>, deadline: number | undefined, before: ReadonlyArray<EventPayload>) =>
    Effect.gen(function*() {
      const ticket = ticketOf(key)
      const reason = reasonOf(name, deadline)
      yield* env.append(key, [...before, { _tag: "PauseRequested", reason, ticket }])
      // A signal whose append beat the pause's was adopted before it (`Ledger.catchUp`): its sender may have found the
      // run still running, and woken nothing. Take it now rather than pause on it.
      if (inbox.oldest(name) !== undefined) {
        const received = yield* takeSignal(key, name)
        if (received !== undefined) return yield* decode(schema, received)
      }
      return yield* env.halt({ _tag: "Paused", ticket, reason, ...(deadline === undefined ? {} : { wakeAt: deadline }) })
    })

  /**
   * Resolves once the run is written to after this call: by this process (its live hub), or by another one when the
   * kernel has `RunNotices` (on PostgreSQL, a NOTIFY). Taken before the log is read, so no write is missed.
   */
  const written = Effect.gen(function*() {
    const here = (yield* env.deps.live.hub.ticket(env.tenant.tenantId, runId)).await
    const notices = env.deps.notices
    if (notices === undefined) return here
    return Effect.raceFirst(here, yield* notices.ticket(env.tenant.tenantId, runId))
  })

  /**
   * Waits in this process until a signal comes or the deadline passes, reading the log again when the run is written
   * to (`written`) and at least every `pollMillis`; after `holdMillis` without either, the run pauses (`pause`).
   */
  const waitFor = <A, I>(key: string, name: string, schema: Schema.Schema<A, I>, deadline: number | undefined) =>
    Effect.gen(function*() {
      const holdUntil = (yield* Clock.currentTimeMillis) + holdMillis
      while (true) {
        const wake = yield* written
        const received = yield* takeSignal(key, name)
        if (received !== undefined) return yield* decode(schema, received)
        const now = yield* Clock.currentTimeMillis
        if (deadline !== undefined && now >= deadline) {
          yield* env.append(key, [{ _tag: "SignalTimedOut", name, deadline }])
          return yield* new Errors.SignalTimeout({ runId, name, deadline })
        }
        if (now >= holdUntil) return yield* pause(key, name, schema, deadline, [])
        yield* env.checkOwnership(`(waiting for signal "${name}")`)
        yield* Effect.raceFirst(wake, Effect.sleep(Duration.millis(Math.min(pollMillis, holdUntil - now, deadline === undefined ? Infinity : deadline - now))))
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
      const awaited: EventPayload = { _tag: "SignalAwaited", name, ...(deadline === undefined ? {} : { deadline }) }
      // No time to wait in this process: the wait and the pause are one batch.
      if (holdMillis <= 0) return yield* pause(key, name, schema, deadline, [awaited])
      yield* env.append(key, [awaited])
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

/** The seq of the run's `SignalSent` of id `signalId` between `fromSeq` and `throughSeq`, if there is one. */
const sentWithId = (store: EventStore.Service, tenantId: string, runId: string, signalId: string, fromSeq: number, throughSeq: number) =>
  EventStore.stream(store, tenantId, runId, { fromSeq }).pipe(
    Stream.takeWhile((e) => e.seq <= throughSeq),
    Stream.filter((e) => e.payload._tag === "SignalSent" && e.payload.signalId === signalId),
    Stream.runHead,
    Effect.map((found) => (found._tag === "Some" ? found.value.seq : undefined))
  )

/**
 * Appends a `SignalSent` after the run's head (read again when an execution's append gets in first). A keyed signal
 * (`id`) is looked for in the log first, the whole log once and on a retry only what was appended since: when its id
 * is there, nothing is written (also when the run has ended since: a sender retrying is told it got through).
 */
export const send = (store: EventStore.Service, auditKey: string | undefined, request: SignalRequest): Effect.Effect<SignalReceipt, SendError> =>
  Effect.gen(function*() {
    const { tenantId, runId, name } = request
    const json = Json.fromUnknown(request.payload)
    if (!json.ok) return yield* new Errors.InvalidInput({ what: `payload of signal "${name}"`, reason: json.error })
    if (name.length === 0) return yield* new Errors.InvalidInput({ what: "signal name", reason: "empty" })
    if (request.id !== undefined && request.id.length === 0) return yield* new Errors.InvalidInput({ what: "signal id", reason: "empty: pass none for a fresh id" })
    const signalId = request.id ?? crypto.randomUUID()
    // A keyed signal: the log read so far (through `checked`) holds no signal of its id.
    let checked = request.id === undefined ? Number.MAX_SAFE_INTEGER : 0
    for (let attempt = 1;; attempt++) {
      const info = yield* store.getRun(tenantId, runId)
      if (checked < info.headSeq) {
        const sent = yield* sentWithId(store, tenantId, runId, signalId, checked + 1, info.headSeq)
        if (sent !== undefined) return { signalId, seq: sent, duplicate: true }
        checked = info.headSeq
      }
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
        onRefused: () => {},
        // A keyed signal is not written after another sender's signal of its id: the append fails, and the loop
        // finds that one in the log.
        adopts: (e) => request.id === undefined || e.payload._tag !== "SignalSent" || e.payload.signalId !== signalId
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

/** A run paused at a signal wait: the signal it waits for, its deadline, and why it may go on now (if it may). */
export interface PausedWait {
  readonly name: string
  readonly deadline: number | undefined
  /** Why a resume takes the run over now: a signal of its name came, or its deadline passed; undefined: not yet. */
  readonly wake: string | undefined
}

/**
 * What a run paused at `pause` (its last `PauseRequested`) waits for, when it is a signal wait: read from the wait's
 * `SignalAwaited` (the event before the pause, or near it) and the signals appended since the pause. Undefined for a
 * pause for a person.
 */
export const pausedWait = (
  store: EventStore.Service,
  info: { readonly tenantId: string; readonly runId: string; readonly headSeq: number },
  pause: Event
): Effect.Effect<PausedWait | undefined, Errors.RunNotFound | Errors.StoreError> =>
  Effect.gen(function*() {
    if (pause.payload._tag !== "PauseRequested" || !isSignalTicket(pause.payload.ticket)) return undefined
    const awaited = yield* EventStore.lastEvent(store, info.tenantId, info.runId, (e) => e.stepKey === pause.stepKey && e.payload._tag === "SignalAwaited", {
      throughSeq: pause.seq
    })
    if (awaited === undefined || awaited.payload._tag !== "SignalAwaited") return undefined
    const { deadline, name } = awaited.payload
    // A paused run's log grows only by signals: those after the pause are read, a page at a time.
    const arrived = yield* EventStore.stream(store, info.tenantId, info.runId, { fromSeq: pause.seq + 1 }).pipe(
      Stream.takeWhile((e) => e.seq <= info.headSeq),
      Stream.filter((e) => e.payload._tag === "SignalSent" && e.payload.name === name),
      Stream.runHead
    )
    const now = yield* Clock.currentTimeMillis
    const wake = arrived._tag === "Some"
      ? `signal "${name}" arrived (seq ${arrived.value.seq})`
      : deadline !== undefined && now >= deadline
      ? `the wait for signal "${name}" reached its deadline`
      : undefined
    return { name, deadline, wake }
  })

/**
 * Queues the task that drives a run (`TaskQueue.runIdOf`) when the run is paused at a signal wait that may go on now
 * (a signal of its name came, or its deadline passed). True when a task was woken. A run no task drives, or a task
 * that is not paused (still running: its worker wakes it once it has finished it), is left as it is.
 */
export const wakeTask = (
  store: EventStore.Service,
  queue: TaskQueue.Service,
  run: { readonly tenantId: string; readonly runId: string }
): Effect.Effect<boolean, Errors.RunNotFound | Errors.StoreError> =>
  Effect.gen(function*() {
    const taskId = Tasks.taskIdOf(run.runId)
    if (taskId === undefined) return false
    const info = yield* store.getRun(run.tenantId, run.runId)
    if (info.status !== "paused") return false
    const pause = yield* EventStore.lastEvent(store, run.tenantId, run.runId, (e) => e.payload._tag === "PauseRequested", { throughSeq: info.headSeq })
    const wait = pause === undefined ? undefined : yield* pausedWait(store, info, pause)
    if (wait?.wake === undefined) return false
    return yield* queue.wake(run.tenantId, taskId).pipe(
      Effect.as(true),
      Effect.catchTags({ TaskNotFound: () => Effect.succeed(false), InvalidTaskState: () => Effect.succeed(false) })
    )
  })

/**
 * Queues the task that drives a run (`TaskQueue.runIdOf`) once an approval the run paused for is decided, so that a
 * decision made anywhere (the CLI, an inbox, another process) lets a worker continue the run without a task
 * response. The decision is durable before this runs: a task that is not paused (its worker wakes it once it has
 * finished it), a run no task drives, or a queue that cannot be reached leaves the decision as it is (logged).
 */
export const wakeDecided = (
  queue: TaskQueue.Service,
  run: { readonly tenantId: string; readonly runId: string }
): Effect.Effect<boolean> => {
  const taskId = Tasks.taskIdOf(run.runId)
  if (taskId === undefined) return Effect.succeed(false)
  return queue.wake(run.tenantId, taskId).pipe(
    Effect.as(true),
    Effect.catchTags({ TaskNotFound: () => Effect.succeed(false), InvalidTaskState: () => Effect.succeed(false) }),
    Effect.catchAll((e) => Effect.as(Effect.logWarning(`approval decided on run ${run.runId}; its task was not queued again: ${e.message}`), false))
  )
}
