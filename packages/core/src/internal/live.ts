/**
 * A run's live stream: its log events and the deltas its streamed model calls keep in the `LiveStore`, merged in
 * position order, from an offset on, following the run until it ends. In the kernel's process a write wakes the
 * readers of its run at once; another process's write wakes them through the store's `RunNotices` (SQLite: its commit
 * is heard; PostgreSQL: a NOTIFY), and polling is the backstop.
 */
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import type { Event, RunInfo, RunStatus } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import * as Live from "../Live.js"
import type * as LiveStore from "../LiveStore.js"
import type * as RunNotices from "../RunNotices.js"
import * as Verify from "../Verify.js"
import { runKey } from "./runKey.js"

/** A wake-up taken before reading a run: it fires once the run changes after it was taken. */
export interface Wake {
  /** Resolves once the run changed. */
  readonly await: Effect.Effect<void>
  /** True once the run changed, false when `millis` passed first: one timer, no fiber (a reader waits once per delta). */
  readonly within: (millis: number) => Effect.Effect<boolean>
  /**
   * `within`, going on with `woke()` once the run changed (called as the change is told: in the writer's call, after
   * its write) or `slept()` when `millis` passed first: what the waiter does next is decided where it is woken. With
   * `poll`, a wait woken by a write leaves its timer there for the waiter's next wait (or its end) to clear.
   */
  readonly withinThen: <A, E>(millis: number, woke: () => Effect.Effect<A, E>, slept: () => Effect.Effect<A, E>, poll?: PollTimer) => Effect.Effect<A, E>
  /** Whether the run changed already. */
  readonly fired: () => boolean
}

/** Wakes the readers of a run when something was written to it in this process. */
export interface Hub {
  /** Deltas were kept for the run. */
  readonly changed: (tenantId: string, runId: string) => Effect.Effect<void>
  /** `changed` as a plain call (a streamed call's push path). */
  readonly wake: (tenantId: string, runId: string) => void
  /** Events were appended to the run's log. */
  readonly appended: (tenantId: string, runId: string) => Effect.Effect<void>
  /** `appended` as a plain call: the run's log changed (here, or in another process: a notice was heard). */
  readonly logChanged: (tenantId: string, runId: string) => void
  /** How many appends to the run this process has seen: a reader that saw the same number need not read the log again. */
  readonly logVersion: (tenantId: string, runId: string) => number
  /** Fires once the run changes after this call (take it before reading, so no change is missed). */
  readonly ticket: (tenantId: string, runId: string) => Effect.Effect<Wake>
  /** `ticket` as a plain call. */
  readonly ticketNow: (tenantId: string, runId: string) => Wake
}

/**
 * A reader's poll timer, from one wait to the next: the write that wakes the reader does not clear it (a call on a
 * streamed delta's way to the reader); the reader's next wait does, or its end, once the delta was handed over.
 */
export interface PollTimer {
  timer: ReturnType<typeof setTimeout> | undefined
}

/** Clears the timer a woken wait left. */
export const clearPoll = (poll: PollTimer): void => {
  clearTimeout(poll.timer)
  poll.timer = undefined
}

const changedNow = () => Effect.succeed(true)
const notChanged = () => Effect.succeed(false)

/**
 * The next change of one run, as every reader that took it before the change waits for it: one object per change (a
 * reader takes a ticket per delta), its waiters plain callbacks, called once.
 */
class Ticket implements Wake {
  private changed = false
  private callbacks: Array<() => void> | undefined
  /** The run changed: every waiter goes on, in the writer's call. */
  fire(): void {
    this.changed = true
    const callbacks = this.callbacks
    this.callbacks = undefined
    if (callbacks !== undefined) for (const callback of callbacks) callback()
  }
  fired(): boolean {
    return this.changed
  }
  private add(callback: () => void): void {
    ;(this.callbacks ??= []).push(callback)
  }
  private remove(callback: () => void): void {
    const i = this.callbacks?.indexOf(callback) ?? -1
    if (i >= 0) this.callbacks!.splice(i, 1)
  }
  get await(): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      if (this.changed) return resume(Effect.void)
      const callback = () => resume(Effect.void)
      this.add(callback)
      return Effect.sync(() => this.remove(callback))
    })
  }
  within(millis: number): Effect.Effect<boolean> {
    return this.withinThen(millis, changedNow, notChanged)
  }
  withinThen<A, E>(millis: number, woke: () => Effect.Effect<A, E>, slept: () => Effect.Effect<A, E>, poll?: PollTimer): Effect.Effect<A, E> {
    return Effect.async<A, E>((resume) => {
      if (poll !== undefined) clearPoll(poll)
      if (this.changed) return resume(woke())
      let woken = false
      const callback = () => {
        woken = true
        if (poll === undefined) clearTimeout(timer)
        resume(woke())
      }
      const timer = setTimeout(() => {
        if (woken) return
        this.remove(callback)
        resume(slept())
      }, millis)
      if (poll !== undefined) poll.timer = timer
      this.add(callback)
      return Effect.sync(() => {
        clearTimeout(timer)
        this.remove(callback)
      })
    })
  }
}

