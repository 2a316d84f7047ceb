/**
 * Checks a run's hash chain: every event's hash, the links between them, `seq` without gaps, and
 * optionally an exported head `(seq, hash)` so a truncated tail is caught too.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { type Event, type RunInfo, summarize } from "./Event.js"
import { chainChecker, GENESIS_HASH } from "./internal/hash.js"

/** A head exported earlier (for example into an audit system): the chain must still contain it. */
export const Head = Schema.Struct({ seq: Schema.Int, hash: Schema.String })
export type Head = typeof Head.Type

/** The outcome of a verification; `firstBrokenSeq` names the first event whose chain breaks. */
export const VerifyReport = Schema.Struct({
  runId: Schema.String,
  ok: Schema.Boolean,
  events: Schema.Int,
  headSeq: Schema.Int,
  headHash: Schema.String,
  firstBrokenSeq: Schema.optional(Schema.Int),
  reason: Schema.optional(Schema.String)
})
export type VerifyReport = typeof VerifyReport.Type

export interface VerifyOptions {
  /** The HMAC key the log was written with, if any. */
  readonly auditKey?: string | undefined
  /** Heads the chain must contain: an exported head, and the head the store's run row records. */
  readonly heads?: ReadonlyArray<Head & { readonly source: string }>
  /**
   * The run's record, whose status and cost must be what its log says (they are not in the chain: a record edited
   * by hand, to reset a budget or mark a run completed, is caught here).
   */
  readonly record?: Pick<RunInfo, "status" | "costUsd"> | undefined
}

/** Verifies the events of one run, in order. */
export const verifyEvents = (runId: string, events: ReadonlyArray<Event>, options: VerifyOptions = {}): VerifyReport => {
  let prevHash = GENESIS_HASH
  const hashMatches = chainChecker(options.auditKey)
  const last = events.length === 0 ? undefined : events[events.length - 1]!
  const base = { runId, events: events.length, headSeq: last?.seq ?? 0, headHash: last?.hash ?? GENESIS_HASH }
  const broken = (seq: number, reason: string): VerifyReport => ({ ...base, ok: false, firstBrokenSeq: seq, reason })
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    const expectedSeq = i + 1
    if (event.seq !== expectedSeq) {
      return broken(expectedSeq, `expected seq ${expectedSeq}, found seq ${event.seq} (an event is missing or out of order)`)
    }
    if (event.runId !== runId) return broken(event.seq, `event belongs to run ${event.runId}`)
    if (event.type !== event.payload._tag) {
      return broken(event.seq, `type ${event.type} does not match payload ${event.payload._tag}`)
    }
    if (event.prevHash !== prevHash) return broken(event.seq, "prevHash does not link to the previous event's hash")
    // The event itself, not a copy: its hash covers the payload's stored bytes, which are kept beside the event.
    // Linked: its prevHash is the genesis hash or the previous event's, checked just before.
    if (!hashMatches(event, true)) {
      return broken(event.seq, "hash does not match the event's content as stored (altered, or written with another audit key)")
    }
    prevHash = event.hash
  }
  for (const head of options.heads ?? []) {
    if (head.seq === 0) continue
    const at = events[head.seq - 1]
    if (at === undefined) {
      return broken(base.headSeq + 1, `the ${head.source} head is seq ${head.seq}, but the log ends at seq ${base.headSeq} (truncated)`)
    }
    if (at.hash !== head.hash) return broken(head.seq, `the ${head.source} head hash at seq ${head.seq} differs`)
  }
  if (options.record !== undefined && events.length > 0) {
    const summary = summarize(events)
    const status = summary.status ?? "running"
    const costUsd = summary.costUsd
    if (options.record.status !== status) {
      return broken(base.headSeq, `the run record says ${options.record.status}, its log says ${status}`)
    }
    if (Math.abs(options.record.costUsd - costUsd) > 1e-9 * Math.max(1, Math.abs(costUsd))) {
      return broken(base.headSeq, `the run record's cost ($${options.record.costUsd}) is not its log's ($${costUsd})`)
    }
  }
  return { ...base, ok: true }
}
