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
import * as Memory from "./internal/liveMemory.js"
import type { Position, StoredDelta } from "./Live.js"

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
  /**
   * `read` as a plain call, for a store that holds what is asked in this process's memory (the kernel's live readers
   * take it on their way to a delta): `undefined` when it cannot answer so (then `read`). Optional.
   */
  readonly readNow?: ((tenantId: string, runId: string, after: Position, throughSeq: number, limit: number) => ReadonlyArray<StoredDelta> | undefined) | undefined
}

/** Where live deltas are kept. */
export class LiveStore extends Context.Tag("@artana/core/LiveStore")<LiveStore, Service>() {}

/** Deltas kept in this process's memory. */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => Memory.service(Memory.make()))

/** In-memory `LiveStore` layer. */
export const layerMemory: Layer.Layer<LiveStore> = Layer.effect(LiveStore, makeMemory)
