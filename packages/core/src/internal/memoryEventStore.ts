/**
 * The in-memory `EventStore` (`EventStore.makeMemory`), for tests and for examples that must not touch disk: runs keyed
 * by tenant and run, each with its log, checked batch by batch as a SQL store checks them (the head, the writer's
 * fence), and appends of several batches undone together when one is refused.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { type OwnershipLost, RunNotFound, SequenceConflict, StoreError } from "../Errors.js"
import { decodePayload, type Event, type RunInfo, summarize } from "../Event.js"
import type { AppendRequest, ListRunsFilter, Service } from "../EventStore.js"
import { StoredEvent, storedPayload } from "./hash.js"
import * as RunCursor from "./runCursor.js"
import { countVersions, fenced, fenceOf, invalidBatch, newRunInfo, pageOf } from "./storeRules.js"

/**
 * An event as the in-memory store keeps it: its payload as the text the kernel hashed, as a SQL store keeps it. The
 * code's values are not shared with the log (a workflow that grows the array it gave a model step, a caller that
 * edits the events it read, change nothing stored), and a read decodes the text afresh.
 */
type Kept = Omit<Event, "payload"> & { readonly payloadText: string }

const stored = (event: Event): Kept => {
  const { payload: _payload, ...fields } = event
  return { ...fields, payloadText: storedPayload(event) }
}

const restored = (kept: Kept): Event => {
  const payload = decodePayload(JSON.parse(kept.payloadText))
  // It was an event's payload when stored: only a bug could make it fail to decode.
  if (Either.isLeft(payload)) throw new Error(`in-memory store: run ${kept.runId} seq ${kept.seq}: ${payload.left}`)
  return new StoredEvent(kept.eventId, kept.runId, kept.tenantId, kept.seq, kept.timestamp, kept.type, kept.stepKey, payload.right, kept.prevHash, kept.hash, kept.payloadText)
}

/**
 * The runs, keyed by tenant and run (the same run id in two tenants is two runs). `created` numbers runs as they are
 * created (a run's `order`): it breaks ties between runs created in the same millisecond.
 */
interface State {
  readonly runs: Map<string, { info: RunInfo; readonly order: number; readonly log: Array<Kept> }>
  created: number
}

const keyOf = (tenantId: string, runId: string) => `${tenantId}\u0000${runId}`

/** The creation count of the tenant's run `runId` (a cursor's tie-breaker); past every run when it has none. */
const orderOf = (state: State, tenantId: string, runId: string): number => state.runs.get(keyOf(tenantId, runId))?.order ?? Infinity

const listed = (state: State, tenantId: string, filter: ListRunsFilter, after: RunCursor.Position | undefined) =>
  [...state.runs.values()]
    .filter(({ info: r, order }) =>
      r.tenantId === tenantId &&
      (filter.status === undefined || r.status === filter.status) &&
      (filter.workflow === undefined || r.workflow === filter.workflow) &&
      (filter.version === undefined || r.version === filter.version) &&
      (filter.parentRunId === undefined || r.parentRunId === filter.parentRunId) &&
      (filter.rootRunId === undefined || r.rootRunId === filter.rootRunId) &&
      (filter.createdSince === undefined || r.createdAt >= filter.createdSince) &&
      (filter.createdUntil === undefined || r.createdAt < filter.createdUntil) &&
      (filter.minCostUsd === undefined || r.costUsd >= filter.minCostUsd) &&
      (filter.forkedFrom === undefined || r.forkedFrom === filter.forkedFrom) &&
      (after === undefined || r.createdAt < after.createdAt || (r.createdAt === after.createdAt && order > orderOf(state, tenantId, after.runId)))
    )
    .sort((a, b) => b.info.createdAt - a.info.createdAt || a.order - b.order)
    .slice(0, filter.limit === undefined ? undefined : Math.max(0, Math.floor(filter.limit)))

/** Applies one batch, or says why not (nothing changed then). */
const apply = (state: State, request: AppendRequest): SequenceConflict | OwnershipLost | StoreError | undefined => {
  const bad = invalidBatch(request)
  if (bad !== undefined) return new StoreError({ operation: "append", reason: bad })
  const conflict = () => new SequenceConflict({ runId: request.runId, expectedSeq: request.expectedSeq })
  const last = request.events[request.events.length - 1]
  if (last === undefined) return undefined
  const key = keyOf(request.tenantId, request.runId)
  const run = state.runs.get(key)
  if (request.expectedSeq === 0) {
    const info = newRunInfo(request)
    if (run !== undefined || info === undefined) return conflict()
    state.runs.set(key, { info, order: state.created++, log: request.events.map(stored) })
    return undefined
  }
  if (run === undefined) return conflict()
  const lost = fenced(request, run.info.ownerEpoch)
  if (lost !== undefined) return lost
  const fence = fenceOf(request)
  if (run.info.headSeq !== request.expectedSeq || (fence !== undefined && run.info.ownerEpoch > fence)) return conflict()
  const summary = summarize(request.events)
  run.info = {
    ...run.info,
    ownerEpoch: request.claim === true && request.ownerEpoch !== undefined ? request.ownerEpoch : run.info.ownerEpoch,
    status: summary.status ?? run.info.status,
    headSeq: last.seq,
    headHash: last.hash,
    costUsd: run.info.costUsd + summary.costUsd,
    updatedAt: last.timestamp
  }
  for (const e of request.events) run.log.push(stored(e))
  return undefined
}

