/**
 * What the inspector's pages show, read from the store: a page of runs (the store's cursor-paged, indexed
 * `listRunsPage`), a run's header and lineage, a page of its events (`readEvents` with a bound: a long run is never read
 * whole for a page), its chain status with its token totals (one paged pass, `readCommands.chainOf`), the reason a
 * resume diverged from the log, and the approvals inbox (`Kernel.approvals`, and the runs paused for a person).
 */
import { type Approval, Errors, Event, EventStore, Kernel } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { chainOf } from "../readCommands.js"

/** The filters of the runs list, as the page's form gives them. */
export interface RunsQuery {
  readonly status?: Event.RunStatus | undefined
  readonly workflow?: string | undefined
  readonly createdSince?: number | undefined
  readonly createdUntil?: number | undefined
  readonly minCostUsd?: number | undefined
  readonly after?: string | undefined
  readonly limit: number
}

/** A page of the tenant's runs, newest first, and the cursor of the next one. */
export const runsPage = (tenantId: string, query: RunsQuery) =>
  Effect.flatMap(EventStore.EventStore, (store) => store.listRunsPage(tenantId, query))

/** A run of a lineage tree, what it and the runs below it spent, and the run it continued as. */
export interface LineageNode {
  readonly run: Event.RunInfo
  readonly subtreeCostUsd: number
  readonly children: ReadonlyArray<LineageNode>
  /** The run this one continued as (continue-as-new), shown beside it: it is a run of the same place in the tree. */
  readonly continuedAs?: LineageNode | undefined
}

/** At most this many runs of one lineage are drawn (a lineage of more is cut, and says so). */
export const LINEAGE_LIMIT = 500

/**
 * The lineage tree of `rootRunId`: sub-runs under their parent (`parentRunId`), a continue-as-new successor beside the
 * run it continues (its `RunStarted.continuedFrom`; read from the successor's first event only for runs whose status is
 * `continued`), each node with what its subtree spent.
 */
export const lineage = (tenantId: string, rootRunId: string) =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const family = yield* store.listRuns(tenantId, { rootRunId, limit: LINEAGE_LIMIT + 1 })
    const runs = family.slice(0, LINEAGE_LIMIT)
    const successorOf = new Map<string, string>()
    for (const r of runs) {
      if (r.status !== "continued") continue
      const [last] = yield* store.readEvents(tenantId, r.runId, r.headSeq, 1)
      if (last?.payload._tag === "RunContinued") successorOf.set(r.runId, last.payload.nextRunId)
    }
    const successors = new Set(successorOf.values())
    const byParent = new Map<string, Array<Event.RunInfo>>()
    for (const r of runs) {
      if (r.parentRunId === undefined || successors.has(r.runId)) continue
      byParent.set(r.parentRunId, [...(byParent.get(r.parentRunId) ?? []), r])
    }
    const byId = new Map(runs.map((r) => [r.runId, r]))
    const node = (r: Event.RunInfo, depth: number): LineageNode => {
      // The depth bound guards against a corrupt row naming its own descendant as parent.
      const children = depth > 64 ? [] : (byParent.get(r.runId) ?? []).sort((a, b) => a.createdAt - b.createdAt).map((c) => node(c, depth + 1))
      const next = successorOf.get(r.runId)
      const nextRun = next === undefined ? undefined : byId.get(next)
      const continuedAs = nextRun === undefined || depth > 64 ? undefined : node(nextRun, depth + 1)
      const subtreeCostUsd = r.costUsd + children.reduce((sum, c) => sum + c.subtreeCostUsd, 0)
      return { run: r, subtreeCostUsd, children, continuedAs }
    }
    const root = byId.get(rootRunId)
    // A fork is the root of a lineage of its own; where it came from is in its first event (`RunStarted.forkedFrom`).
    const first = root === undefined ? [] : yield* Effect.orElseSucceed(store.readEvents(tenantId, rootRunId, 1, 1), () => [])
    const forkedFrom = first[0]?.payload._tag === "RunStarted" ? first[0].payload.forkedFrom : undefined
    return { tree: root === undefined ? undefined : node(root, 0), truncated: family.length > LINEAGE_LIMIT, runs: runs.length, forkedFrom }
  })

