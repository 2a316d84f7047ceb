/**
 * The log: an ordered, hash-chained list of events per run. `(runId, seq)` is unique and `seq` has no gaps.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { AssistantMessage, ChatMessage, Usage } from "./Chat.js"
import { exactCheck, exactGuard } from "./internal/exactGuard.js"
import { Json } from "./Json.js"
import { TenantContext } from "./Tenant.js"

/** The step key of events that belong to the run rather than to one step. */
export const RUN_STEP_KEY = "run"

/**
 * Where a run continued from (`ctx.continueAsNew`): the run it continues, the first run of the chain and its place in
 * it (the first run is generation 0). The run's id is `continuedRunId(chainRunId, generation)`.
 */
export const ContinuedFrom = Schema.Struct({ runId: Schema.String, chainRunId: Schema.String, generation: Schema.Int })
export type ContinuedFrom = typeof ContinuedFrom.Type

/**
 * Where a fork (`Kernel.fork`) came from: its log is `runId`'s events 1..`seq`, copied and re-chained under the fork's
 * id (its own `RunStarted` first). `overridden`: the step keys whose recorded results the fork replaced (what-if).
 * `carriedUsd`: what the source's lineage had spent beyond the copied events by the prefix's end (its sub-runs, and
 * what the source itself carried): part of the fork's cost (`costOfPayload`), so a fork's budget does not start afresh.
 */
export const ForkedFrom = Schema.Struct({
  runId: Schema.String,
  seq: Schema.Int,
  overridden: Schema.optional(Schema.Array(Schema.String)),
  carriedUsd: Schema.optional(Schema.Number)
})
export type ForkedFrom = typeof ForkedFrom.Type

export const RunStarted = Schema.TaggedStruct("RunStarted", {
  workflow: Schema.String,
  input: Json,
  tenant: TenantContext,
  parentRunId: Schema.optional(Schema.String),
  rootRunId: Schema.optional(Schema.String),
  /** Set on a run that continues another (`ctx.continueAsNew`). */
  continuedFrom: Schema.optional(ContinuedFrom),
  /** Set on a fork (`Kernel.fork`): the run and seq its log was copied from, and the steps whose results it replaced. */
  forkedFrom: Schema.optional(ForkedFrom),
  /** The version of the code that started the run (`Workflow.make({ version })`); absent: `Workflow.DEFAULT_VERSION`. */
  version: Schema.optional(Schema.String)
})

/**
 * The id of the run that continues a chain as its `generation`-th run: derived, so a crash and a retry of one handover
 * can never start two successors (the second `RunStarted` conflicts).
 */
export const continuedRunId = (chainRunId: string, generation: number): string => `${chainRunId}::continued::${generation}`

/** An execution took the run over (a resume, a recovery after a crash): it claims the run's head. */
export const RunResumed = Schema.TaggedStruct("RunResumed", { reason: Schema.String })

export const ModelRequested = Schema.TaggedStruct("ModelRequested", {
  model: Schema.String,
  /** The messages as sent to the model, after every middleware. */
  messages: Schema.Array(ChatMessage),
  tools: Schema.Array(Schema.String),
  /** Hash of the request as the code built it; replay compares it to detect divergence. */
  requestHash: Schema.String,
  outputSchema: Schema.optional(Json),
  /** The output token cap sent: the request's own, or the one the budget's estimate assumed (the reply's cost is capped by it). */
  maxOutputTokens: Schema.optional(Schema.Number)
})

export const ModelCompleted = Schema.TaggedStruct("ModelCompleted", {
  model: Schema.String,
  message: AssistantMessage,
  usage: Usage,
  costUsd: Schema.Number
})

/** A model call that failed (after the provider's own transport retries). */
/**
 * What a model call that did not complete was billed, when it was (the run's and the lineage's cost count it, as a
 * `ModelCompleted`'s): a reply the port refused (`malformed_tool_call`), a stream broken after some output, a reply a
 * middleware refused, a stream the budget stopped. Absent: nothing known to be billed.
 */
const billed = Schema.optional(Schema.Number)

export const ModelFailed = Schema.TaggedStruct("ModelFailed", {
  kind: Schema.String,
  error: Schema.String,
  costUsd: billed
})

export const ToolRequested = Schema.TaggedStruct("ToolRequested", {
  tool: Schema.String,
  /** The arguments as JSON text, exactly as received. */
  arguments: Schema.String,
  idempotencyKey: Schema.String,
  toolCallId: Schema.optional(Schema.String)
})

