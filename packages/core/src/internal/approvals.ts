/**
 * Deciding and listing approvals without running any workflow code: a decision is one batch appended at the run's
 * head, where its `ApprovalRequested` waits, with the head's sequence as the expected one, so of two approvers
 * deciding at once exactly one is written (the other's append conflicts). The inbox reads the tenant's paused runs in
 * the order they paused (`ApprovalsIndex`; without one, all of them, sorted here) and keeps those whose head event is
 * a pending approval: the longest waiting first.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Approval from "../Approval.js"
import type * as ApprovalsIndex from "../ApprovalsIndex.js"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, RunInfo } from "../Event.js"
import * as EventStore from "../EventStore.js"
import { canonicalJson } from "./hash.js"
import * as Ledger from "./ledger.js"
import * as RunCursor from "./runCursor.js"
import type { Runtime } from "./runs.js"

type Asked = Extract<EventPayload, { _tag: "ApprovalRequested" }>

/** A read of the run's head as an approval's errors: a run gone or cut is a store failure, a broken one tampered. */
const readHead = (runtime: Runtime, info: RunInfo) =>
  Effect.catchTags(Ledger.ownHeadEvent(runtime.deps.store, runtime.deps.auditKey, info), {
    RunNotFound: (e) => Effect.fail(new Errors.StoreError({ operation: "readEvents", reason: e.message })),
    InvalidRunState: (e) => Effect.fail(new Errors.LogTampered({ runId: info.runId, seq: info.headSeq, reason: e.status }))
  })

/** Why an approval that is not at the run's head is not pending: its decision, when the log has one. */
const notPending = (runtime: Runtime, tenantId: string, runId: string, approvalId: string, info: RunInfo) =>
  Effect.gen(function*() {
    const mentions = (e: Event) =>
      (e.payload._tag === "ApprovalDecided" || e.payload._tag === "ApprovalRequested") && e.payload.approvalId === approvalId
    const found = yield* Effect.catchTag(
      EventStore.lastEvent(runtime.deps.store, tenantId, runId, mentions, { throughSeq: info.headSeq }),
      "RunNotFound",
      () => Effect.succeed(undefined)
    )
    if (found === undefined) return yield* new Errors.ApprovalNotFound({ tenantId, approvalId })
    const reason = found.payload._tag === "ApprovalDecided"
      ? `${found.payload.approver} ${found.payload.decision} it at ${new Date(found.timestamp).toISOString()}`
      : `the run is ${info.status}`
    return yield* new Errors.ApprovalNotPending({ approvalId, runId, reason })
  })

/** The arguments a person's edit sets, when it changes them: checked against the tool's parameters first. */
const editedArguments = (runtime: Runtime, request: Approval.DecideRequest, asked: Asked): Effect.Effect<string | undefined, Errors.InvalidToolArguments | Errors.InvalidInput> => {
  if (request.decision !== "approve" || request.arguments === undefined) return Effect.succeed(undefined)
  const text = JSON.stringify(request.arguments)
  if (canonicalJson(request.arguments) === canonicalJson(JSON.parse(asked.arguments))) return Effect.succeed(undefined)
  const tool = request.tool ?? runtime.deps.tools.get(asked.tool)
  if (tool === undefined || tool.name !== asked.tool) {
    return Effect.fail(new Errors.InvalidInput({
      what: `the edited arguments of approval ${request.approvalId}`,
      reason: `tool "${asked.tool}" is not registered with this kernel, so they cannot be checked against its parameters: ` +
        `approve without edits, or decide where the tool is registered (or pass it as \`tool\`)`
    }))
  }
  const decoded = tool.decodeArguments(text)
  return Either.isLeft(decoded) ? Effect.fail(decoded.left) : Effect.succeed(text)
}

