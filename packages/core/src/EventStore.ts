/**
 * The `EventStore` port: append a batch of events to a run with an expected sequence (optimistic
 * concurrency), read a run's events in order, list runs. Every read is scoped by tenant.
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { InvalidInput, OwnershipLost, RunNotFound, SequenceConflict, StoreError } from "./Errors.js"
import type { Event, RunInfo, RunStatus, WaitingOn } from "./Event.js"
import * as MemoryEventStore from "./internal/memoryEventStore.js"

/** A batch to append atomically after `expectedSeq` (the run's current head; 0 for a new run). */
export interface AppendRequest {
  readonly runId: string
  readonly tenantId: string
  readonly expectedSeq: number
  /** Events numbered `expectedSeq + 1 ...`; a new run's batch starts with `RunStarted`. */
  readonly events: ReadonlyArray<Event>
  /**
   * The writer's owner epoch (fencing token). When given, the batch is refused with `OwnershipLost` if the run has
   * a newer owner (a higher epoch), checked in the statement or transaction that writes it. A new run is created
   * with this epoch (0 when absent). Absent: no fencing (a tool that is not an execution of the run).
   */
  readonly ownerEpoch?: number | undefined
  /**
   * The batch claims the run for `ownerEpoch`: refused unless the run's epoch is lower (with `OwnershipLost` when it
   * is higher, with `SequenceConflict` when another execution claimed the same epoch first); the run's epoch becomes
   * `ownerEpoch` with the batch. An execution's first batch claims the run.
   */
  readonly claim?: boolean | undefined
}

/** Filters for `listRuns`. */
export interface ListRunsFilter {
  readonly status?: RunStatus | undefined
  readonly workflow?: string | undefined
  readonly parentRunId?: string | undefined
  readonly rootRunId?: string | undefined
  /** Runs created at or after this time (ms since the epoch). */
  readonly createdSince?: number | undefined
  /** Runs created before this time (ms since the epoch). */
  readonly createdUntil?: number | undefined
  readonly limit?: number | undefined
  /**
   * Runs that cost at least this much (USD, the run's own cost). A filter on the listed range, not an index: a page
   * reads the runs of the other filters until it has `limit` that cost enough (`artana ui`'s cost filter).
   */
  readonly minCostUsd?: number | undefined
  /** Runs started by this version of their workflow's code (`RunInfo.version`). */
  readonly version?: string | undefined
  /** The forks of this run (`RunInfo.forkedFrom`), on an index of their own: a run's page lists its forks. */
  readonly forkedFrom?: string | undefined
}

/** Filters for `listRunsPage`: those of `listRuns`, and where to start. */
export interface ListRunsPageFilter extends ListRunsFilter {
  /**
   * The `next` of the previous page: this page starts right after it. Opaque; it names a place in the order runs are
   * listed, not a filter, so a page is asked with the same filter as the one before. Text no page gave out is refused
   * with `InvalidInput`.
   */
  readonly after?: string | undefined
}

/** One page of `listRunsPage`. */
export interface RunsPage {
  /** At most `limit` runs, newest first. */
  readonly runs: ReadonlyArray<RunInfo>
  /** The `after` of the next page; absent when no run follows this page (as the store was when read). */
  readonly next?: string | undefined
}

export interface Service {
  /**
   * Appends atomically; fails with `SequenceConflict` when the run's head is not `expectedSeq`, and with
   * `OwnershipLost` when the writer's `ownerEpoch` is fenced (the run has a newer owner).
   */
  readonly append: (request: AppendRequest) => Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError>
  /**
   * Appends several batches, to several runs, in one transaction: all of them or none. Each is checked as `append`
   * checks it; the first refused fails the whole. The kernel's continue-as-new writes a run's last event and its
   * successor's `RunStarted` with it, so no crash leaves a run ended without its successor, or two successors.
   */
  readonly appendAll: (requests: ReadonlyArray<AppendRequest>) => Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError>
  /**
   * A run's events in `seq` order, from `fromSeq` (default 1), at most `limit` of them (default all: a page reader
   * passes one, see `EventStore.stream`). Another tenant's run is `RunNotFound`.
   */
  readonly readEvents: (
    tenantId: string,
    runId: string,
    fromSeq?: number,
    limit?: number
  ) => Effect.Effect<ReadonlyArray<Event>, RunNotFound | StoreError>
  /** The run's row: status, head, cost, lineage. */
  readonly getRun: (tenantId: string, runId: string) => Effect.Effect<RunInfo, RunNotFound | StoreError>
  /** The tenant's runs, newest first (runs created in the same millisecond in the order they were created). */
  readonly listRuns: (tenantId: string, filter?: ListRunsFilter) => Effect.Effect<ReadonlyArray<RunInfo>, StoreError>
  /**
   * The tenant's runs a page at a time, in `listRuns`'s order: at most `limit` runs after the cursor `after`, and the
   * cursor of the next page. A page costs what its own runs cost, however many runs come before it (the SQL stores
   * seek on an index; see `SqlEventStore`). Without a `limit` the page is every run that follows.
   */
  readonly listRunsPage: (tenantId: string, filter?: ListRunsPageFilter) => Effect.Effect<RunsPage, StoreError | InvalidInput>
  /**
   * What a lineage spent: the sum of the costs of the tenant's runs whose root is `rootRunId` (the root itself, its
   * sub-runs, the runs a continue-as-new chain went on as). Every run of a lineage draws on the root's budget; the
   * kernel checks the budget against this before a run's first model call. One aggregate query (the SQL stores sum
   * over their index on the root), however long the chain grew; 0 for a root with no runs.
   */
  readonly lineageCostUsd: (tenantId: string, rootRunId: string) => Effect.Effect<number, StoreError>
  /**
   * Appends the batches `next` gives, one at a time until it gives None, in one transaction: all of them or none (each
   * checked as `append` checks it; the first refused, or a failure of `next`, fails the whole). Memory holds the batch
   * being written, however many there are: `Kernel.fork` copies a long prefix into a new run with it, paging through
   * the source run's log from inside the transaction.
   */
  readonly appendPaged: <E>(next: Effect.Effect<Option.Option<AppendRequest>, E>) => Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError | E>
  /**
   * How many runs each version of each workflow started, and how many of them are in flight (running, paused, needing
   * reconciliation): an old version can be retired (its workers stopped) once none of its runs is in flight. Of one
   * tenant, or of every tenant when `tenantId` is absent (an operator's view). One aggregate query over the runs.
   */
  readonly versionCounts: (filter?: VersionCountsFilter) => Effect.Effect<ReadonlyArray<VersionCount>, StoreError>
}

