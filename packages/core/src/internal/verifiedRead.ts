/**
 * A run's verified log, read forward a page at a time: each page's chain checked before any of its events is
 * returned, and at the log's end the run record's head, status and cost. What replay, resume, fork and
 * `Kernel.verify` read a run through; memory holds a page, however long the run.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import type { Event, RunInfo } from "../Event.js"
import * as EventStore from "../EventStore.js"
import type { VerifyReport } from "../Verify.js"
import { chainVerifier } from "./chainVerifier.js"
import { GENESIS_HASH, storedPayload } from "./hash.js"
import * as VerifyWorker from "./verifyWorker.js"

/** What reading a run's verified log fails with: the store's errors, a broken chain, a log cut before its head. */
export type ReadError = Errors.RunNotFound | Errors.StoreError | Errors.LogTampered | Errors.InvalidRunState

/** The `InvalidRunState` of a log that ends before the head its run record vouches for. */
export const truncated = (info: RunInfo, logEnd: number) =>
  new Errors.InvalidRunState({
    runId: info.runId,
    status: `truncated (its log ends at seq ${logEnd}, its run record at seq ${info.headSeq})`,
    expected: `a whole log (restore the missing events; \`artana verify ${info.runId}\` shows where the log breaks)`
  })

/**
 * A run's log up to its record's head, read a page at a time and verified as the pages go by: each page's events
 * (their hashes over their stored bytes, the links, `seq` without gaps) before any of them is returned, and once the
 * last page is read, the run record's head, status and cost. `next` gives the next page (never empty), then None once
 * the log ended and those checks passed. A log longer than its first page is read a page ahead, each page's hashes
 * checked on a worker thread meanwhile (`verifyWorker`; `Verify` still checks every page before it is given):
 * memory holds two pages, however long the run. A log cut before that head fails
 * `InvalidRunState` (truncated) at its end; any other break fails `LogTampered`, naming the first broken seq. A plain
 * loop over `readEvents`: what replay pulls a page at a time (`verifiedEvents` streams it). With `pageBytes`, the
 * pages after the first are sized by bytes (see `PageBytes`).
 */
