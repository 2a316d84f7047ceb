/**
 * Checks a run's hash chain: every event's hash, the links between them, `seq` without gaps, and
 * optionally an exported head `(seq, hash)` so a truncated tail is caught too.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { Event, RunInfo } from "./Event.js"
import { GENESIS_HASH } from "./internal/hash.js"
import { chainVerifier } from "./internal/chainVerifier.js"

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

/**
 * A verification that takes a run's events a page at a time: `push` each page in order, then `finish`. Memory stays
 * that of one page however long the run: the chain, the exported heads and the record's status and cost are checked
 * as the events go by. `verifyEvents` is this over one array.
 *
 * @example
 * const verifier = Verify.make(runId, { auditKey })
 * for (const page of pages) if (verifier.push(page) !== undefined) break
 * const report = verifier.finish()
 */
export interface Verifier {
  /** Checks the next events (in `seq` order); the report of the first break, or undefined while the chain holds. */
  readonly push: (events: ReadonlyArray<Event>) => VerifyReport | undefined
  /** The report: the first break pushed, or the whole log's checks (heads, record) once every event was pushed. */
  readonly finish: () => VerifyReport
}

/** Starts a verification of one run's events, pushed in pages. */
export const make = (runId: string, options: VerifyOptions = {}): Verifier => chainVerifier(runId, options)

/** Verifies the events of one run, in order. */
export const verifyEvents = (runId: string, events: ReadonlyArray<Event>, options: VerifyOptions = {}): VerifyReport => {
  const verifier = make(runId, options)
  verifier.push(events)
  const report = verifier.finish()
  if (report.ok) return report
  // A break is reported with the whole array's extent, as read.
  const last = events[events.length - 1]
  return { ...report, events: events.length, headSeq: last?.seq ?? 0, headHash: last?.hash ?? GENESIS_HASH }
}