/** Filters for `versionCounts`. */
export interface VersionCountsFilter {
  /** One tenant's runs; every tenant's when absent. */
  readonly tenantId?: string | undefined
  readonly workflow?: string | undefined
}

/** The runs of one version of one workflow (`versionCounts`), ordered by workflow, then version. */
export interface VersionCount {
  readonly workflow: string
  readonly version: string
  /** Runs started by this version. */
  readonly runs: number
  /** Of them, those in flight: running, paused or needing reconciliation. */
  readonly inFlight: number
  /** When the newest of them was created (ms since the epoch). */
  readonly lastCreatedAt: number
}

/** The event log of every run. */
export class EventStore extends Context.Tag("@artana/core/EventStore")<EventStore, Service>() {}

/** Events per page of `stream` unless told otherwise: a few hundred KB of a typical log. */
export const DEFAULT_PAGE_SIZE = 1000

/** Options of `stream`. */
export interface StreamOptions {
  /** The first seq to read (default 1). */
  readonly fromSeq?: number | undefined
  /** Events read per query (default `DEFAULT_PAGE_SIZE`). */
  readonly pageSize?: number | undefined
}

/**
 * A run's events in `seq` order, read a page at a time: memory holds one page, however long the run. Each chunk of
 * the stream is one page. Another tenant's run, or a run that does not exist, fails with `RunNotFound`.
 *
 * @example
 * const total = yield* EventStore.stream(store, "acme", "report-7").pipe(Stream.runCount)
 */
export const stream = (
  store: Service,
  tenantId: string,
  runId: string,
  options: StreamOptions = {}
): Stream.Stream<Event, RunNotFound | StoreError> => {
  const pageSize = Math.max(1, Math.floor(options.pageSize ?? DEFAULT_PAGE_SIZE))
  return Stream.paginateChunkEffect(options.fromSeq ?? 1, (fromSeq) =>
    Effect.map(store.readEvents(tenantId, runId, fromSeq, pageSize), (page) => {
      const last = page[page.length - 1]
      // A short page is the end of the log (as it was when read).
      const next = last === undefined || page.length < pageSize ? Option.none<number>() : Option.some(last.seq + 1)
      return [Chunk.unsafeFromArray(page), next] as const
    }))
}

/** Options of `lastEvent`. */
export interface LastEventOptions {
  /** The seq to search back from (default: the run's head, read from its row). */
  readonly throughSeq?: number | undefined
  /** Events read per query (default 100: what a run writes about one step is usually less). */
  readonly pageSize?: number | undefined
}

/**
 * The last event of a run's log (at or before `throughSeq`) that `matches`, or undefined: read backwards from there,
 * the last event alone first, then a page at a time, so finding what a run did last (its end, the step it waits on,
 * the call it was in) costs the events after that event, not the whole log: one read of one event when it is the last.
 *
 * @example
 * const marker = yield* EventStore.lastEvent(store, "acme", "report-7", (e) => e.payload._tag === "ReconciliationRequired")
 */