export const verifiedPages = (
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  options: { readonly pageSize?: number | undefined; readonly pageBytes?: PageBytes | undefined } = {}
): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
  let pageSize = Math.max(1, Math.floor(options.pageSize ?? EventStore.DEFAULT_PAGE_SIZE))
  const sized = options.pageBytes
  const verifier = chainVerifier(info.runId, {
    auditKey,
    heads: [{ source: "store's run record", seq: info.headSeq, hash: info.headHash }],
    record: info
  })
  // A long read hashes its pages on the worker thread, a page ahead (see `verifyWorker`).
  const onWorker = VerifyWorker.worthIt(info.headSeq, pageSize)
  let logEnd = 0
  // The last seq read (the page ahead's last, when there is one), and the hash of that event.
  let readEnd = 0
  let readHash = GENESIS_HASH
  // "read": more pages may follow; "end": the last page was read, the checks of the log's end follow it; "done".
  let state: "read" | "end" | "done" = "read"
  // The page read ahead: its events, and what tells how many of them the worker found hashing to their stored hash.
  let ahead: { readonly events: ReadonlyArray<Event>; readonly hashed: VerifyWorker.Hashed } | undefined
  // The error of a page read ahead, failed once the page before it was given.
  let failedAhead: ReadError | undefined
  const end = Effect.suspend((): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
    state = "done"
    // The log ends before the head the run's record vouches for: events were removed (by hand, or a partial
    // restore). Going on would run the removed steps again, side effects included, and hide the cut.
    if (info.headSeq > logEnd) return Effect.fail(truncated(info, logEnd))
    const report = verifier.finish()
    return report.ok ? Effect.succeed(Option.none()) : Effect.fail(tampered(info, report))
  })
  // Reads the next page (none at the log's end), its hashes sent to the worker when the read uses it.
  const read = Effect.suspend(() =>
    Effect.map(store.readEvents(info.tenantId, info.runId, readEnd + 1, pageSize), (page) => {
      // Events appended after the record was read are not this read's: the record's head ends it. A short page is
      // the end of the log (as it was when read).
      let events = page
      const beyond = page.findIndex((event) => event.seq > info.headSeq)
      if (beyond >= 0) events = page.slice(0, beyond)
      if (events.length === 0) {
        state = "end"
        return undefined
      }
      const last = events[events.length - 1]!
      if (beyond >= 0 || page.length < pageSize || last.seq >= info.headSeq) state = "end"
      if (sized !== undefined) pageSize = nextPageSize(sized, events)
      const hashed = onWorker ? VerifyWorker.submit(VerifyWorker.pageOf(events, readHash, info.runId, info.tenantId), auditKey) : VerifyWorker.none
      readEnd = last.seq
      readHash = last.hash
      return { events, hashed }
    })
  )
  // Verifies the page read ahead (the worker's answer, then every other check) and gives it.
  const give = (page: { readonly events: ReadonlyArray<Event>; readonly hashed: VerifyWorker.Hashed }): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
    const broken = verifier.push(page.events, page.hashed())
    if (broken !== undefined) return Effect.fail(tampered(info, broken))
    logEnd = page.events[page.events.length - 1]!.seq
    return Effect.succeed(Option.some(page.events))
  }
  const next: Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> = Effect.suspend(() => {
    const current = ahead
    ahead = undefined
    if (failedAhead !== undefined) {
      const error = failedAhead
      failedAhead = undefined
      state = "done"
      return Effect.fail(error)
    }
    if (current === undefined) {
      if (state === "done") return Effect.succeed(Option.none())
      if (state === "end") return end
      return Effect.flatMap(read, (page) => (page === undefined ? end : (ahead = page, next)))
    }
    // The next page is read (and sent to the worker) while the worker hashes this one; a read without the worker
    // gives each page before reading the next.
    if (!onWorker || state !== "read") return give(current)
    return Effect.matchEffect(read, {
      // A page read ahead that fails does not hide a break in the page before it: that page is verified (and given)
      // first, as a read without the worker would, and the read's error is the next pull's.
      onFailure: (error) => Effect.tap(give(current), () => (failedAhead = error, Effect.void)),
      onSuccess: (page) => {
        ahead = page
        return give(current)
      }
    })
  })
  return next
}

/**
 * Pages bounded by bytes: each page after the first holds as many events as fit in `budget` characters of stored
 * payload text at the bytes per event of the page before, at most `max` events (and at least one). A page costs a
 * replay about what 100-200 replayed events cost (bench/scale/README.md), so short events are read in long pages, and
 * long ones (an agent's model requests, tens of KB each) in short ones: the memory a page holds stays near the budget
 * whatever its events weigh.
 */
export interface PageBytes {
  readonly budget: number
  readonly max: number
}

/** The events of the page after `events` under `sized`: its budget at their bytes per event (payload text). */
const nextPageSize = (sized: PageBytes, events: ReadonlyArray<Event>): number => {
  let chars = 0
  for (let i = 0; i < events.length; i++) chars += storedPayload(events[i]!).length
  const perEvent = Math.max(1, chars / events.length)
  return Math.max(1, Math.min(Math.floor(sized.max), Math.floor(sized.budget / perEvent)))
}

/**
 * `verifiedPages` as a stream: each chunk is one page. A run's log up to its record's head, verified as the pages go
 * by; memory holds a page, however long the run.
 */
export const verifiedEvents = (
  store: EventStore.Service,
  auditKey: string | undefined,
  info: RunInfo,
  options: { readonly pageSize?: number | undefined } = {}
): Stream.Stream<Event, ReadError> =>
  Stream.suspend(() => {
    const next = verifiedPages(store, auditKey, info, options)
    return Stream.repeatEffectChunkOption(Effect.matchEffect(next, {
      onFailure: (error) => Effect.fail(Option.some(error)),
      onSuccess: Option.match({ onNone: () => Effect.fail(Option.none()), onSome: (events) => Effect.succeed(Chunk.unsafeFromArray(events)) })
    }))
  })

export const tampered = (info: RunInfo, report: VerifyReport) =>
  new Errors.LogTampered({ runId: info.runId, seq: report.firstBrokenSeq ?? 0, reason: report.reason ?? "broken" })