/** Writes a decision on a pending approval (see `Kernel.Service.decideApproval`). */
export const decide = (runtime: Runtime, request: Approval.DecideRequest): Effect.Effect<Approval.Decided, Approval.DecideError> =>
  Effect.gen(function*() {
    const { tenantId, approvalId, approver } = request
    if (approver.trim() === "") return yield* new Errors.InvalidInput({ what: "approver", reason: "empty: say who decides (it is logged)" })
    if (request.decision === "reject" && request.reason.trim() === "") {
      return yield* new Errors.InvalidInput({ what: "reason", reason: "empty: say why the call is rejected (the model sees it)" })
    }
    const runId = Approval.runIdOf(approvalId)
    if (runId === undefined) return yield* new Errors.ApprovalNotFound({ tenantId, approvalId })
    // Another tenant's run is exactly one that does not exist.
    const info = yield* Effect.catchTag(runtime.deps.store.getRun(tenantId, runId), "RunNotFound", () => Effect.fail(new Errors.ApprovalNotFound({ tenantId, approvalId })))
    const head = yield* readHead(runtime, info)
    const asked = head.payload
    if (info.status !== "paused" || asked._tag !== "ApprovalRequested" || asked.approvalId !== approvalId) {
      return yield* notPending(runtime, tenantId, runId, approvalId, info)
    }
    if (asked.approvers !== undefined && asked.approvers.length > 0 && !asked.approvers.includes(approver)) {
      return yield* new Errors.ApproverNotAllowed({ approvalId, approver, approvers: asked.approvers })
    }
    const edited = yield* editedArguments(runtime, request, asked)
    const payloads: ReadonlyArray<EventPayload> = request.decision === "approve"
      ? [{ _tag: "ApprovalDecided", approvalId, decision: "approved", approver, ...(edited === undefined ? {} : { arguments: edited }) }]
      : [
        { _tag: "ApprovalDecided", approvalId, decision: "rejected", approver, reason: request.reason },
        { _tag: "ToolFailed", tool: asked.tool, kind: "rejected", error: request.reason }
      ]
    // Written as the run's current owner, without claiming it, right after the head: a second decision conflicts.
    const ledger = Ledger.outsider(runtime.deps.store, runtime.deps.auditKey, info)
    yield* ledger.append(head.stepKey, payloads).pipe(
      Effect.catchTags({
        SequenceConflict: () => notPending(runtime, tenantId, runId, approvalId, { ...info, headSeq: info.headSeq + payloads.length }),
        OwnershipLost: () => notPending(runtime, tenantId, runId, approvalId, { ...info, headSeq: info.headSeq + payloads.length }),
        InvalidRunState: (e) => Effect.fail(new Errors.StoreError({ operation: "append", reason: e.message }))
      })
    )
    return {
      approvalId,
      runId,
      stepKey: head.stepKey,
      tool: asked.tool,
      decision: request.decision === "approve" ? "approved" : "rejected",
      ...(request.decision === "approve" ? { arguments: edited ?? asked.arguments } : {})
    } satisfies Approval.Decided
  })

/** Runs read per page while the inbox looks for pending approvals. */
const PAGE = 200

/** A pending approval found, and where it is in the inbox's order. */
interface Found {
  readonly approval: Approval.PendingApproval
  readonly at: ApprovalsIndex.Position
}

/** The inbox's order: the longest waiting first, ties by run id. */
const before = (a: ApprovalsIndex.Position, b: ApprovalsIndex.Position): number =>
  a.pausedAt !== b.pausedAt ? a.pausedAt - b.pausedAt : a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0

/**
 * The runs' pending approvals (each run's head event, read alone and verified against its record's head, is a pending
 * `ApprovalRequested` of the filter's tool, asked at or before `cutoff`).
 */