/**
 * A transaction over the in-memory runs: `apply` applies a batch, remembering first what its run was; `undo` puts
 * back every run it changed.
 */
const transaction = (state: State) => {
  const before = new Map<string, { readonly info: RunInfo; readonly length: number } | undefined>()
  return {
    apply: (request: AppendRequest) => {
      const key = keyOf(request.tenantId, request.runId)
      if (!before.has(key)) {
        const run = state.runs.get(key)
        before.set(key, run === undefined ? undefined : { info: run.info, length: run.log.length })
      }
      return apply(state, request)
    },
    undo: () => {
      for (const [k, was] of before) {
        if (was === undefined) state.runs.delete(k)
        else {
          const run = state.runs.get(k)!
          run.info = was.info
          run.log.length = was.length
        }
      }
    }
  }
}

/** Applies every batch, or none: a refused one puts back what the ones before it changed. */
const appendAll = (state: State, requests: ReadonlyArray<AppendRequest>): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError> => {
  const tx = transaction(state)
  for (const request of requests) {
    const refused = tx.apply(request)
    if (refused === undefined) continue
    tx.undo()
    return Effect.fail(refused)
  }
  return Effect.void
}

/** `appendPaged`: each batch applied as it comes; a refusal or a failure of `next` puts back what the ones before changed. */
const appendPaged = (state: State) => <E>(next: Effect.Effect<Option.Option<AppendRequest>, E>): Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError | E> =>
  Effect.suspend(() => {
    const tx = transaction(state)
    const loop: Effect.Effect<void, SequenceConflict | OwnershipLost | StoreError | E> = Effect.flatMap(next, Option.match({
      onNone: () => Effect.void,
      onSome: (request) => {
        const refused = tx.apply(request)
        return refused === undefined ? loop : Effect.fail(refused)
      }
    }))
    return Effect.onError(loop, () => Effect.sync(tx.undo))
  })

/** A new, empty in-memory store. */
export const make = (): Service => {
  const state: State = { runs: new Map(), created: 0 }
  return {
    append: (request) => Effect.suspend(() => appendAll(state, [request])),
    appendAll: (requests) => Effect.suspend(() => appendAll(state, requests)),
    appendPaged: appendPaged(state),
    readEvents: (tenantId, runId, fromSeq = 1, limit) =>
      Effect.suspend(() => {
        const run = state.runs.get(keyOf(tenantId, runId))
        return run === undefined
          ? Effect.fail(new RunNotFound({ runId, tenantId }))
          : Effect.sync(() => {
            // The log has no gaps (every batch is checked): seq n is at index n - 1.
            const from = Math.max(0, Math.floor(fromSeq) - 1)
            return run.log.slice(from, limit === undefined ? undefined : from + Math.max(0, Math.floor(limit))).map(restored)
          })
      }),
    getRun: (tenantId, runId) =>
      Effect.suspend(() => {
        const run = state.runs.get(keyOf(tenantId, runId))
        return run === undefined ? Effect.fail(new RunNotFound({ runId, tenantId })) : Effect.succeed(run.info)
      }),
    listRuns: (tenantId, filter = {}) => Effect.sync(() => listed(state, tenantId, filter, undefined).map((r) => r.info)),
    lineageCostUsd: (tenantId, rootRunId) =>
      Effect.sync(() => {
        let sum = 0
        for (const { info } of state.runs.values()) if (info.tenantId === tenantId && info.rootRunId === rootRunId) sum += info.costUsd
        return sum
      }),
    listRunsPage: (tenantId, filter = {}) =>
      Effect.map(
        filter.after === undefined ? Either.right(undefined) : RunCursor.decode(filter.after),
        (after) => pageOf(listed(state, tenantId, { ...filter, limit: filter.limit === undefined ? undefined : filter.limit + 1 }, after).map((r) => r.info), filter.limit)
      ),
    versionCounts: (filter = {}) =>
      Effect.sync(() =>
        countVersions(
          [...state.runs.values()].map((r) => r.info).filter((r) =>
            (filter.tenantId === undefined || r.tenantId === filter.tenantId) && (filter.workflow === undefined || r.workflow === filter.workflow)
          )
        )
      )
  }
}
