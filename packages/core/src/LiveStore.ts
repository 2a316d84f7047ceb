/**
 * The `LiveStore`: where the kernel keeps the deltas of streamed model calls while a run is live, so that a reader
 * that reconnects at an offset gets every delta after it. Deltas are no part of the log (the logged `ModelCompleted`
 * is the reply); the kernel drops a run's deltas once the run completes, fails or continues as new.
 *
 * `layerMemory` keeps them in the process (the kernel's default: readers in the same process, a run resumed in the
 * same process); a store shared by processes lets a reader in one process follow a run streaming in another.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StoreError } from "./Errors.js"
import { compare, type Position, type StoredDelta } from "./Live.js"

export interface Service {
  /** Keeps deltas (positions the writer numbered with `nextIndex`, in order). */
  readonly append: (tenantId: string, runId: string, deltas: ReadonlyArray<StoredDelta>) => Effect.Effect<void, StoreError>
  /** The run's deltas after `after` with `seq` at most `throughSeq`, in position order, at most `limit`. */
  readonly read: (
    tenantId: string,
    runId: string,
    after: Position,
    throughSeq: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<StoredDelta>, StoreError>
  /** The `n` the next delta kept after log event `seq` takes (1 when none is kept there). */
  readonly nextIndex: (tenantId: string, runId: string, seq: number) => Effect.Effect<number, StoreError>
  /** Forgets the run's deltas. */
  readonly drop: (tenantId: string, runId: string) => Effect.Effect<void, StoreError>
}

/** Where live deltas are kept. */
export class LiveStore extends Context.Tag("@artana/core/LiveStore")<LiveStore, Service>() {}

/** Deltas kept in this process's memory. */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => {
  const runs = new Map<string, Array<StoredDelta>>()
  const keyOf = (tenantId: string, runId: string) => `${tenantId}\u0000${runId}`
  /** The index of the first delta after `p` (deltas are kept in position order). */
  const firstAfter = (list: ReadonlyArray<StoredDelta>, p: Position): number => {
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compare(list[mid]!, p) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }
  return {
    append: (tenantId, runId, deltas) =>
      Effect.sync(() => {
        const key = keyOf(tenantId, runId)
        const list = runs.get(key) ?? []
        runs.set(key, list)
        for (const d of deltas) {
          // A writer numbers after what is kept; one that did not (a stale writer) is put in its place.
          const last = list[list.length - 1]
          if (last === undefined || compare(last, d) < 0) list.push(d)
          else list.splice(firstAfter(list, d), 0, d)
        }
      }),
    read: (tenantId, runId, after, throughSeq, limit) =>
      Effect.sync(() => {
        const list = runs.get(keyOf(tenantId, runId)) ?? []
        const out: Array<StoredDelta> = []
        for (let i = firstAfter(list, after); i < list.length && out.length < limit; i++) {
          const d = list[i]!
          if (d.seq > throughSeq) break
          out.push(d)
        }
        return out
      }),
    nextIndex: (tenantId, runId, seq) =>
      Effect.sync(() => {
        const list = runs.get(keyOf(tenantId, runId)) ?? []
        const i = firstAfter(list, { seq, n: Number.MAX_SAFE_INTEGER }) - 1
        const last = list[i]
        return last !== undefined && last.seq === seq ? last.n + 1 : 1
      }),
    drop: (tenantId, runId) => Effect.sync(() => void runs.delete(keyOf(tenantId, runId)))
  }
})

/** In-memory `LiveStore` layer. */
export const layerMemory: Layer.Layer<LiveStore> = Layer.effect(LiveStore, makeMemory)