const pendingOf = (
  runtime: Runtime,
  runs: ReadonlyArray<{ readonly info: RunInfo; readonly pausedAt?: number }>,
  tool: string | undefined,
  cutoff: number | undefined,
  unreadable: Array<Noted>
) =>
  Effect.map(
    Effect.forEach(runs, (r) =>
      readHead(runtime, r.info).pipe(
        Effect.map((head) => [{ ...r, head }]),
        // A run whose log does not verify, or holds a corrupt row, is noted (and logged), not the whole page's failure.
        Effect.catchIf(
          (e): e is Errors.LogTampered | Errors.StoreError => e._tag === "LogTampered" || Errors.isCorruptRow(e),
          (e) =>
            Effect.as(
              Effect.sync(() =>
                unreadable.push({
                  entry: { runId: r.info.runId, seq: e._tag === "LogTampered" ? e.seq : r.info.headSeq, reason: e.reason },
                  // Where it would be in the inbox: when it paused (the index's), or its last event's time.
                  at: { pausedAt: r.pausedAt ?? r.info.updatedAt, runId: r.info.runId }
                })
              ).pipe(
                Effect.zipRight(Effect.logWarning(`approvals: run ${r.info.runId} left out, ${e.message}`))
              ),
              []
            )
        )
      ), { concurrency: 8 }),
    (listed) => {
      const found: Array<Found> = []
      for (const { head, info, pausedAt } of listed.flat()) {
        const p = head.payload
        if (info.status !== "paused" || p._tag !== "ApprovalRequested") continue
        if (tool !== undefined && p.tool !== tool) continue
        if (cutoff !== undefined && head.timestamp > cutoff) continue
        found.push({
          approval: { ...Approval.requestOf(head.stepKey, p), tenantId: info.tenantId, runId: info.runId, workflow: info.workflow, requestedAt: head.timestamp },
          at: { pausedAt: pausedAt ?? head.timestamp, runId: info.runId }
        })
      }
      return found
    }
  )

/** What a page looks for: up to `wanted` approvals after `after`, asked by `cutoff`; runs it cannot read go to `unreadable`. */
interface Query {
  readonly filter: Approval.ApprovalsFilter
  readonly after: ApprovalsIndex.Position | undefined
  readonly cutoff: number | undefined
  readonly wanted: number
  readonly unreadable: Array<Noted>
}

/** A run whose log could not be read, and where in the inbox's order it would be. */
interface Noted {
  readonly entry: Approval.Unreadable
  readonly at: ApprovalsIndex.Position
}

/**
 * The unreadable runs a page names: those in its own range of the inbox's order (after `after`, up to its last
 * approval when a page follows), asked by `cutoff`, each once. A page reads runs past its range to find whether
 * another page follows: those it names on the page they belong to.
 */
const inRange = (
  noted: ReadonlyArray<Noted>,
  after: ApprovalsIndex.Position | undefined,
  last: ApprovalsIndex.Position | undefined,
  cutoff: number | undefined
): ReadonlyArray<Approval.Unreadable> => {
  const seen = new Set<string>()
  return noted
    .filter((n) =>
      (after === undefined || before(n.at, after) > 0) && (last === undefined || before(n.at, last) <= 0) &&
      (cutoff === undefined || n.at.pausedAt <= cutoff))
    .sort((a, b) => before(a.at, b.at))
    .flatMap((n) => {
      if (seen.has(n.entry.runId)) return []
      seen.add(n.entry.runId)
      return [n.entry]
    })
}

/** Up to `wanted` pending approvals after `after`, in the inbox's order, from the index of paused runs. */
const fromIndex = (runtime: Runtime, index: ApprovalsIndex.Service, { after, cutoff, filter, unreadable, wanted }: Query) =>
  Effect.gen(function*() {
    const found: Array<Found> = []
    const size = Math.min(PAGE, Math.max(16, wanted))
    let from = after
    for (;;) {
      const paused = yield* index.paused(filter.tenantId, { after: from, until: cutoff, limit: size })
      const runs = yield* Effect.forEach(paused, (p) =>
        Effect.map(
          Effect.catchTag(runtime.deps.store.getRun(filter.tenantId, p.runId), "RunNotFound", () => Effect.succeed(undefined)),
          (info) => (info === undefined ? [] : [{ info, pausedAt: p.pausedAt }])
        ), { concurrency: 8 })
      for (const f of yield* pendingOf(runtime, runs.flat(), filter.tool, cutoff, unreadable)) found.push(f)
      const last = paused[paused.length - 1]
      if (found.length >= wanted || last === undefined || paused.length < size) return found.slice(0, wanted)
      from = last
    }
  })