export const ToolCompleted = Schema.TaggedStruct("ToolCompleted", {
  tool: Schema.String,
  result: Json,
  /** Set when a person settled an in-doubt call with `reconcile`. */
  reconciled: Schema.optional(Schema.Boolean)
})

/** `rejected`: a person rejected the call's approval (`ApprovalDecided`); the handler never ran. */
export const ToolFailureKind = Schema.Literal("denied", "invalid_arguments", "unknown_tool", "tool_error", "timeout", "rejected")
export type ToolFailureKind = typeof ToolFailureKind.Type

export const ToolFailed = Schema.TaggedStruct("ToolFailed", {
  tool: Schema.String,
  kind: ToolFailureKind,
  error: Schema.String,
  /** For invalid arguments: the path of the first error in the arguments. */
  path: Schema.optional(Schema.String),
  reconciled: Schema.optional(Schema.Boolean)
})

/** One link of a lineage waiting for a person: a run and its step that waits (the last link: the step in doubt). */
export const WaitingOn = Schema.Struct({ runId: Schema.String, stepKey: Schema.String, tool: Schema.String })
export type WaitingOn = typeof WaitingOn.Type

/**
 * A non-idempotent tool was caught in doubt (requested, no outcome): a person must `reconcile` it. With `waitingOn`,
 * the step is not in doubt itself: its tool waits on another run that is (a sub-agent's), and `waitingOn` is the path
 * down to the step that needs a person, its last link; once that run is settled, a resume runs the tool again.
 */
export const ReconciliationRequired = Schema.TaggedStruct("ReconciliationRequired", {
  tool: Schema.String,
  idempotencyKey: Schema.String,
  waitingOn: Schema.optional(Schema.Array(WaitingOn))
})

export const StepCompleted = Schema.TaggedStruct("StepCompleted", {
  name: Schema.String,
  value: Json
})

export const PauseRequested = Schema.TaggedStruct("PauseRequested", {
  reason: Schema.String,
  ticket: Schema.String,
  /** JSON Schema of the response the run waits for, when it declared one. */
  responseSchema: Schema.optional(Json)
})

export const HumanResponded = Schema.TaggedStruct("HumanResponded", {
  ticket: Schema.String,
  payload: Json,
  /** Who responded, when the resume said (`Kernel.ResumeOptions.respondedBy`: the identity the application authenticated). */
  respondedBy: Schema.optional(Schema.String)
})

export const PolicyDenied = Schema.TaggedStruct("PolicyDenied", {
  tool: Schema.String,
  reason: Schema.String,
  capability: Schema.optional(Schema.String),
  middleware: Schema.optional(Schema.String),
  /** A model reply a middleware refused after the call (`afterModel`): what the call was billed. */
  costUsd: billed
})

export const BudgetExceeded = Schema.TaggedStruct("BudgetExceeded", {
  limitUsd: Schema.Number,
  spentUsd: Schema.Number,
  /** `during_call`: a streamed reply crossed the limit; the stream was stopped there. */
  phase: Schema.Literal("before_call", "after_call", "during_call"),
  /** `during_call`: what the stopped stream was billed (its prompt, and its output so far at 4 characters a token). */
  costUsd: billed
})

/** A note a middleware writes about what it did (PII findings, spend, rewrites). */
export const MiddlewareNote = Schema.TaggedStruct("MiddlewareNote", {
  middleware: Schema.String,
  note: Schema.String,
  data: Json
})

export const RunCompleted = Schema.TaggedStruct("RunCompleted", { output: Json })

/**
 * The run ended by continuing as a new run (`ctx.continueAsNew`): its last event, written in one transaction with the
 * successor's `RunStarted`. `input` is what it handed over (a replay compares it with what the code hands over).
 */
export const RunContinued = Schema.TaggedStruct("RunContinued", { nextRunId: Schema.String, input: Json })

/**
 * A tool call waits for a person's decision (`Tool.make({ needsApproval })`): written before its `ToolRequested`, as
 * the last event of its batch, and the run pauses (status `paused`). `arguments` are the call's JSON arguments after
 * the `beforeTool` middleware (so after PII handling), as the handler would get them. `approvers`: who may decide
 * (absent: any approver of the tenant).
 */
export const ApprovalRequested = Schema.TaggedStruct("ApprovalRequested", {
  approvalId: Schema.String,
  tool: Schema.String,
  arguments: Schema.String,
  toolCallId: Schema.optional(Schema.String),
  approvers: Schema.optional(Schema.Array(Schema.String))
})

