/**
 * Per-tool approvals: a tool call that waits for a person's yes before it runs (`Tool.make({ needsApproval })`).
 * The run pauses at the call, before its `ToolRequested`; a person approves it (optionally with edited arguments) or
 * rejects it (the model sees the rejection as the call's result), and the run goes on with the decision. Both are
 * events in the run's hash chain. This module holds what crosses the API: a pending approval as the inbox lists it,
 * the inbox's filter, a decision, and approval ids.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Errors from "./Errors.js"
import type { Json } from "./Json.js"
import type { Tool } from "./Tool.js"

/** The call a run paused for (a paused `RunResult`'s `approval`). */
export interface ApprovalRequest {
  /** The id to decide it by: `<runId>@<uuid>`. */
  readonly approvalId: string
  readonly stepKey: string
  readonly tool: string
  /** The call's JSON arguments, after the `beforeTool` middleware (PII handling), as the handler would get them. */
  readonly arguments: string
  readonly toolCallId?: string | undefined
  /** Who may decide it; absent: any approver of the tenant. */
  readonly approvers?: ReadonlyArray<string> | undefined
}

/** A tool call waiting for a decision, as the inbox lists it. */
export interface PendingApproval extends ApprovalRequest {
  readonly tenantId: string
  readonly runId: string
  readonly workflow: string
  /** When it was requested (ms since the epoch). */
  readonly requestedAt: number
}

/** The inbox's filter: the tenant's pending approvals, optionally of one run, of one tool, or waiting at least so long. */
export interface ApprovalsFilter {
  readonly tenantId: string
  readonly runId?: string | undefined
  readonly tool?: string | undefined
  /** Only approvals requested at least this long ago (`"1 hour"`, `Duration.minutes(5)`). */
  readonly olderThan?: Duration.DurationInput | undefined
  /** At most this many, the longest waiting first (requested earliest; ties by run id). Default all. */
  readonly limit?: number | undefined
  /** Where to go on from: the `next` of the page before (`Kernel.approvalsPage`). */
  readonly after?: string | undefined
}

/** A page of the inbox: the approvals, and the cursor of the next page when there is one. */
export interface ApprovalsPage {
  readonly approvals: ReadonlyArray<PendingApproval>
  readonly next?: string | undefined
  /**
   * Paused runs in the page's range of the inbox whose log does not verify (`LogTampered`) or holds a corrupt row:
   * their approvals can be neither listed nor decided (a decision reads the log verified). Listed here, not failing the
   * page: one run's broken log does not hide every other run's approvals. Each is named on the one page whose range it
   * falls in (when it paused, or its last event's time), whatever the `tool` filter (its tool cannot be read); absent
   * when there are none.
   */
  readonly unreadable?: ReadonlyArray<Unreadable> | undefined
}

/** A paused run whose log does not verify, where its approvals were looked for: `LogTampered`'s fields. */
export interface Unreadable {
  readonly runId: string
  readonly seq: number
  readonly reason: string
}

/** Who decides, and which approval. */
export interface DecisionRef {
  readonly tenantId: string
  readonly approvalId: string
  /** Who decides: logged in the decision, and checked against the tool's `approvers` when it names any. */
  readonly approver: string
}

/** A decision: approve (optionally with edited arguments) or reject (with the reason the model sees). */
export type Decision =
  | DecisionRef & {
    readonly decision: "approve"
    /** Edited arguments (a JSON value) the call runs with instead; checked against the tool's parameters first. */
    readonly arguments?: Json | undefined
  }
  | DecisionRef & { readonly decision: "reject"; readonly reason: string }

/** A decision, and optionally the tool to check edited arguments against (else the kernel's registered one). */
export type DecideRequest = Decision & { readonly tool?: Tool | undefined }

/** What deciding an approval fails with; nothing is written on any of them. */
export type DecideError =
  | Errors.ApprovalNotFound
  | Errors.ApprovalNotPending
  | Errors.ApproverNotAllowed
  | Errors.InvalidToolArguments
  | Errors.InvalidInput
  | Errors.StoreError
  | Errors.LogTampered

/** What a decision wrote: the run and step it decided, and how. */
export interface Decided {
  readonly approvalId: string
  readonly runId: string
  readonly stepKey: string
  readonly tool: string
  readonly decision: "approved" | "rejected"
  /** The arguments the call runs with (approved), edited or as requested. */
  readonly arguments?: string | undefined
}

/** The request an `ApprovalRequested` event (at `stepKey`) records. */
export const requestOf = (
  stepKey: string,
  p: { readonly approvalId: string; readonly tool: string; readonly arguments: string; readonly toolCallId?: string | undefined; readonly approvers?: ReadonlyArray<string> | undefined }
): ApprovalRequest => ({
  approvalId: p.approvalId,
  stepKey,
  tool: p.tool,
  arguments: p.arguments,
  ...(p.toolCallId === undefined ? {} : { toolCallId: p.toolCallId }),
  ...(p.approvers === undefined ? {} : { approvers: p.approvers })
})

/** The reason a paused run gives for an approval. */
export const reasonOf = (request: ApprovalRequest): string => `approval of a call to tool "${request.tool}" with ${request.arguments}`

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A new approval id for a call of run `runId`: the run's id and a UUID, so the id alone finds its run. */
export const makeId = (runId: string): string => `${runId}@${crypto.randomUUID()}`

/** The run an approval id names, or undefined when the text is no approval id. */
export const runIdOf = (approvalId: string): string | undefined => {
  const at = approvalId.length - 37
  if (at < 1 || approvalId[at] !== "@" || !UUID.test(approvalId.slice(at + 1))) return undefined
  return approvalId.slice(0, at)
}
