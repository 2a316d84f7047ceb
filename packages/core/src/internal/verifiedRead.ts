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
import { type ChainVerifier, chainVerifier } from "./chainVerifier.js"
import { GENESIS_HASH, storedPayload } from "./hash.js"
import * as ReadWorker from "./readWorker.js"
import type { AheadPage, RequestAhead } from "./sqlEventRead.js"
import * as VerifyWorker from "./verifyWorker.js"

/** A page read: its events, and what tells how many of them the verify worker found hashing to their stored hash. */
interface Read {
  readonly events: ReadonlyArray<Event>
  readonly hashed: VerifyWorker.Hashed
}

/** The page read ahead: read, or being read by the store's read-ahead worker (undefined once read: the log ended). */
type Ahead = Read | { readonly pending: Effect.Effect<Read | undefined, ReadError> }

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
  // A long read hashes its pages on the worker thread, a page ahead (see `verifyWorker`); on a store with a read-ahead
  // worker (`readWorker`), that worker reads them too.
  const onWorker = VerifyWorker.worthIt(info.headSeq, pageSize)
  let readAhead = onWorker ? ReadWorker.aheadOf(store) : undefined
  const verifyOnWorker = () => onWorker && (readAhead === undefined || !readAhead.usable())
  let logEnd = 0
  // The last seq read (the page ahead's last, when there is one), and the hash of that event.
  let readEnd = 0
  let readHash = GENESIS_HASH
  // "read": more pages may follow; "end": the last page was read, the checks of the log's end follow it; "done".
  let state: "read" | "end" | "done" = "read"
  // The page read ahead: read, or still being read by the read-ahead worker.
  let ahead: Ahead | undefined
  // The error of a page read ahead, failed once the page before it was given.
  let failedAhead: ReadError | undefined
  const end = Effect.suspend(() => {
    state = "done"
    return checkedEnd(info, logEnd, verifier)
  })
  // Where the read stands after a page of `length` events, its first `within` up to the record's head (the last of
  // them: `lastSeq`, `lastHash`; their payloads: `chars` long); false when none is (the log ended). `cut`: the page's
  // rows go on after its events (the read-ahead worker stopped at a row it does not read).
  const advance = (length: number, within: number, lastSeq: number, lastHash: string, chars: number, cut: boolean): boolean => {
    if (within === 0) {
      state = "end"
      return false
    }
    // Events appended after the record was read are not this read's: the record's head ends it. A short page is
    // the end of the log (as it was when read).
    if (within < length || (!cut && length < pageSize) || lastSeq >= info.headSeq) state = "end"
    if (sized !== undefined) pageSize = sizedBy(sized, chars, within)
    readEnd = lastSeq
    readHash = lastHash
    return true
  }
  // A page read here: its events up to the record's head, and where the read stands after it (undefined: the log ended).
  const settle = (page: ReadonlyArray<Event>, hashedOf: (events: ReadonlyArray<Event>) => VerifyWorker.Hashed): Read | undefined => {
    const events = upToHead(page, info.headSeq)
    const last = events[events.length - 1]
    // Sent to the verify worker from the hash before the page: before `advance` moves the read past it.
    const hashed = last === undefined ? VerifyWorker.none : hashedOf(events)
    const chars = sized === undefined ? 0 : payloadChars(events)
    return advance(page.length, events.length, last?.seq ?? 0, last?.hash ?? "", chars, false) ? { events, hashed } : undefined
  }
  // Reads the next page here (none at the log's end), its hashes sent to the verify worker when the read uses it and
  // the store has no read-ahead worker that may read its pages: while that one starts, pages read here are hashed here
  // (a third thread would only compete for the cores, and hold its own heap).
  const readHere = Effect.suspend(() =>
    Effect.map(store.readEvents(info.tenantId, info.runId, readEnd + 1, pageSize), (page) =>
      settle(page, (events) => verifyOnWorker() ? VerifyWorker.submit(VerifyWorker.pageOf(events, readHash, info.runId, info.tenantId), auditKey) : VerifyWorker.none))
  )
  // A page the read-ahead worker read: its seqs and hashes say where the read stands, so the next page is asked for at
  // once (the worker reads it while this one is parsed and replayed). After a page it cut short, pages are read here.
  const settleAhead = (page: AheadPage): Effect.Effect<Read | undefined, ReadError> => {
    if (page.cut || page.count === 0) readAhead = undefined
    if (page.count === 0) return readHere
    const within = withinHead(page, info.headSeq)
    const chars = sized === undefined || within === 0 ? 0 : page.payloadChars(within)
    const last = within - 1
    if (!advance(page.count, within, last < 0 ? 0 : page.seqAt(last), last < 0 ? "" : page.hashAt(last), chars, page.cut)) return Effect.succeed(undefined)
    const events = Effect.map(page.events, (events): Read => ({ events: within < events.length ? events.slice(0, within) : events, hashed: page.hashed }))
    return state === "read" ? Effect.zipRight(askNext, events) : events
  }
  // Asks for the next page (the worker's, or read here): kept as the page ahead, or its error (the next pull's).
  const askNext: Effect.Effect<void> = Effect.matchEffect(Effect.suspend(() => read), {
    onFailure: (error) => Effect.sync(() => void (failedAhead = error)),
    onSuccess: (page) => Effect.sync(() => void (ahead = page))
  })
  // Asks the store's read-ahead worker for the next page (see `askAhead`), or reads it here.
  const read: Effect.Effect<Ahead | undefined, ReadError> = Effect.suspend(() =>
    readAhead === undefined ? readHere : askAhead(readAhead, info, auditKey, readEnd + 1, pageSize, readHash, readHere, settleAhead)
  )
  // Verifies a page read (the worker's answer, then every other check) and gives it.
  const give = (page: Read): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
    const broken = verifier.push(page.events, page.hashed())
    if (broken !== undefined) return Effect.fail(tampered(info, broken))
    logEnd = page.events[page.events.length - 1]!.seq
    return Effect.succeed(Option.some(page.events))
  }
  // The next page is read (and sent to the verify worker) while that worker hashes this one, unless it was asked for
  // already (`settleAhead`); a read without the worker gives each page before reading the next. A failed read ahead
  // does not hide a break in the page before it: that page is given (verified) first, the error is the next pull's.
  const giveReadingOn = (current: Read): Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> => {
    if (!onWorker || state !== "read" || ahead !== undefined || failedAhead !== undefined) return give(current)
    return Effect.zipRight(askNext, Effect.suspend(() => give(current)))
  }
  const next: Effect.Effect<Option.Option<ReadonlyArray<Event>>, ReadError> = Effect.suspend(() => {
    const current = ahead
    ahead = undefined
    // The page ahead failed: the read fails here (and stays failed, below).
    if (failedAhead !== undefined) return Effect.fail(failedAhead)
    if (current === undefined) {
      if (state === "done") return Effect.succeed(Option.none())
      if (state === "end") return end
      return Effect.flatMap(read, (page) => (page === undefined ? end : (ahead = page, next)))
    }
    // The page the read-ahead worker was reading: once read, as a page read here.
    if ("pending" in current) return Effect.flatMap(current.pending, (page) => (page === undefined ? end : giveReadingOn(page)))
    return giveReadingOn(current)
  })
  // A read that failed stays failed: a further pull gets its error again, never a page after it nor its end.
  let failed: ReadError | undefined
  return Effect.suspend(() => (failed !== undefined ? Effect.fail(failed) : Effect.tapError(next, (error) => Effect.sync(() => void (failed = error)))))
}

