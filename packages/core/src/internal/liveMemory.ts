/**
 * Deltas kept in this process's memory, as plain synchronous calls: `LiveStore.makeMemory` wraps them in effects, and
 * the kernel's live tier calls them directly on a streamed call's push path (no Effect work per delta).
 */
import * as Effect from "effect/Effect"
import { compare, type Position, type StoredDelta } from "../Live.js"
import type * as LiveStore from "../LiveStore.js"
import { runKey } from "./runKey.js"

export interface Memory {
  readonly append: (tenantId: string, runId: string, deltas: ReadonlyArray<StoredDelta>) => void
  readonly read: (tenantId: string, runId: string, after: Position, throughSeq: number, limit: number) => ReadonlyArray<StoredDelta>
  /** `read`, when the memory holds every delta after `after` (its first one is at or before it); else undefined. */
  readonly readHeld: (tenantId: string, runId: string, after: Position, throughSeq: number, limit: number) => ReadonlyArray<StoredDelta> | undefined
  readonly nextIndex: (tenantId: string, runId: string, seq: number) => number
  readonly drop: (tenantId: string, runId: string) => void
}

/** The index of the first delta after `p` in `list` (deltas are kept in position order). */
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

/** The deltas of `list` after `after`, through log seq `throughSeq`, at most `limit`. */
const readList = (list: ReadonlyArray<StoredDelta>, after: Position, throughSeq: number, limit: number): Array<StoredDelta> => {
  const out: Array<StoredDelta> = []
  for (let i = firstAfter(list, after); i < list.length && out.length < limit; i++) {
    const d = list[i]!
    if (d.seq > throughSeq) break
    out.push(d)
  }
  return out
}

export const make = (): Memory => {
  const runs = new Map<string, Array<StoredDelta>>()
  return {
    append: (tenantId, runId, deltas) => {
      const key = runKey(tenantId, runId)
      let list = runs.get(key)
      if (list === undefined) {
        list = []
        runs.set(key, list)
      }
      for (const d of deltas) {
        // A writer numbers after what is kept; one that did not (a stale writer) is put in its place.
        const last = list[list.length - 1]
        if (last === undefined || compare(last, d) < 0) list.push(d)
        else list.splice(firstAfter(list, d), 0, d)
      }
    },
    read: (tenantId, runId, after, throughSeq, limit) => readList(runs.get(runKey(tenantId, runId)) ?? [], after, throughSeq, limit),
    readHeld: (tenantId, runId, after, throughSeq, limit) => {
      const list = runs.get(runKey(tenantId, runId))
      return list !== undefined && list.length > 0 && compare(list[0]!, after) <= 0 ? readList(list, after, throughSeq, limit) : undefined
    },
    nextIndex: (tenantId, runId, seq) => {
      const list = runs.get(runKey(tenantId, runId)) ?? []
      const i = firstAfter(list, { seq, n: Number.MAX_SAFE_INTEGER }) - 1
      const last = list[i]
      return last !== undefined && last.seq === seq ? last.n + 1 : 1
    },
    drop: (tenantId, runId) => void runs.delete(runKey(tenantId, runId))
  }
}

/** `memory` as a `LiveStore` (each call in `Effect.sync`). */
export const service = (memory: Memory): LiveStore.Service => ({
  append: (tenantId, runId, deltas) => Effect.sync(() => memory.append(tenantId, runId, deltas)),
  read: (tenantId, runId, after, throughSeq, limit) => Effect.sync(() => memory.read(tenantId, runId, after, throughSeq, limit)),
  nextIndex: (tenantId, runId, seq) => Effect.sync(() => memory.nextIndex(tenantId, runId, seq)),
  drop: (tenantId, runId) => Effect.sync(() => memory.drop(tenantId, runId)),
  readNow: memory.read
})