/**
 * A person decided a pending approval: who (`approver`), when (the event's timestamp), and what changed (`arguments`:
 * the edited JSON arguments the call runs with, when they differ from the requested ones; `reason`: why it was
 * rejected). A rejection is written with the call's `ToolFailed` (kind `rejected`) in the same batch.
 */
export const ApprovalDecided = Schema.TaggedStruct("ApprovalDecided", {
  approvalId: Schema.String,
  decision: Schema.Literal("approved", "rejected"),
  approver: Schema.String,
  arguments: Schema.optional(Schema.String),
  reason: Schema.optional(Schema.String)
})

export const RunFailed = Schema.TaggedStruct("RunFailed", {
  errorTag: Schema.String,
  error: Schema.String,
  /** The error encoded with the workflow's `error` schema (or the kernel's, for a budget): decoded again on resume. */
  encoded: Schema.optional(Json)
})

// --- signals (`Kernel.signal`, `ctx.waitForSignal`): see the core README's "Signals".

/**
 * A message delivered to the run (`Kernel.signal`), written by the sender into the run's own chain under the
 * append's sequence check, with the run's step key (`run`): it is no step of the code. It waits there until a
 * `ctx.waitForSignal` of its name takes it (`SignalReceived` names its seq).
 */
export const SignalSent = Schema.TaggedStruct("SignalSent", {
  signalId: Schema.String,
  name: Schema.String,
  payload: Json,
  /**
   * Where a signal carried over by continue-as-new was sent: the run it continues and the seq it had there. A run
   * hands the signals it did not take to its successor, in the successor's first batch (see the core README's
   * "Signals"). Absent for a signal a sender wrote.
   */
  carriedFrom: Schema.optional(Schema.Struct({ runId: Schema.String, seq: Schema.Number }))
})

/**
 * A `ctx.waitForSignal` found no signal of its name and waits: its deadline (epoch ms; absent without a timeout) is
 * logged, so a run resumed after a crash waits only what is left.
 */
export const SignalAwaited = Schema.TaggedStruct("SignalAwaited", {
  name: Schema.String,
  deadline: Schema.optional(Schema.Number)
})

/** A `ctx.waitForSignal` took the signal sent at `signalSeq`: its payload as sent (a replay decodes this copy). */
export const SignalReceived = Schema.TaggedStruct("SignalReceived", {
  name: Schema.String,
  signalId: Schema.String,
  signalSeq: Schema.Int,
  payload: Json
})

/** A `ctx.waitForSignal` reached its logged deadline with no signal of its name. */
export const SignalTimedOut = Schema.TaggedStruct("SignalTimedOut", {
  name: Schema.String,
  deadline: Schema.Number
})

/** Every event payload, tagged by its type. */
export const EventPayload = Schema.Union(
  RunStarted,
  RunResumed,
  ModelRequested,
  ModelCompleted,
  ModelFailed,
  ToolRequested,
  ToolCompleted,
  ToolFailed,
  ReconciliationRequired,
  StepCompleted,
  PauseRequested,
  HumanResponded,
  PolicyDenied,
  BudgetExceeded,
  MiddlewareNote,
  RunCompleted,
  RunFailed,
  RunContinued,
  SignalSent,
  SignalAwaited,
  SignalReceived,
  SignalTimedOut,
  // Per-tool approvals (issue 16).
  ApprovalRequested,
  ApprovalDecided
)
export type EventPayload = typeof EventPayload.Type
export type EventType = EventPayload["_tag"]

/** One entry of a run's log. */
export const Event = Schema.Struct({
  eventId: Schema.String,
  runId: Schema.String,
  tenantId: Schema.String,
  seq: Schema.Int,
  /** Milliseconds since the epoch. */
  timestamp: Schema.Number,
  type: Schema.String,
  stepKey: Schema.String,
  payload: EventPayload,
  prevHash: Schema.String,
  hash: Schema.String
})
export type Event = typeof Event.Type

/** Decodes an event read back from a store. */
export const decodeEvent = Schema.decodeUnknownSync(Event)

const schemaPayload = Schema.decodeUnknownEither(EventPayload)

/** Decodes a payload read back from a store (the parsed JSON of what `append` wrote); the error says why not. */
export const decodePayload = (json: unknown): Either.Either<EventPayload, string> =>
  isExactPayload(json)
    ? Either.right(json)
    : Either.mapLeft(schemaPayload(json), (error) => ParseResult.TreeFormatter.formatErrorSync(error))

/** A parsed payload that decoding would return unchanged: used as it is (see `exactGuard`). */
const isExactPayload = exactGuard(EventPayload)

