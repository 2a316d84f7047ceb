/**
 * Deciding and listing approvals without running any workflow code: a decision is one batch appended at the run's
 * head, where its `ApprovalRequested` waits, with the head's sequence as the expected one, so of two approvers
 * deciding at once exactly one is written (the other's append conflicts). The inbox reads the tenant's paused runs on
 * the runs index and keeps those whose head event is a pending approval.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Approval from "../Approval.js"
import * as Errors from "../Errors.js"
import type { Event, EventPayload, RunInfo } from "../Event.js"
import * as EventStore from "../EventStore.js"
import { canonicalJson } from "./hash.js"
import * as Ledger from "./ledger.js"
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
    const ledger = Ledger.make({
      store: runtime.deps.store,
      auditKey: runtime.deps.auditKey,
      runId,
      tenantId,
      head: { seq: info.headSeq, hash: info.headHash },
      mode: "live",
      ownerEpoch: info.ownerEpoch,
      claim: false,
      onRefused: () => undefined
    })
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

/** Runs listed per page while the inbox looks for paused runs. */
const PAGE = 200

/** The tenant's pending approvals (see `Kernel.Service.approvals`). */
export const list = (runtime: Runtime, filter: Approval.ApprovalsFilter): Effect.Effect<ReadonlyArray<Approval.PendingApproval>, Errors.StoreError | Errors.LogTampered> =>
  Effect.gen(function*() {
    const { store } = runtime.deps
    const now = yield* Clock.currentTimeMillis
    const cutoff = filter.olderThan === undefined ? undefined : now - Duration.toMillis(Duration.decode(filter.olderThan))
    const limit = filter.limit === undefined ? Infinity : Math.max(0, Math.floor(filter.limit))
    const found: Array<Approval.PendingApproval> = []
    const keep = (runs: ReadonlyArray<RunInfo>) =>
      Effect.forEach(runs, (info) => Effect.map(readHead(runtime, info), (head) => ({ info, head })), { concurrency: 8 }).pipe(
        Effect.map((heads) => {
          for (const { head, info } of heads) {
            const p = head.payload
            if (info.status !== "paused" || p._tag !== "ApprovalRequested") continue
            if (filter.tool !== undefined && p.tool !== filter.tool) continue
            if (cutoff !== undefined && head.timestamp > cutoff) continue
            if (found.length >= limit) return
            found.push({ ...Approval.requestOf(head.stepKey, p), tenantId: info.tenantId, runId: info.runId, workflow: info.workflow, requestedAt: head.timestamp })
          }
        })
      )
    if (filter.runId !== undefined) {
      const info = yield* Effect.catchTag(store.getRun(filter.tenantId, filter.runId), "RunNotFound", () => Effect.succeed(undefined))
      if (info !== undefined) yield* keep([info])
      return found
    }
    let after: string | undefined
    do {
      const page = yield* Effect.catchTag(
        store.listRunsPage(filter.tenantId, { status: "paused", limit: PAGE, ...(after === undefined ? {} : { after }) }),
        "InvalidInput",
        (e) => Effect.fail(new Errors.StoreError({ operation: "listRuns", reason: e.message }))
      )
      yield* keep(page.runs)
      after = page.next
    } while (after !== undefined && found.length < limit)
    return found
  })