export const lastEvent = (
  store: Service,
  tenantId: string,
  runId: string,
  matches: (event: Event) => boolean,
  options: LastEventOptions = {}
): Effect.Effect<Event | undefined, RunNotFound | StoreError> =>
  Effect.gen(function*() {
    const through = options.throughSeq ?? (yield* store.getRun(tenantId, runId)).headSeq
    const pageSize = Math.max(1, Math.floor(options.pageSize ?? 100))
    // The first read is the last event alone: what is sought is often it (a finished run's end, a pause).
    for (let end = Math.floor(through) + 1, size = 1; end > 1; size = pageSize) {
      const start = Math.max(1, end - size)
      const page = yield* store.readEvents(tenantId, runId, start, end - start)
      for (let i = page.length - 1; i >= 0; i--) if (matches(page[i]!)) return page[i]
      end = start
    }
    return undefined
  })

/**
 * Where a run in `needs_reconciliation` waits for a person: the path from the run down to the step in doubt, one
 * link per run (a step that waits on another run, a sub-agent's, links to it). Empty when nothing waits: the run is
 * not in `needs_reconciliation`, or the run its step waits on was settled since (a resume then drives it on). The
 * kernel reads it before resuming a waiting run; `artana list-runs` and `show-run` print it.
 *
 * @example
 * const path = yield* EventStore.reconciliationPath(store, "acme", "report-7")
 * // [{ runId: "report-7", stepKey: "turn:0/tool:0", tool: "research" }, { runId: "report-7::sub_agent::...", stepKey: "turn:1/tool:0", tool: "send_email" }]
 */
export const reconciliationPath = (
  store: Service,
  tenantId: string,
  runId: string
): Effect.Effect<ReadonlyArray<WaitingOn>, StoreError> =>
  Effect.gen(function*() {
    const path: Array<WaitingOn> = []
    let next: string | undefined = runId
    // Bounded: a run cannot wait on itself through a corrupt log forever.
    while (next !== undefined && path.length < 64) {
      const current: string = next
      // A run that does not exist (or no longer waits) holds nothing up.
      const run = yield* Effect.catchTag(store.getRun(tenantId, current), "RunNotFound", () => Effect.succeed(undefined))
      if (run === undefined || run.status !== "needs_reconciliation") return []
      // The run's last marker: read back from its head, not the whole log.
      const marker = yield* Effect.catchTag(
        lastEvent(store, tenantId, current, (e) => e.payload._tag === "ReconciliationRequired", { throughSeq: run.headSeq }),
        "RunNotFound",
        () => Effect.succeed(undefined)
      )
      if (marker === undefined || marker.payload._tag !== "ReconciliationRequired") return []
      path.push({ runId: current, stepKey: marker.stepKey, tool: marker.payload.tool })
      next = marker.payload.waitingOn?.[0]?.runId
    }
    return path
  })

// What every store implementation shares (see `internal/storeRules.ts`).
export {
  countVersions,
  DEFAULT_RUN_VERSION,
  fenced,
  fenceOf,
  IN_FLIGHT,
  invalidBatch,
  newRunInfo,
  pageOf
} from "./internal/storeRules.js"

/** An in-memory store, for tests and for examples that must not touch disk. */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => MemoryEventStore.make())

/** In-memory `EventStore` layer. */
export const layerMemory: Layer.Layer<EventStore> = Layer.effect(EventStore, makeMemory)

/** Runs `lineageSample` reads at most by default: a page of rows, however many runs the lineage holds. */
export const LINEAGE_SAMPLE = 1000

/**
 * The runs to draw `run`'s lineage tree from, in bounded memory: the whole lineage (the runs whose root is `run`'s
 * root: sub-runs, continue-as-new successors) when it has at most `limit` runs (default `LINEAGE_SAMPLE`), else its
 * newest `limit` and the path from `run` up to the root (a `getRun` per level, at most 64), with `next`: the cursor of
 * the rest, for `listRunsPage({ rootRunId, after: next })` (`artana list-runs --root ROOT --after NEXT`). One page of
 * run rows in memory, however large the lineage (a continue-as-new chain of a hundred thousand runs).
 */
export const lineageSample = (
  store: Service,
  info: RunInfo,
  options: { readonly limit?: number | undefined } = {}
): Effect.Effect<RunsPage, StoreError> =>
  Effect.gen(function*() {
    const limit = Math.max(1, Math.floor(options.limit ?? LINEAGE_SAMPLE))
    // No `after`: the page cannot be refused as a cursor no page gave out.
    const page = yield* Effect.catchTag(store.listRunsPage(info.tenantId, { rootRunId: info.rootRunId, limit }), "InvalidInput", Effect.die)
    if (page.next === undefined) return page
    const held = new Map(page.runs.map((r) => [r.runId, r]))
    let at: RunInfo | undefined = info
    // The bound guards against a corrupt row naming its own descendant as parent.
    for (let depth = 0; at !== undefined && depth <= 64; depth++) {
      held.set(at.runId, at)
      const up: string | undefined = at.parentRunId ?? (at.runId === info.rootRunId ? undefined : info.rootRunId)
      at = up === undefined ? undefined : held.get(up) ?? Option.getOrUndefined(yield* Effect.option(store.getRun(info.tenantId, up)))
    }
    return { runs: [...held.values()], next: page.next }
  })