/** Each payload type's own exact guard (`exactGuard` of that member alone), by its `_tag`. */
const exactByType: ReadonlyMap<string, (u: unknown) => boolean> = new Map(
  EventPayload.members.flatMap((member) =>
    SchemaAST.getPropertySignatures(member.ast).flatMap((p) =>
      p.name === "_tag" && SchemaAST.isLiteral(p.type) ? [[String(p.type.literal), exactCheck(member.ast)] as const] : []
    )
  )
)

/** A parsed payload that its type's member would decode to itself: a member of the union, so a payload as it is. */
const isExactOfType = (type: string, json: unknown): json is EventPayload => exactByType.get(type)?.(json) === true

/** Every event type the log may hold (the payloads' tags). */
export const EVENT_TYPES: ReadonlySet<string> = new Set(exactByType.keys())

/**
 * `decodePayload` of a payload stored under the event type `type` (a store's `type` column): the common payload, plain
 * JSON exactly of that type's schema, is checked by that type's own compiled guard, not the whole union's; anything
 * else (another type's payload, excess keys, a failure) is decoded by the union's schema as `decodePayload` decodes
 * it, with the same result and error.
 */
export const decodeStoredPayload = (type: string, json: unknown): Either.Either<EventPayload, string> =>
  isExactOfType(type, json) ? Either.right(json) : decodePayload(json)

/**
 * Lifecycle of a run, kept by the store from the events it appends. `continued`: the run ended by continuing as a new
 * run of its lineage (its last event is `RunContinued`, naming the successor).
 */
export const RunStatus = Schema.Literal("running", "paused", "completed", "failed", "needs_reconciliation", "continued")
export type RunStatus = typeof RunStatus.Type

/** A run as listed by the store. */
export const RunInfo = Schema.Struct({
  runId: Schema.String,
  tenantId: Schema.String,
  workflow: Schema.String,
  parentRunId: Schema.optional(Schema.String),
  rootRunId: Schema.String,
  status: RunStatus,
  headSeq: Schema.Int,
  headHash: Schema.String,
  costUsd: Schema.Number,
  createdAt: Schema.Number,
  updatedAt: Schema.Number,
  /** The run's owner epoch (fencing token): raised by every execution that claims the run; 0 before any claim. */
  ownerEpoch: Schema.Int,
  /**
   * The version of the code that started the run (its `RunStarted`'s; `Workflow.DEFAULT_VERSION`, "1", for a run
   * started before versions were recorded).
   */
  version: Schema.String,
  /** Set on a fork (`Kernel.fork`): the run its log was copied from (its `RunStarted.forkedFrom.runId`). */
  forkedFrom: Schema.optional(Schema.String)
})
export type RunInfo = typeof RunInfo.Type

/** What a batch of events changes in its run's row: the new status (if any) and the cost it adds. */
export interface BatchSummary {
  readonly status: RunStatus | undefined
  readonly costUsd: number
}

/** Status and cost implied by a batch; every store applies it in the same transaction as the append. */
export const summarize = (events: ReadonlyArray<Event>): BatchSummary => {
  let status: RunStatus | undefined
  let costUsd = 0
  for (const event of events) {
    const p = event.payload
    status = statusAfter(p) ?? status
    costUsd += costOfPayload(p)
  }
  return { status, costUsd }
}

/** What an event adds to its run's cost: a model call's, completed or not (see `ModelFailed.costUsd`), and what a fork carries. */
export const costOfPayload = (p: EventPayload): number => {
  switch (p._tag) {
    case "RunStarted":
      return p.forkedFrom?.carriedUsd ?? 0
    case "ModelCompleted":
      return p.costUsd
    case "ModelFailed":
    case "PolicyDenied":
    case "BudgetExceeded":
      return p.costUsd ?? 0
    default:
      return 0
  }
}

/** The run status an event's payload sets (undefined: it leaves the status as it was). */
export const statusAfter = (p: EventPayload): RunStatus | undefined => {
  switch (p._tag) {
    case "RunStarted":
    case "RunResumed":
    case "HumanResponded":
    case "SignalReceived":
    case "SignalTimedOut":
      return "running"
    case "ToolCompleted":
    case "ToolFailed":
      return p.reconciled === true ? "running" : undefined
    case "PauseRequested":
    case "ApprovalRequested":
      return "paused"
    case "ApprovalDecided":
      return "running"
    case "ReconciliationRequired":
      return "needs_reconciliation"
    case "RunCompleted":
      return "completed"
    case "RunFailed":
      return "failed"
    case "RunContinued":
      return "continued"
    default:
      return undefined
  }
}