/** The events of `page` up to `headSeq`. */
const upToHead = (page: ReadonlyArray<Event>, headSeq: number): ReadonlyArray<Event> => {
  const beyond = page.findIndex((event) => event.seq > headSeq)
  return beyond >= 0 ? page.slice(0, beyond) : page
}

/** How many of `page`'s first events are up to `headSeq` (its seqs ascend). */
const withinHead = (page: AheadPage, headSeq: number): number => {
  let within = 0
  while (within < page.count && page.seqAt(within) <= headSeq) within++
  return within
}

/**
 * The checks at the end of a log read up to `logEnd`: that it reaches the head its run's record vouches for (a log
 * that ends before it had events removed, by hand or a partial restore: going on would run the removed steps again,
 * side effects included, and hide the cut), then what `verifier` checks at the end.
 */
const checkedEnd = (info: RunInfo, logEnd: number, verifier: ChainVerifier): Effect.Effect<Option.Option<never>, ReadError> => {
  if (info.headSeq > logEnd) return Effect.fail(truncated(info, logEnd))
  const report = verifier.finish()
  return report.ok ? Effect.succeed(Option.none()) : Effect.fail(tampered(info, report))
}

/**
 * Asks the store's read-ahead worker (`readWorker`) for the page from `from`: what resolves to it once read, as
 * `settle` makes it (undefined: the log ended), or read here (`readHere`) when the worker cannot take it (starting,
 * died, in a transaction) or did not read it.
 */
const askAhead = (
  ahead: RequestAhead,
  info: RunInfo,
  auditKey: string | undefined,
  from: number,
  limit: number,
  prevHash: string,
  readHere: Effect.Effect<Read | undefined, ReadError>,
  settle: (page: AheadPage) => Effect.Effect<Read | undefined, ReadError>
): Effect.Effect<Ahead | undefined, ReadError> =>
  Effect.flatMap(ahead.request(info.tenantId, info.runId, from, limit, prevHash, auditKey), (pending): Effect.Effect<Ahead | undefined, ReadError> => {
    if (pending === undefined) return readHere
    return Effect.succeed({
      pending: Effect.flatMap(pending, (page) => (page === undefined ? readHere : settle(page)))
    })
  })

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

/** The characters of the stored payload text of `events`. */
const payloadChars = (events: ReadonlyArray<Event>): number => {
  let chars = 0
  for (let i = 0; i < events.length; i++) chars += storedPayload(events[i]!).length
  return chars
}

/** The events of the page after a page of `events` events, `chars` characters of stored payload, under `sized`. */
const sizedBy = (sized: PageBytes, chars: number, events: number): number => {
  const perEvent = Math.max(1, chars / events)
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
