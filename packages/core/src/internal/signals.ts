/**
 * Signals: durable messages into a run. A sender (`Kernel.signal`) appends a `SignalSent` to the run's own hash chain
 * under the append's sequence check, so it serializes with the run's own appends (an execution whose append
 * conflicts with a signal adopts it and writes again after it: `Ledger.catchUp`). `ctx.waitForSignal` takes the
 * oldest signal of its name the run has not taken yet, and logs what it took (`SignalReceived`, with the payload) or
 * that its logged deadline passed (`SignalTimedOut`) as its step: a replay takes the same signal at the same point.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY } from "../Event.js"
import * as EventStore from "../EventStore.js"
import type * as TaskQueue from "../TaskQueue.js"
import * as Tasks from "./taskQueue.js"
import { tagOf } from "./lazyPayload.js"

// Sending lives in `signalSend.ts`, the wait in `signalWait.ts` (over `signalDelivery.ts` and `signalHold.ts`).
export { send, type SendError } from "./signalSend.js"

type SignalSent = Extract<EventPayload, { readonly _tag: "SignalSent" }>

/** A signal in the run's log that no wait took yet. */
export interface Pending {
  readonly seq: number
  readonly payload: SignalSent
}

/**
 * The signals an execution knows of and has not taken: those read in its log and those it adopted since. A recorded
 * `SignalReceived` removes its signal, when its page is read and when its wait is replayed (a signal is always logged
 * before the step that takes it), so the inbox holds what the log says no wait took, whichever steps the code replayed.
 */
export const makeInbox = () => {
  const pending = new Map<number, Pending>()
  return {
    add: (events: ReadonlyArray<Event>) => {
      for (const event of events) {
        // A replay's lazy `ModelRequested` (`lazyPayload.ts`) is not decoded here.
        const tag = tagOf(event)
        if (tag === "SignalReceived" && event.payload._tag === "SignalReceived") pending.delete(event.payload.signalSeq)
        if (event.stepKey !== RUN_STEP_KEY || tag !== "SignalSent") continue
        const payload = event.payload
        if (payload._tag === "SignalSent") pending.set(event.seq, { seq: event.seq, payload })
      }
    },
    /** The oldest signal named `name` not taken yet. */
    oldest: (name: string): Pending | undefined => {
      for (const signal of pending.values()) if (signal.payload.name === name) return signal
      return undefined
    },
    take: (seq: number) => void pending.delete(seq),
    /** Every signal not taken yet, oldest first: what a run that continues as new hands to its successor. */
    untaken: (): ReadonlyArray<Pending> => [...pending.values()]
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
    // Signals the wait's own batch was written after (appended by a sender between the wait's look at its inbox and
    // the pause, and adopted by the pause's append): the run of `SignalSent`s right before the `SignalAwaited`. The
    // process that paused takes such a signal at once; one that died before it did left it here, untaken.
    const before = yield* EventStore.lastEvent(store, info.tenantId, info.runId, (e) => e.payload._tag !== "SignalSent", {
      throughSeq: awaited.seq - 1
    })
    // A paused run's log grows only by signals: those after the pause are read, a page at a time.
    const arrived = yield* EventStore.stream(store, info.tenantId, info.runId, { fromSeq: (before?.seq ?? 0) + 1 }).pipe(
      Stream.filter((e) => e.seq < awaited.seq || e.seq > pause.seq),
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
 * Whether the run its task `taskId` drives may go on now: paused at a signal wait whose signal came or whose deadline
 * passed, or at an approval (which leaves the run `running`: its task is paused with the approval's id as its ticket)
 * that has been decided.
 */
const goesOn = (
  store: EventStore.Service,
  queue: TaskQueue.Service,
  info: { readonly tenantId: string; readonly runId: string; readonly headSeq: number; readonly status: string },
  taskId: string
): Effect.Effect<boolean, Errors.RunNotFound | Errors.StoreError> =>
  Effect.gen(function*() {
    if (info.status === "paused") {
      const pause = yield* EventStore.lastEvent(store, info.tenantId, info.runId, (e) => e.payload._tag === "PauseRequested", { throughSeq: info.headSeq })
      const wait = pause === undefined ? undefined : yield* pausedWait(store, info, pause)
      return wait?.wake !== undefined
    }
    const task = yield* Effect.catchTag(queue.get(info.tenantId, taskId), "TaskNotFound", () => Effect.succeed(undefined))
    const ticket = task?.status === "paused" && task.outcome?._tag === "paused" ? task.outcome.ticket : undefined
    if (ticket === undefined) return false
    // The approval's own events, the last first: its request is near the head, where the run paused.
    const last = yield* EventStore.lastEvent(store, info.tenantId, info.runId, (e) =>
      (e.payload._tag === "ApprovalRequested" || e.payload._tag === "ApprovalDecided") && e.payload.approvalId === ticket, { throughSeq: info.headSeq })
    return last?.payload._tag === "ApprovalDecided"
  })

/**
 * Queues the task that drives a run (`TaskQueue.runIdOf`) when the run is paused at a signal wait that may go on now
 * (a signal of its name came, or its deadline passed), or at an approval that was decided. True when a task was woken;
 * a task still running keeps the wake-up for its finish (`TaskQueue.wake`). A run no task drives, or a task neither
 * paused nor running, is left as it is.
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
    if (!(yield* goesOn(store, queue, info, taskId))) return false
    return yield* queue.wake(run.tenantId, taskId).pipe(
      Effect.as(true),
      Effect.catchTags({ TaskNotFound: () => Effect.succeed(false), InvalidTaskState: () => Effect.succeed(false) })
    )
  })

/**
 * Queues the task that drives a run (`TaskQueue.runIdOf`) once an approval the run paused for is decided, so that a
 * decision made anywhere (the CLI, an inbox, another process) lets a worker continue the run without a task
 * response. The decision is durable before this runs: a task still running keeps the wake-up for its finish
 * (`TaskQueue.wake`); a run no task drives, or a queue that cannot be reached, leaves the decision as it is (logged).
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