export const makeHub = (): Hub => {
  const waiting = new Map<string, Ticket>()
  // Only runs with readers waiting or read: a count per run, dropped with nothing else (a run's readers are few).
  const versions = new Map<string, number>()
  const wake = (tenantId: string, runId: string): void => {
    const key = runKey(tenantId, runId)
    const ticket = waiting.get(key)
    if (ticket === undefined) return
    waiting.delete(key)
    ticket.fire()
  }
  const changed = (tenantId: string, runId: string): Effect.Effect<void> => Effect.sync(() => wake(tenantId, runId))
  const ticketNow = (tenantId: string, runId: string): Wake => {
    const key = runKey(tenantId, runId)
    let ticket = waiting.get(key)
    if (ticket === undefined) {
      ticket = new Ticket()
      waiting.set(key, ticket)
    }
    return ticket
  }
  const logChanged = (tenantId: string, runId: string): void => {
    const key = runKey(tenantId, runId)
    if (versions.has(key)) versions.set(key, versions.get(key)! + 1)
    wake(tenantId, runId)
  }
  return {
    appended: (tenantId, runId) => Effect.sync(() => logChanged(tenantId, runId)),
    logChanged,
    logVersion: (tenantId, runId) => {
      const key = runKey(tenantId, runId)
      const v = versions.get(key)
      if (v !== undefined) return v
      versions.set(key, 0)
      return 0
    },
    changed,
    wake,
    ticket: (tenantId, runId) => Effect.sync(() => ticketNow(tenantId, runId)),
    ticketNow
  }
}

/**
 * The store, waking the hub's readers after every append (and telling other processes, when `tell` is given: see
 * `liveNotify`).
 */
export const notifying = (store: EventStore.Service, hub: Hub, tell?: (tenantId: string, runId: string) => void): EventStore.Service => {
  const appended = tell === undefined ? hub.logChanged : (tenantId: string, runId: string) => {
    hub.logChanged(tenantId, runId)
    tell(tenantId, runId)
  }
  return notifyingWith(store, appended)
}

/**
 * The store with `appended` called after each append. Its reads are the store's own (so is its read-ahead, kept by
 * them: `readWorker.ts`).
 */
const notifyingWith = (store: EventStore.Service, appended: (tenantId: string, runId: string) => void): EventStore.Service => ({
  ...store,
  // A plain call after the append, twice a tool step: not an effect of its own run by `tap`, nor `map`'s (whose
  // `sync` is a node and a closure more per append than answering with the `void` there is).
  append: (request) =>
    Effect.flatMap(store.append(request), () => {
      appended(request.tenantId, request.runId)
      return Effect.void
    }),
  appendAll: (requests) => Effect.map(store.appendAll(requests), () => requests.forEach((r) => appended(r.tenantId, r.runId))),
  appendPaged: (next) => {
    // The runs written, told once the transaction committed.
    const written = new Map<string, { readonly tenantId: string; readonly runId: string }>()
    const noted = Effect.tap(next, (page) => {
      if (page._tag === "Some") written.set(`${page.value.tenantId}\u0000${page.value.runId}`, page.value)
    })
    return Effect.map(store.appendPaged(noted), () => written.forEach((r) => appended(r.tenantId, r.runId)))
  }
})

const ended = (status: RunStatus) => status === "completed" || status === "failed" || status === "continued"

export interface ReadOptions {
  readonly store: EventStore.Service
  readonly live: LiveStore.Service
  readonly hub: Hub
  readonly auditKey: string | undefined
  /** How often a run written by another process is read again. */
  readonly pollInterval: Duration.Duration
  readonly pageSize: number
  /** A run not found yet is waited for (it is about to start) rather than `RunNotFound`. */
  readonly waitForStart: boolean
  /** Notices of other processes' writes (`RunNotices`), when the store gives them: they wake the reader as a write here. */
  readonly notices?: RunNotices.Service | undefined
}

/** A reader's step: the events it emits, and its state after them (none: the run ended). */
type Pulled = readonly [Chunk.Chunk<Live.LiveEvent>, Option.Option<State>]

interface State {
  /** The last position emitted (or the reader's offset). */
  readonly after: Live.Position
  /** The next log seq to read. */
  readonly nextSeq: number
  /** The wake-up taken before the read that emitted up to `after`: until it fires, reading again finds nothing new here. */
  readonly wake?: Wake | undefined
}

