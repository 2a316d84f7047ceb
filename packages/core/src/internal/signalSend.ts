/**
 * Sending a signal: a `SignalSent` appended to the run's own hash chain after its head, under the append's sequence
 * check, so it serializes with the run's own appends (read again and retried when an execution's append gets in
 * first). A keyed signal is written at most once.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import { RUN_STEP_KEY } from "../Event.js"
import * as EventStore from "../EventStore.js"
import * as Json from "../Json.js"
import type { SignalReceipt, SignalRequest } from "../Kernel.js"
import { successorOf } from "./chain.js"
import * as Ledger from "./ledger.js"

export type SendError =
  | Errors.SignalRefused
  | Errors.RunNotFound
  | Errors.InvalidInput
  | Errors.StoreError
  | Errors.SequenceConflict
  | Errors.LogTampered

/** A run's statuses that take no signal: nothing would ever read it. */
const ended = (status: string) => status === "completed" || status === "failed"

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
 * The first `SignalSent` of id `signalId` in the runs `runId` continues (its chain's earlier runs, the latest first),
 * if there is one: each log read whole, once (an earlier run has ended: its log no longer grows).
 */
const sentEarlier = (store: EventStore.Service, tenantId: string, runId: string, signalId: string) =>
  Effect.gen(function*() {
    let current = runId
    for (;;) {
      const [first] = yield* store.readEvents(tenantId, current, 1, 1)
      const previous = first?.payload._tag === "RunStarted" ? first.payload.continuedFrom?.runId : undefined
      if (previous === undefined) return undefined
      const seq = yield* sentWithId(store, tenantId, previous, signalId, 1, Number.MAX_SAFE_INTEGER)
      if (seq !== undefined) return { runId: previous, seq }
      current = previous
    }
  })

/**
 * Appends a `SignalSent` after the head of the run, or, when it continued as new, of the last run of its chain (read
 * again when an execution's append gets in first). A keyed signal (`id`) is looked for in the log first, of every run
 * of the chain (each whole once; on a retry only what was appended since): when its id is there, nothing is written
 * (also when the run has ended since: a sender retrying is told it got through).
 */
export const send = (store: EventStore.Service, auditKey: string | undefined, request: SignalRequest): Effect.Effect<SignalReceipt, SendError> =>
  Effect.gen(function*() {
    const { tenantId, name } = request
    const json = Json.fromUnknown(request.payload)
    if (!json.ok) return yield* new Errors.InvalidInput({ what: `payload of signal "${name}"`, reason: json.error })
    if (name.length === 0) return yield* new Errors.InvalidInput({ what: "signal name", reason: "empty" })
    if (request.id !== undefined && request.id.length === 0) return yield* new Errors.InvalidInput({ what: "signal id", reason: "empty: pass none for a fresh id" })
    const signalId = request.id ?? crypto.randomUUID()
    const unchecked = request.id === undefined ? Number.MAX_SAFE_INTEGER : 0
    // The run the signal goes to (the chain's last, once followed), and for a keyed signal how far its log was read
    // (through `checked`) without finding the id.
    let runId = request.runId
    let checked = unchecked
    // A keyed signal taken by an earlier run of the chain (one it did not take was carried here, id and all).
    if (request.id !== undefined) {
      const earlier = yield* sentEarlier(store, tenantId, runId, signalId)
      if (earlier !== undefined) return { signalId, runId: earlier.runId, seq: earlier.seq, duplicate: true }
    }
    for (let attempt = 1;;) {
      const info = yield* store.getRun(tenantId, runId)
      if (checked < info.headSeq) {
        const sent = yield* sentWithId(store, tenantId, runId, signalId, checked + 1, info.headSeq)
        if (sent !== undefined) return { signalId, runId, seq: sent, duplicate: true }
        checked = info.headSeq
      }
      // A run that continued as new is its chain's: the signal goes on to its successor, whose log is read in turn.
      if (info.status === "continued") {
        runId = yield* successorOf(store, info)
        checked = unchecked
        continue
      }
      if (ended(info.status)) return yield* new Errors.SignalRefused({ runId, name, status: info.status })
      // A keyed signal is not written after another sender's signal of its id: the append fails, and the loop finds
      // that one in the log.
      const ledger = Ledger.outsider(store, auditKey, info, (e) =>
        request.id === undefined || e.payload._tag !== "SignalSent" || e.payload.signalId !== signalId)
      const written = yield* Effect.either(ledger.append(RUN_STEP_KEY, [{ _tag: "SignalSent", signalId, name, payload: json.json }]))
      if (Either.isRight(written)) return { signalId, runId, seq: ledger.head().seq }
      const error = written.left
      // The run's own execution appended (or claimed it, or continued it) first: read its status and head again.
      if ((error._tag === "SequenceConflict" || error._tag === "OwnershipLost") && attempt++ < SEND_ATTEMPTS) continue
      if (error._tag === "OwnershipLost" || error._tag === "InvalidRunState") {
        return yield* new Errors.SequenceConflict({ runId, expectedSeq: info.headSeq })
      }
      return yield* Effect.fail(error)
    }
  })