/** The same without an index (the in-memory store): every paused run of the tenant, sorted here. */
const fromRunList = (runtime: Runtime, { after, cutoff, filter, unreadable, wanted }: Query) =>
  Effect.gen(function*() {
    const found: Array<Found> = []
    let page: string | undefined
    do {
      const listed = yield* Effect.catchTag(
        runtime.deps.store.listRunsPage(filter.tenantId, { status: "paused", limit: PAGE, ...(page === undefined ? {} : { after: page }) }),
        "InvalidInput",
        (e) => Effect.fail(new Errors.StoreError({ operation: "listRuns", reason: e.message }))
      )
      for (const f of yield* pendingOf(runtime, listed.runs.map((info) => ({ info })), filter.tool, cutoff, unreadable)) found.push(f)
      page = listed.next
    } while (page !== undefined)
    return found.filter((f) => after === undefined || before(f.at, after) > 0).sort((a, b) => before(a.at, b.at)).slice(0, wanted)
  })

/** A page of the tenant's pending approvals, the longest waiting first (see `Kernel.Service.approvalsPage`). */
export const page = (
  runtime: Runtime,
  index: Option.Option<ApprovalsIndex.Service>,
  filter: Approval.ApprovalsFilter
): Effect.Effect<Approval.ApprovalsPage, Errors.StoreError | Errors.LogTampered | Errors.InvalidInput> =>
  filter.after === undefined
    ? pageAfter(runtime, index, filter, undefined)
    : Effect.flatMap(RunCursor.decode(filter.after), (c) => pageAfter(runtime, index, filter, { pausedAt: c.createdAt, runId: c.runId }))

const pageAfter = (
  runtime: Runtime,
  index: Option.Option<ApprovalsIndex.Service>,
  filter: Approval.ApprovalsFilter,
  after: ApprovalsIndex.Position | undefined
): Effect.Effect<Approval.ApprovalsPage, Errors.StoreError | Errors.LogTampered> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const cutoff = filter.olderThan === undefined ? undefined : now - Duration.toMillis(Duration.decode(filter.olderThan))
    const limit = filter.limit === undefined ? Infinity : Math.max(0, Math.floor(filter.limit))
    const noted: Array<Noted> = []
    const named = (last: ApprovalsIndex.Position | undefined) => {
      const unreadable = inRange(noted, after, last, cutoff)
      return unreadable.length === 0 ? {} : { unreadable }
    }
    if (filter.runId !== undefined) {
      const info = yield* Effect.catchTag(runtime.deps.store.getRun(filter.tenantId, filter.runId), "RunNotFound", () => Effect.succeed(undefined))
      const found = info === undefined ? [] : yield* pendingOf(runtime, [{ info }], filter.tool, cutoff, noted)
      const approvals = found.filter((f) => after === undefined || before(f.at, after) > 0).slice(0, limit).map((f) => f.approval)
      return { approvals, ...named(undefined) }
    }
    // One more than the page: whether a next page exists.
    const wanted = limit === Infinity ? Infinity : limit + 1
    const found = Option.isSome(index)
      ? yield* fromIndex(runtime, index.value, { filter, after, cutoff, wanted, unreadable: noted })
      : yield* fromRunList(runtime, { filter, after, cutoff, wanted, unreadable: noted })
    const shown = found.slice(0, limit)
    const last = shown[shown.length - 1]
    const more = found.length > limit && last !== undefined
    return {
      approvals: shown.map((f) => f.approval),
      ...(more ? { next: RunCursor.encode({ createdAt: last.at.pausedAt, runId: last.at.runId }) } : {}),
      ...named(more ? last.at : undefined)
    }
  })

/** The first page of the inbox (see `Kernel.Service.approvals`). */
export const list = (
  runtime: Runtime,
  index: Option.Option<ApprovalsIndex.Service>,
  filter: Approval.ApprovalsFilter
): Effect.Effect<ReadonlyArray<Approval.PendingApproval>, Errors.StoreError | Errors.LogTampered> =>
  Effect.map(pageAfter(runtime, index, filter, undefined), (p) => p.approvals)