/** At most this many of a run's forks are listed on its page (newest first). */
export const FORKS_LIMIT = 50

/** The forks of `runId` (`Kernel.fork`), newest first, on the runs' index of forks: at most `FORKS_LIMIT`. */
export const forksOf = (tenantId: string, runId: string) =>
  Effect.flatMap(EventStore.EventStore, (store) => store.listRuns(tenantId, { forkedFrom: runId, limit: FORKS_LIMIT + 1 }))

/** A stretch of a run's log: at most `limit` events from `fromSeq`. */
export const eventsPage = (
  tenantId: string,
  runId: string,
  fromSeq: number,
  limit: number
): Effect.Effect<ReadonlyArray<Event.Event>, Errors.RunNotFound | Errors.StoreError, EventStore.EventStore> =>
  Effect.flatMap(EventStore.EventStore, (store) => store.readEvents(tenantId, runId, fromSeq, limit))

/** One step of a page: its key, its events' kinds, its tokens and cost, and how long it took (first to last event). */
export interface StepSummary {
  readonly stepKey: string
  readonly kinds: ReadonlyArray<string>
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costUsd: number
  readonly startedAt: number
  readonly durationMs: number
}

/** The steps of a page of events, in the order they began. */
export const stepsOf = (events: ReadonlyArray<Event.Event>): ReadonlyArray<StepSummary> => {
  const steps = new Map<string, { kinds: Set<string>; input: number; output: number; cost: number; first: number; last: number }>()
  for (const e of events) {
    const step = steps.get(e.stepKey) ?? { kinds: new Set<string>(), input: 0, output: 0, cost: 0, first: e.timestamp, last: e.timestamp }
    step.kinds.add(e.type)
    step.last = e.timestamp
    if (e.payload._tag === "ModelCompleted") {
      step.input += e.payload.usage.inputTokens
      step.output += e.payload.usage.outputTokens
      step.cost += e.payload.costUsd
    }
    steps.set(e.stepKey, step)
  }
  return [...steps].map(([stepKey, s]) => ({
    stepKey,
    kinds: [...s.kinds],
    inputTokens: s.input,
    outputTokens: s.output,
    costUsd: s.cost,
    startedAt: s.first,
    durationMs: s.last - s.first
  }))
}

/** The run's chain status and its totals, from one pass over its log a page at a time. */
export interface ChainStatus {
  readonly report: { readonly ok: boolean; readonly firstBrokenSeq?: number | undefined; readonly reason?: string | undefined; readonly events: number }
  readonly inputTokens: number
  readonly outputTokens: number
  readonly modelCalls: number
  /** The events the totals count: all of them, or those before the break. */
  readonly counted: number
}

/** Checks the run's hash chain as `artana verify` does, adding up its tokens on the way. */
export const chain = (tenantId: string, runId: string, auditKey: Redacted.Redacted<string> | undefined) =>
  Effect.gen(function*() {
    const info = yield* Effect.flatMap(EventStore.EventStore, (store) => store.getRun(tenantId, runId))
    let inputTokens = 0
    let outputTokens = 0
    let modelCalls = 0
    let counted = 0
    const report = yield* chainOf({ tenant: tenantId, auditKey }, info, (page) => {
      for (const e of page) {
        counted++
        if (e.payload._tag !== "ModelCompleted") continue
        modelCalls++
        inputTokens += e.payload.usage.inputTokens
        outputTokens += e.payload.usage.outputTokens
      }
    })
    return { report, inputTokens, outputTokens, modelCalls, counted } satisfies ChainStatus
  })

/** How a resume diverged from the log: the step, what the log holds and what the code asked for. */
export interface Divergence {
  readonly seq: number
  readonly stepKey: string
  readonly expected: string
  readonly actual: string
}

const decodeNonDeterminism = Schema.decodeUnknownEither(
  Schema.Struct({ _tag: Schema.Literal("NonDeterminism"), stepKey: Schema.String, expected: Schema.String, actual: Schema.String })
)

/**
 * Where the run diverged from its log, when it failed so (`NonDeterminism` recorded in its `RunFailed`): read back from
 * its head, one event for a run whose last event is the failure. A `kernel.replay` writes nothing, so a divergence found
 * by a replay alone is not in the store.
 */