/**
 * The live stream of a run after `after`. Every log event is read (from seq 1) and its chain verified before anything
 * after it is emitted; events and deltas at or before `after` are not emitted. Ends after the run's last event once it
 * completed, failed or continued.
 */
export const read = (
  options: ReadOptions,
  tenantId: string,
  runId: string,
  after: Live.Position
): Stream.Stream<Live.LiveEvent, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered> => {
  const { notices } = options
  if (notices === undefined) return Stream.suspend(() => reader(options, tenantId, runId, after, Effect.void))
  // The first notice is asked for before the first read, so no write of another process after that read is missed.
  // The watch and the relay live in a scope of their own, opened by the first pull and closed when the stream ends:
  // not `Stream.unwrapScoped`, whose concatenation is one more stage every event passes through on its way to the caller.
  return Stream.suspend(() => {
    let scope: Scope.CloseableScope | undefined
    const setup = Effect.gen(function*() {
      const opened = yield* Effect.uninterruptible(Effect.tap(Scope.make(), (s) => void (scope = s)))
      const first = yield* notices.ticket(tenantId, runId)
      // Watched before the first read: a store that tells only watched runs tells this one of every write after it.
      if (notices.watch !== undefined) yield* Scope.extend(notices.watch(tenantId, runId), opened)
      yield* Effect.forkIn(relay(notices, options.hub, tenantId, runId, first), opened)
    })
    return Stream.ensuring(
      reader(options, tenantId, runId, after, setup),
      Effect.suspend(() => (scope === undefined ? Effect.void : Scope.close(scope, Exit.void)))
    )
  })
}

/**
 * Wakes the run's readers in this process for each notice of another process's write, as a write here would (its log
 * is read again). The next notice is asked for before the readers are woken: a write after their read is heard.
 */
const relay = (notices: RunNotices.Service, hub: Hub, tenantId: string, runId: string, first: Effect.Effect<void>): Effect.Effect<never> =>
  Effect.gen(function*() {
    let heard = first
    for (;;) {
      yield* heard
      heard = yield* notices.ticket(tenantId, runId)
      hub.logChanged(tenantId, runId)
    }
  })

/** A reader's step of this process's deltas alone: their events, the log read as far as before. */
const deltasPage = (deltas: ReadonlyArray<Live.StoredDelta>, nextSeq: number, wake: Wake): Pulled => {
  const events: Array<Live.LiveEvent> = []
  for (const d of deltas) events.push(Live.fromDelta(d))
  return [Chunk.unsafeFromArray(events), Option.some({ after: deltas[deltas.length - 1]!, nextSeq, wake })]
}

