/**
 * The kernel's `LiveStore` in front of a shared one: deltas are kept in this process's memory at once (its readers get
 * them without waiting for a disk) and written behind to the shared store, the deltas that queued while the last write
 * was in flight in one batch (one transaction), so a stream of small deltas does not cost a commit each. Readers read
 * both. A write that fails makes the next `append` fail (the model step then faults, and the run stays resumable).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type { StoreError } from "../Errors.js"
import * as Live from "../Live.js"
import type { StoredDelta } from "../Live.js"
import type * as LiveStore from "../LiveStore.js"
import * as Memory from "./liveMemory.js"

/** A store with its write-behind: `flushed` waits until every delta appended so far is in the shared store. */
export interface Tier {
  readonly store: LiveStore.Service
  readonly flushed: Effect.Effect<void>
  /**
   * `store.append` as a plain call, for a streamed call's push path: kept in memory at once and queued for the shared
   * store. Returns the error of a write behind that failed since the last append (nothing is kept then).
   */
  readonly keep: (tenantId: string, runId: string, deltas: ReadonlyArray<StoredDelta>) => StoreError | undefined
  /** Whether this process kept deltas of the run since they were last dropped (they may be in the shared store). */
  readonly kept: (tenantId: string, runId: string) => boolean
}

const keptIn = (memory: Memory.Memory) => (tenantId: string, runId: string): boolean =>
  memory.read(tenantId, runId, Live.start, Number.MAX_SAFE_INTEGER, 1).length > 0

/** Memory alone: nothing to wait for. */
export const memoryOnly: Effect.Effect<Tier> = Effect.sync(() => {
  const memory = Memory.make()
  return {
    store: Memory.service(memory),
    flushed: Effect.void,
    keep: (tenantId, runId, deltas) => void memory.append(tenantId, runId, deltas),
    kept: keptIn(memory)
  }
})

/** How long a write to the shared store waits for more deltas to write with it. */
const WINDOW_MS = 50

/** `written` is told of each run whose deltas a write behind put in the shared store (see `liveNotify`). */
export const make = (shared: LiveStore.Service, written?: (tenantId: string, runId: string) => void): Effect.Effect<Tier> =>
  Effect.gen(function*() {
    const memory = Memory.make()
    // The write behind runs in the kernel's runtime (its tracer, its logger), started from a plain call.
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const lock = yield* Effect.makeSemaphore(1)
    let pending: Array<{ readonly tenantId: string; readonly runId: string; readonly deltas: ReadonlyArray<StoredDelta> }> = []
    let flushing = false
    let failed: StoreError | undefined
    let idle: Array<Deferred.Deferred<void>> = []
    // The window a write waits for more deltas: a plain timer, so that a delta that starts one (on a streamed call's
    // push path, on its way to this process's readers) starts no fiber. `hurry`: a call ended and waits (`flushed`),
    // so what queued is written at once, window after window, until nothing is left.
    let window: ReturnType<typeof setTimeout> | undefined
    let hurry = false
    const writeNow = (): void => {
      clearTimeout(window)
      window = undefined
      runFork(write)
    }
    /**
     * Writes what queued, batch after batch, until nothing is left. Each batch waits up to `WINDOW_MS` for more deltas
     * (unless a call waits for them): a commit may block the event loop (a synchronous SQLite driver's fsync), so
     * deltas are written a few at a time, not one by one, and this process's readers (served from memory) never wait
     * for it.
     */
    const write: Effect.Effect<void> = Effect.suspend(() => {
      const batch = pending
      pending = []
      if (batch.length === 0) {
        flushing = false
        hurry = false
        const waiting = idle
        idle = []
        return Effect.forEach(waiting, (d) => Deferred.succeed(d, undefined), { discard: true })
      }
      const byRun = new Map<string, { tenantId: string; runId: string; deltas: Array<StoredDelta> }>()
      for (const b of batch) {
        const key = `${b.tenantId}\u0000${b.runId}`
        const entry = byRun.get(key) ?? { tenantId: b.tenantId, runId: b.runId, deltas: [] }
        entry.deltas.push(...b.deltas)
        byRun.set(key, entry)
      }
      return lock.withPermits(1)(
        Effect.forEach(byRun.values(), (r) => Effect.tap(shared.append(r.tenantId, r.runId, r.deltas), () => written?.(r.tenantId, r.runId)), { discard: true }).pipe(
          Effect.catchAll((error) => Effect.sync(() => void (failed = error)))
        )
      ).pipe(Effect.zipRight(Effect.suspend(() => {
        if (pending.length === 0 || hurry) return write
        window = setTimeout(writeNow, WINDOW_MS)
        return Effect.void
      })))
    })

    const keep = (tenantId: string, runId: string, deltas: ReadonlyArray<StoredDelta>): StoreError | undefined => {
      if (failed !== undefined) {
        const error = failed
        failed = undefined
        return error
      }
      memory.append(tenantId, runId, deltas)
      pending.push({ tenantId, runId, deltas })
      if (!flushing) {
        flushing = true
        window = setTimeout(writeNow, WINDOW_MS)
      }
      return undefined
    }
    /** The memory's answer, when it has every delta after `after` (past the first delta this process kept for the run). */
    const readNow = memory.readHeld
    const service: LiveStore.Service = {
      append: (tenantId, runId, deltas) =>
        Effect.suspend(() => {
          const error = keep(tenantId, runId, deltas)
          return error === undefined ? Effect.void : Effect.fail(error)
        }),
      read: (tenantId, runId, after, throughSeq, limit) =>
        Effect.suspend(() => {
          // Past the first delta this process kept for the run, every later one is this process's: memory has them all.
          const kept = readNow(tenantId, runId, after, throughSeq, limit)
          if (kept !== undefined) return Effect.succeed(kept)
          return Effect.map(shared.read(tenantId, runId, after, throughSeq, limit), (kept) => {
            const mine = memory.read(tenantId, runId, after, throughSeq, limit)
            if (kept.length === 0) return mine
            if (mine.length === 0) return kept
            const all = new Map<string, StoredDelta>()
            for (const d of [...kept, ...mine]) all.set(Live.offsetOf(d), d)
            return [...all.values()].sort(Live.compare).slice(0, limit)
          })
        }),
      nextIndex: (tenantId, runId, seq) =>
        Effect.map(shared.nextIndex(tenantId, runId, seq), (a) => Math.max(a, memory.nextIndex(tenantId, runId, seq))),
      drop: (tenantId, runId) =>
        Effect.zipRight(
          Effect.sync(() => memory.drop(tenantId, runId)),
          // After any write of the run in flight, and with its queued deltas taken out: nothing is written back after.
          lock.withPermits(1)(Effect.suspend(() => {
            pending = pending.filter((p) => p.tenantId !== tenantId || p.runId !== runId)
            return shared.drop(tenantId, runId)
          }))
        ),
      readNow
    }
    const flushed: Effect.Effect<void> = Effect.suspend(() => {
      if (!flushing) return Effect.void
      return Effect.flatMap(Deferred.make<void>(), (d) =>
        Effect.sync(() => {
          idle.push(d)
          hurry = true
          // Waiting for its window: written now (else a write is in flight, and what queued follows it at once).
          if (window !== undefined) writeNow()
        }).pipe(Effect.zipRight(Deferred.await(d))))
    })
    return { store: service, flushed, keep, kept: keptIn(memory) }
  })