export const divergence = (tenantId: string, info: Event.RunInfo) =>
  info.status !== "failed" ? Effect.succeed(undefined) : Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const failed = yield* EventStore.lastEvent(store, tenantId, info.runId, (e) => e.payload._tag === "RunFailed")
    if (failed === undefined || failed.payload._tag !== "RunFailed" || failed.payload.errorTag !== "NonDeterminism") return undefined
    const decoded = decodeNonDeterminism(failed.payload.encoded)
    return Either.isLeft(decoded) ? undefined : { seq: failed.seq, ...decoded.right } satisfies Divergence
  })

/** A run paused for a person (`pauseForHuman`), waiting for a response. */
export interface HumanPause {
  readonly runId: string
  readonly workflow: string
  readonly ticket: string
  readonly reason: string
  readonly at: number
  /** Its log does not verify (`LogTampered`): shown so, with nothing to answer it by. */
  readonly broken?: true | undefined
}

/** At most this many paused runs are looked at for the inbox. */
export const INBOX_LIMIT = 200

/** The tenant's pending tool approvals and runs paused for a person (read back from each paused run's head). */
export interface Inbox {
  readonly approvals: ReadonlyArray<Approval.PendingApproval>
  /** Paused runs whose log does not verify, where approvals were looked for (`ApprovalsPage.unreadable`). */
  readonly unreadable: ReadonlyArray<Approval.Unreadable>
  readonly pauses: ReadonlyArray<HumanPause>
  /** More paused runs than were looked at. */
  readonly more: boolean
}

export const inbox = (tenantId: string): Effect.Effect<Inbox, Errors.StoreError | Errors.LogTampered | Errors.InvalidInput, Kernel.Kernel | EventStore.EventStore> =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const store = yield* EventStore.EventStore
    const { approvals, unreadable = [] } = yield* kernel.approvalsPage({ tenantId, limit: INBOX_LIMIT })
    const paused = yield* store.listRunsPage(tenantId, { status: "paused", limit: INBOX_LIMIT })
    const pauses: Array<HumanPause> = []
    for (const run of paused.runs) {
      // Signals sent to a paused run follow its pause: the pause is the run's own last event.
      const read = yield* kernel.lastEvent({ tenantId, runId: run.runId }, (e) => e.payload._tag !== "SignalSent").pipe(
        Effect.catchTag("RunNotFound", () => Effect.succeed(undefined)),
        // One run whose log was changed is that run's problem: the inbox shows it so, and the others as they are.
        Effect.either
      )
      if (Either.isLeft(read) && (read.left._tag === "LogTampered" || (read.left._tag === "StoreError" && Errors.isCorruptRow(read.left)))) {
        const at = read.left._tag === "LogTampered" ? ` (seq ${read.left.seq})` : ""
        pauses.push({ runId: run.runId, workflow: run.workflow, ticket: "", reason: `its log does not verify: ${read.left.reason}${at}`, at: run.updatedAt, broken: true })
        continue
      }
      const head = yield* read
      if (head?.payload._tag === "PauseRequested") {
        pauses.push({ runId: run.runId, workflow: run.workflow, ticket: head.payload.ticket, reason: head.payload.reason, at: head.timestamp })
      }
    }
    // A run both lists name (a paused run whose log does not verify) is shown once, with the pauses.
    const broken = new Set(pauses.filter((p) => p.broken === true).map((p) => p.runId))
    return { approvals, unreadable: unreadable.filter((u) => !broken.has(u.runId)), pauses, more: paused.next !== undefined }
  })

/** A cost given in the form, or why it is none. */
export const parseCost = (text: string): Either.Either<number, Errors.InvalidInput> => {
  const value = Number(text)
  return text.trim() !== "" && Number.isFinite(value) && value >= 0
    ? Either.right(value)
    : Either.left(new Errors.InvalidInput({ what: "min cost", reason: `"${text}" is not an amount of USD (0 or more, e.g. 0.05)` }))
}

const decodeStatus = Schema.decodeUnknownEither(Event.RunStatus)

/** A status given in the form, or why it is none. */
export const parseStatus = (text: string): Either.Either<Event.RunStatus, Errors.InvalidInput> =>
  Either.mapLeft(decodeStatus(text), () => new Errors.InvalidInput({ what: "status", reason: `"${text}" is not a run status` }))
