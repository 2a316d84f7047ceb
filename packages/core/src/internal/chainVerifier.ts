/** `Verify.make`'s implementation (see `chainVerifier`). */
import { costOfPayload, type Event, type RunStatus, statusAfter } from "../Event.js"
import type { Verifier, VerifyOptions, VerifyReport } from "../Verify.js"
import { chainChecker, GENESIS_HASH } from "./hash.js"
import { isLazy, tagOf } from "./lazyPayload.js"

/** A `Verifier` whose `push` takes how many of the page's first events already hash to their stored hash. */
export interface ChainVerifier extends Verifier {
  readonly push: (events: ReadonlyArray<Event>, hashed?: number) => VerifyReport | undefined
}

/**
 * `Verify.make`'s verifier, whose `push` also takes how many of the page's first events are known to hash to their
 * stored hash (a worker thread checked them over the same material, `verifyWorker`): their hashes are not computed
 * again; every other check, and the hash of every event after them, is made here.
 */
export const chainVerifier = (runId: string, options: VerifyOptions = {}): ChainVerifier => {
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
  const check = (event: Event, hashed: boolean): VerifyReport | undefined => {
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
    if (!hashed && !hashMatches(event, true)) {
      return broken(event.seq, "hash does not match the event's content as stored (altered, or written with another audit key)")
    }
    return undefined
  }
  return {
    push: (events, hashed = 0) => {
      if (broke !== undefined) return broke
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!
        broke = check(event, i < hashed)
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
        costUsd += costOfPayload(p)
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
