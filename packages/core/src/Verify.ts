/**
 * Checks a run's hash chain: every event's hash, the links between them, `seq` without gaps, and
 * optionally an exported head `(seq, hash)` so a truncated tail is caught too.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { type Event, type RunInfo, type RunStatus, statusAfter } from "./Event.js"
import { chainChecker, GENESIS_HASH } from "./internal/hash.js"
import { isLazy, tagOf } from "./internal/lazyPayload.js"

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
export const make = (runId: string, options: VerifyOptions = {}): Verifier => {
  const hashMatches = chainChecker(options.auditKey)
  const heads = options.heads ?? []
  // The hash found at each head's seq, as the events go by.
  const headHashes = new Map<number, string>()
  for (const head of heads) if (head.seq > 0) headHashes.set(head.seq, "")
  let count = 0
  let prevHash = GENESIS_HASH
  let status: RunStatus | undefined
  let costUsd = 0
  let broke: VerifyReport | undefined
  const base = () => ({ runId, events: count, headSeq: count, headHash: prevHash })
  const broken = (seq: number, reason: string): VerifyReport => ({ ...base(), ok: false, firstBrokenSeq: seq, reason })
  const check = (event: Event): VerifyReport | undefined => {
    const expectedSeq = count + 1
    if (event.seq !== expectedSeq) {
      return broken(expectedSeq, `expected seq ${expectedSeq}, found seq ${event.seq} (an event is missing or out of order)`)
    }
    if (event.runId !== runId) return broken(event.seq, `event belongs to run ${event.runId}`)
    const tag = tagOf(event)
    if (event.type !== tag) return broken(event.seq, `type ${event.type} does not match payload ${tag}`)
    if (event.prevHash !== prevHash) return broken(event.seq, "prevHash does not link to the previous event's hash")
    // The event itself, not a copy: its hash covers the payload's stored bytes, which are kept beside the event.
    // Linked: its prevHash is the genesis hash or the previous event's, checked just before.
    if (!hashMatches(event, true)) {
      return broken(event.seq, "hash does not match the event's content as stored (altered, or written with another audit key)")
    }
    return undefined
  }
  return {
    push: (events) => {
      if (broke !== undefined) return broke
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!
        broke = check(event)
        if (broke !== undefined) {
          // The report counts the events that held.
          return broke
        }
        count++
        prevHash = event.hash
        if (headHashes.has(event.seq)) headHashes.set(event.seq, event.hash)
        // A replay's lazy `ModelRequested` (`lazyPayload.ts`) neither sets a status nor costs: not decoded here.
        if (isLazy(event)) continue
        const p = event.payload
        status = statusAfter(p) ?? status
        if (p._tag === "ModelCompleted") costUsd += p.costUsd
      }
      return undefined
    },
    finish: () => {
      if (broke !== undefined) return broke
      for (const head of heads) {
        if (head.seq === 0) continue
        if (head.seq > count) {
          return broken(count + 1, `the ${head.source} head is seq ${head.seq}, but the log ends at seq ${count} (truncated)`)
        }
        if (headHashes.get(head.seq) !== head.hash) return broken(head.seq, `the ${head.source} head hash at seq ${head.seq} differs`)
      }
      if (options.record !== undefined && count > 0) {
        const logStatus = status ?? "running"
        if (options.record.status !== logStatus) {
          return broken(count, `the run record says ${options.record.status}, its log says ${logStatus}`)
        }
        if (Math.abs(options.record.costUsd - costUsd) > 1e-9 * Math.max(1, Math.abs(costUsd))) {
          return broken(count, `the run record's cost ($${options.record.costUsd}) is not its log's ($${costUsd})`)
        }
      }
      return { ...base(), ok: true }
    }
  }
}

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
