/**
 * What every `EventStore` implementation shares (the in-memory store, the SQL store, a store package's own append):
 * the checks of a batch before it is appended, the fence of a writer, a new run's record, a page of listed runs and
 * the count of runs per version. `EventStore` exports them.
 */
import { OwnershipLost } from "../Errors.js"
import { type RunInfo, type RunStatus, summarize } from "../Event.js"
import type { AppendRequest, RunsPage, VersionCount } from "../EventStore.js"
import * as RunCursor from "./runCursor.js"
import { badId } from "../Tenant.js"

/** The statuses of a run in flight: it may still run code (see `VersionCount.inFlight`). */
export const IN_FLIGHT: ReadonlyArray<RunStatus> = ["running", "paused", "needs_reconciliation"]

/** Counts runs per workflow and version (the in-memory store's `versionCounts`, and a reference for the others). */
export const countVersions = (runs: Iterable<RunInfo>): ReadonlyArray<VersionCount> => {
  const counts = new Map<string, { workflow: string; version: string; runs: number; inFlight: number; lastCreatedAt: number }>()
  for (const run of runs) {
    const key = `${run.workflow}\u0000${run.version}`
    const count = counts.get(key) ?? { workflow: run.workflow, version: run.version, runs: 0, inFlight: 0, lastCreatedAt: 0 }
    count.runs++
    if (IN_FLIGHT.includes(run.status)) count.inFlight++
    count.lastCreatedAt = Math.max(count.lastCreatedAt, run.createdAt)
    counts.set(key, count)
  }
  return [...counts.values()].sort((a, b) => (a.workflow < b.workflow ? -1 : a.workflow > b.workflow ? 1 : a.version < b.version ? -1 : a.version > b.version ? 1 : 0))
}

/**
 * Why a batch cannot be appended as it is (events of another run or tenant, seqs not numbered on from
 * `expectedSeq`), or undefined. Every store checks it: a malformed batch is a bug in its writer, and is
 * refused before it reaches the log.
 */
export const invalidBatch = (request: AppendRequest): string | undefined => {
  const badTenant = badId(request.tenantId)
  if (badTenant !== undefined) return `the tenant id ${badTenant}`
  const badRun = badId(request.runId)
  if (badRun !== undefined) return `the run id ${badRun}`
  for (let i = 0; i < request.events.length; i++) {
    const event = request.events[i]!
    if (event.runId !== request.runId || event.tenantId !== request.tenantId) {
      return `event ${event.seq} belongs to run ${event.runId} of tenant ${event.tenantId}, not to the batch's run ${request.runId} of tenant ${request.tenantId}`
    }
    if (event.seq !== request.expectedSeq + i + 1) {
      return `event ${i + 1} of the batch has seq ${event.seq}; after seq ${request.expectedSeq} it must be ${request.expectedSeq + i + 1}`
    }
    if (event.type !== event.payload._tag) return `event ${event.seq} has type ${event.type} but a ${event.payload._tag} payload`
    // A run is its tenant's: a RunStarted naming another tenant would have the kernel act for that one.
    if (event.payload._tag === "RunStarted" && event.payload.tenant.tenantId !== request.tenantId) {
      return `event ${event.seq} starts the run for tenant ${event.payload.tenant.tenantId}, not for the batch's tenant ${request.tenantId}`
    }
  }
  return undefined
}

/**
 * The highest owner epoch a run may have for `request` to be appended (`ownerEpoch`, or one less for a claim), or
 * undefined when the request is not fenced. Every store refuses the batch when the run's epoch is above it.
 */
export const fenceOf = (request: AppendRequest): number | undefined =>
  request.ownerEpoch === undefined ? undefined : request.claim === true ? request.ownerEpoch - 1 : request.ownerEpoch

/**
 * The `OwnershipLost` of a request whose run has a newer owner, given the run's current owner epoch; undefined
 * otherwise (a claim that lost the race for its own epoch is a `SequenceConflict`, like two writers racing).
 */
export const fenced = (request: AppendRequest, currentEpoch: number): OwnershipLost | undefined => {
  if (request.ownerEpoch === undefined || currentEpoch <= request.ownerEpoch) return undefined
  return new OwnershipLost({
    runId: request.runId,
    ownerEpoch: request.ownerEpoch ?? 0,
    reason: `a newer execution (owner epoch ${currentEpoch}) claimed it: another worker took its task over after this one's ` +
      `lease expired, or another process resumed the run`
  })
}

/** The version of a run whose `RunStarted` records none (as `Workflow.DEFAULT_VERSION`). */
export const DEFAULT_RUN_VERSION = "1"

/** The run row a new run's first batch creates (shared by every store implementation). */
export const newRunInfo = (request: AppendRequest): RunInfo | undefined => {
  const first = request.events[0]
  const last = request.events[request.events.length - 1]
  if (first === undefined || last === undefined || first.payload._tag !== "RunStarted") return undefined
  const started = first.payload
  const summary = summarize(request.events)
  return {
    runId: request.runId,
    tenantId: request.tenantId,
    workflow: started.workflow,
    ...(started.parentRunId === undefined ? {} : { parentRunId: started.parentRunId }),
    rootRunId: started.rootRunId ?? request.runId,
    status: summary.status ?? "running",
    headSeq: last.seq,
    headHash: last.hash,
    costUsd: summary.costUsd,
    createdAt: first.timestamp,
    updatedAt: last.timestamp,
    ownerEpoch: request.ownerEpoch ?? 0,
    version: started.version ?? DEFAULT_RUN_VERSION,
    ...(started.forkedFrom === undefined ? {} : { forkedFrom: started.forkedFrom.runId })
  }
}

/**
 * A page from the runs a store read with one more than `limit` (every store's `listRunsPage`): the first `limit` of
 * them, and the cursor of the last one when there was one more.
 */
export const pageOf = (rows: ReadonlyArray<RunInfo>, limit: number | undefined): RunsPage => {
  const size = limit === undefined ? rows.length : Math.max(0, Math.floor(limit))
  const runs = rows.slice(0, size)
  const last = runs[runs.length - 1]
  return rows.length > size && last !== undefined ? { runs, next: RunCursor.encode({ createdAt: last.createdAt, runId: last.runId }) } : { runs }
}