/** `setup` runs before the first read. */
const reader = (
  options: ReadOptions,
  tenantId: string,
  runId: string,
  after: Live.Position,
  setup: Effect.Effect<void>
): Stream.Stream<Live.LiveEvent, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered> => {
  const { hub, live, pageSize, store } = options
  const pollMillis = Duration.toMillis(Duration.decode(options.pollInterval))
  // Per reader: the chain is verified once, as the reader's pages go by.
  const verifier = Verify.make(runId, { auditKey: options.auditKey })
  let verifiedThrough = 0
  // The run's record as last read, the hub's log version then, and whether this process's write woke the reader.
  let cached: RunInfo | undefined
  let cachedVersion = -1
  let woken = false
  // The timer of the reader's last wait, when a write woke it: cleared by the next wait, or when the stream ends.
  const poll: PollTimer = { timer: undefined }
  /**
   * The step of a reader woken by this process's deltas alone, with the log read to its head before (the commonest
   * wake-up while a reply streams): the deltas after `state.after`, from memory, as plain calls; `undefined` when the
   * general step must run (the log changed, a page is full, the run ended, nothing new).
   */
  const ownDeltas = (state: State, wake: Wake): Pulled | undefined => {
    if (!woken || cached === undefined || ended(cached.status) || state.nextSeq <= cached.headSeq || live.readNow === undefined) return undefined
    if (hub.logVersion(tenantId, runId) !== cachedVersion) return undefined
    const deltas = live.readNow(tenantId, runId, state.after, cached.headSeq, pageSize)
    return deltas === undefined || deltas.length === 0 || deltas.length === pageSize ? undefined : deltasPage(deltas, state.nextSeq, wake)
  }
  /**
   * A step. Nothing was written in this process since the last read: it waits for a write (or the poll) before reading
   * again. A wake-up by this process's deltas alone takes them as it is told, in the writer's call (`ownDeltas`): the
   * reader's fiber resumes with its next chunk, and nothing else runs on a streamed delta's way to the caller.
   */
  const step = (state: State): Effect.Effect<Pulled, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered> => {
    const { wake } = state
    clearPoll(poll)
    if (wake === undefined) return general(state)
    if (wake.fired()) {
      woken = true
      return general(state)
    }
    const woke = () => {
      woken = true
      const own = ownDeltas(state, hub.ticketNow(tenantId, runId))
      return own === undefined ? general(state) : Effect.succeed(own)
    }
    const slept = () => {
      woken = false
      return general(state)
    }
    return wake.withinThen(pollMillis, woke, slept, poll)
  }
  /** A step that reads the run's log (when it changed) and its deltas. */
  const general = (state: State) =>
    Effect.gen(function*() {
      for (;;) {
        const wake = hub.ticketNow(tenantId, runId)
        const own = ownDeltas(state, wake)
        if (own !== undefined) return own
        // Woken by this process's deltas alone, the log is as last read: only the deltas are read again.
        const version = hub.logVersion(tenantId, runId)
        const logKnown = cached !== undefined && woken && version === cachedVersion
        const found = logKnown && cached !== undefined ? Either.right(cached) : yield* Effect.either(store.getRun(tenantId, runId))
        if (Either.isLeft(found)) {
          if (!(options.waitForStart && found.left._tag === "RunNotFound" && state.nextSeq === 1)) return yield* Effect.fail(found.left)
          woken = yield* wake.within(pollMillis)
          continue
        }
        const info = found.right
        cached = info
        cachedVersion = version
        const read: ReadonlyArray<Event> = !logKnown && info.headSeq >= state.nextSeq
          ? (yield* store.readEvents(tenantId, runId, state.nextSeq, pageSize)).filter((e) => e.seq <= info.headSeq)
          : []
        const broken = read.length === 0 ? undefined : verifier.push(read.filter((e) => e.seq > verifiedThrough))
        if (broken !== undefined) {
          return yield* new Errors.LogTampered({ runId, seq: broken.firstBrokenSeq ?? state.nextSeq, reason: broken.reason ?? "broken chain" })
        }
        const lastRead = read[read.length - 1]
        if (lastRead !== undefined) verifiedThrough = Math.max(verifiedThrough, lastRead.seq)
        const logEnd = lastRead === undefined ? state.nextSeq - 1 : lastRead.seq
        // A full page may end before the log does: deltas kept after its last event wait for the next page's events.
        const fullPage = read.length === pageSize && logEnd < info.headSeq
        // This process's own deltas come from its memory as a plain call (no effect on a delta's way to the reader).
        const through = fullPage ? logEnd : info.headSeq
        const deltas = live.readNow?.(tenantId, runId, state.after, through, pageSize) ?? (yield* live.read(tenantId, runId, state.after, through, pageSize))

        const lastDelta = deltas[deltas.length - 1]
        // A full page of deltas may end before the events read: those after it come next time.
        const bound = deltas.length === pageSize && lastDelta !== undefined ? lastDelta : undefined
        const items: Array<{ readonly at: Live.Position; readonly event: Live.LiveEvent }> = []
        for (const e of read) {
          const at = { seq: e.seq, n: 0 }
          if (Live.compare(at, state.after) > 0 && (bound === undefined || Live.compare(at, bound) < 0)) items.push({ at, event: Live.fromEvent(e) })
        }
        for (const d of deltas) items.push({ at: d, event: Live.fromDelta(d) })
        items.sort((a, b) => Live.compare(a.at, b.at))
        const last = items[items.length - 1]
        const nextSeq = bound === undefined ? logEnd + 1 : Math.min(logEnd + 1, bound.seq + 1)
        // Read to the head (no page cut short): the next step may wait for the wake-up before reading again.
        const complete = bound === undefined && nextSeq > info.headSeq
        const next: State = { after: last === undefined ? state.after : last.at, nextSeq, wake: complete ? wake : undefined }
        const done = ended(info.status) && bound === undefined && nextSeq > info.headSeq
        const chunk = Chunk.unsafeFromArray(items.map((i) => i.event))
        if (done) return [chunk, Option.none<State>()] as const
        if (items.length > 0) return [chunk, Option.some(next)] as const
        // Nothing new: wait for a write in this process, or poll (another process may be writing).
        woken = yield* wake.within(pollMillis)
      }
    })
  let set = false
  const first = Effect.zipRight(Effect.suspend(() => {
    set = true
    return setup
  }), Effect.suspend(() => step({ after, nextSeq: 1 })))
  const pages = Stream.paginateChunkEffect({ after, nextSeq: 1 } satisfies State, (state) => (set ? step(state) : first))
  return Stream.ensuring(pages, Effect.sync(() => clearPoll(poll)))
}
