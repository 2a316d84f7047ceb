/**
 * Every failure the kernel can report. Each is a `Schema.TaggedError`, so it can be written into the log,
 * and carries a message a person can act on.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { Usage } from "./Chat.js"
import { WaitingOn } from "./Event.js"

/** Another writer appended to the run first: this execution lost the race and must stop. */
export class SequenceConflict extends Schema.TaggedError<SequenceConflict>()("SequenceConflict", {
  runId: Schema.String,
  expectedSeq: Schema.Number
}) {
  override get message() {
    return `run ${this.runId}: another writer appended after seq ${this.expectedSeq}; ` +
      `this execution stopped without writing (only one process may drive a run at a time)`
  }
}

/** The store failed (I/O, driver, corrupt row). */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `store ${this.operation} failed: ${this.reason}`
  }
}

/** How the reason of a `StoreError` for a corrupt row begins: a row that does not hold what it should. */
export const CORRUPT_ROW = "corrupt row"

/**
 * Whether the store failed on a corrupt row (one run's broken log, as a `LogTampered` is) rather than being down: a
 * listing over many runs (the approvals inbox) names that run and goes on.
 */
export const isCorruptRow = (error: StoreError): boolean => error.reason.startsWith(CORRUPT_ROW)

/** The store could not be opened at all. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  store: Schema.String,
  location: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `cannot open the ${this.store} store at ${this.location}: ${this.reason}`
  }
}

/** No run with this id exists for this tenant. */
export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", {
  runId: Schema.String,
  tenantId: Schema.optional(Schema.String)
}) {
  override get message() {
    // Said alike of an id that never existed, another tenant's, and a run whose process died before its first event was
    // durable: none has anything to resume, and only the first batch (RunStarted) creates a run.
    return `run ${this.runId} not found${this.tenantId === undefined ? "" : ` for tenant ${this.tenantId}`}: no run of ` +
      `that id has started (a process stopped before its RunStarted event was durable leaves nothing to resume; ` +
      `running its workflow with this id and its input starts it)`
  }
}

/** The run's code asked for a different step than its log holds: never a silent divergence. */
export class NonDeterminism extends Schema.TaggedError<NonDeterminism>()("NonDeterminism", {
  runId: Schema.String,
  stepKey: Schema.String,
  expected: Schema.String,
  actual: Schema.String
}) {
  override get message() {
    return `run ${this.runId} diverged from its log at step ${this.stepKey}: the log holds ${this.expected}, ` +
      `the code asked for ${this.actual}. Restore the code the run started with, or start a new run.`
  }
}

/** A tool name that no registered tool has. */
export class UnknownTool extends Schema.TaggedError<UnknownTool>()("UnknownTool", {
  tool: Schema.String,
  available: Schema.Array(Schema.String)
}) {
  override get message() {
    return `unknown tool "${this.tool}"; registered tools: ${this.available.join(", ") || "(none)"}`
  }
}

/** Tool arguments that do not decode with the tool's parameter schema; the tool did not run. */
export class InvalidToolArguments extends Schema.TaggedError<InvalidToolArguments>()("InvalidToolArguments", {
  tool: Schema.String,
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid arguments for tool "${this.tool}" at ${this.path}: ${this.reason}`
  }
}

/** A tool handler failed. Handlers fail with this (or any error, which is wrapped in it). */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  tool: Schema.String,
  reason: Schema.String,
  timedOut: Schema.optional(Schema.Boolean),
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `tool "${this.tool}" failed: ${this.reason}`
  }
}

/** A call the tenant's capabilities or a policy middleware forbid; it never executed. */
export class PolicyDenied extends Schema.TaggedError<PolicyDenied>()("PolicyDenied", {
  tool: Schema.String,
  reason: Schema.String,
  capability: Schema.optional(Schema.String)
}) {
  override get message() {
    return `call to "${this.tool}" denied: ${this.reason}`
  }
}

/** The run's spend crossed its tenant's USD budget. */
export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  runId: Schema.String,
  limitUsd: Schema.Number,
  spentUsd: Schema.Number
}) {
  override get message() {
    // Under the limit: a call was refused before it was sent, its estimate (with the lineage's calls in flight) too much.
    return this.spentUsd < this.limitUsd
      ? `run ${this.runId} spent $${this.spentUsd.toFixed(6)} of its $${this.limitUsd} budget, and its next model call ` +
        `could cost more than is left (with the lineage's other calls in flight); raise the tenant's budgetUsdLimit, ` +
        `lower the call's maxOutputTokens, or start a smaller run`
      : `run ${this.runId} spent $${this.spentUsd.toFixed(6)} of its $${this.limitUsd} budget; raise the ` +
        `tenant's budgetUsdLimit or start a smaller run`
  }
}

/**
 * A model call under a budget whose model has no known price: refused before the request (a call is never treated
 * as free). The fix is a price, in code.
 */
export class BudgetUnpriced extends Schema.TaggedError<BudgetUnpriced>()("BudgetUnpriced", {
  runId: Schema.String,
  model: Schema.String
}) {
  override get message() {
    return `run ${this.runId}: no price is known for model "${this.model}", so its cost cannot be held to the tenant's ` +
      `budget and the call was refused before the request. Price it in the kernel's options: ` +
      `Kernel.layer({ prices: { "${this.model}": { input, cachedInput, output } } }) (USD per million tokens; ` +
      `Pricing.free for a model that costs nothing), or set unknownModelPrice`
  }
}

/** A model call failed. `kind` tells what to do about it. */
export class ModelError extends Schema.TaggedError<ModelError>()("ModelError", {
  kind: Schema.Literal(
    "rate_limited",
    "server_error",
    "timeout",
    "context_length_exceeded",
    "authentication",
    "refusal",
    "malformed_tool_call",
    "bad_request",
    "connection",
    "script_mismatch",
    "unknown"
  ),
  reason: Schema.String,
  retryable: Schema.Boolean,
  cause: Schema.optional(Schema.Defect),
  /**
   * What the provider reported it billed for the failed call, when it answered (a reply refused as malformed, the
   * sum of such replies an adapter retried): the kernel charges it to the run.
   */
  usage: Schema.optional(Usage)
}) {
  override get message() {
    return `model call failed (${this.kind}): ${this.reason}`
  }
}

/** The model's final answer did not decode with the output schema after the allowed re-asks. */
export class OutputDecodeError extends Schema.TaggedError<OutputDecodeError>()("OutputDecodeError", {
  attempts: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `the model's answer did not match the output schema after ${this.attempts} attempt(s): ${this.reason}`
  }
}

/** A chat loop used all its turns without a final answer. */
export class MaxTurnsExceeded extends Schema.TaggedError<MaxTurnsExceeded>()("MaxTurnsExceeded", {
  maxTurns: Schema.Number
}) {
  override get message() {
    return `the model did not give a final answer within ${this.maxTurns} turns; raise maxTurns or simplify the task`
  }
}

/** A human response that does not decode with the schema the pause asked for; nothing was written. */
export class InvalidHumanResponse extends Schema.TaggedError<InvalidHumanResponse>()("InvalidHumanResponse", {
  runId: Schema.String,
  ticket: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the response for ticket ${this.ticket} of run ${this.runId} is invalid: ${this.reason}. ` +
      `The run is still paused; resume it again with a valid response.`
  }
}

/** An operation that needs a run in a given status found it in another. */
export class InvalidRunState extends Schema.TaggedError<InvalidRunState>()("InvalidRunState", {
  runId: Schema.String,
  status: Schema.String,
  expected: Schema.String
}) {
  override get message() {
    return `run ${this.runId} is ${this.status}; this operation needs it to be ${this.expected}`
  }
}

/** A run's workflow is not registered with this kernel. */
export class WorkflowNotFound extends Schema.TaggedError<WorkflowNotFound>()("WorkflowNotFound", {
  workflow: Schema.String,
  available: Schema.Array(Schema.String)
}) {
  override get message() {
    return `workflow "${this.workflow}" is not registered; registered: ${this.available.join(", ") || "(none)"}`
  }
}

/** Input to a kernel operation that does not decode (run input, step value, reconcile outcome). */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  what: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid ${this.what}: ${this.reason}`
  }
}

/** A run that was failed earlier: its recorded error, as it is in the log. */
export class RunFailedError extends Schema.TaggedError<RunFailedError>()("RunFailedError", {
  runId: Schema.String,
  errorTag: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `run ${this.runId} failed with ${this.errorTag}: ${this.reason}`
  }
}

/**
 * The run's stored log does not hash to its chain: an event was altered, added, removed or reordered since it was
 * written (or the log was written with another audit key). The kernel refuses to replay or return it.
 */
export class LogTampered extends Schema.TaggedError<LogTampered>()("LogTampered", {
  runId: Schema.String,
  seq: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `run ${this.runId}: its log is broken at seq ${this.seq} (${this.reason}); the kernel will not replay or ` +
      `return it. Restore the log from a backup, and see \`artana verify ${this.runId}\``
  }
}

/** Every error of @artana/core. */
export type ArtanaError =
  | SequenceConflict
  | StoreError
  | StoreUnavailable
  | RunNotFound
  | NonDeterminism
  | UnknownTool
  | InvalidToolArguments
  | ToolError
  | PolicyDenied
  | BudgetExceeded
  | ModelError
  | OutputDecodeError
  | MaxTurnsExceeded
  | InvalidHumanResponse
  | InvalidRunState
  | WorkflowNotFound
  | InvalidInput
  | RunFailedError
  | WaitingOnRun
  | BudgetUnpriced
  | LogTampered
  | OwnershipLost
  | StepMayBeRunning
  | SchemaMismatch
  | SignalRefused
  | SignalTimeout
  | InvalidSignalPayload
  | ApprovalRejected
  | ApprovalNotFound
  | ApprovalNotPending
  | ApproverNotAllowed
  | ToolOutcomeUnknown

const tags = new Set<string>([
  "SequenceConflict",
  "StoreError",
  "StoreUnavailable",
  "RunNotFound",
  "NonDeterminism",
  "UnknownTool",
  "InvalidToolArguments",
  "ToolError",
  "PolicyDenied",
  "BudgetExceeded",
  "ModelError",
  "OutputDecodeError",
  "MaxTurnsExceeded",
  "InvalidHumanResponse",
  "InvalidRunState",
  "WorkflowNotFound",
  "InvalidInput",
  "RunFailedError",
  "WaitingOnRun",
  "BudgetUnpriced",
  "LogTampered",
  "OwnershipLost",
  "StepMayBeRunning",
  "SchemaMismatch",
  "SignalRefused",
  "SignalTimeout",
  "InvalidSignalPayload",
  "ApprovalRejected",
  "ApprovalNotFound",
  "ApprovalNotPending",
  "ApproverNotAllowed",
  "ToolOutcomeUnknown"
])

/** True for any error of @artana/core. */
export const isArtanaError = (u: unknown): u is ArtanaError =>
  Predicate.hasProperty(u, "_tag") && typeof u._tag === "string" && tags.has(u._tag)

/**
 * A tool's way to say it waits on another run that needs reconciliation (a sub-agent's child in doubt): the run
 * `runId`, waiting at `stepKey` (tool `tool`), and, when that step itself waits on a run, the path below it
 * (`waitingOn`). The kernel logs no failure: the step's run becomes `needs_reconciliation` too, naming the path, and
 * once the run it waits on is settled, a resume runs the tool's handler again (with the same idempotency key), so a
 * tool fails with this only when running it again is safe.
 *
 * @example
 * const result = yield* kernel.execute(child, { runId: childId, tenant: ctx.tenant, parentRunId: ctx.runId, input })
 * if (result.status === "needs_reconciliation") {
 *   return yield* new Errors.WaitingOnRun({ runId: childId, stepKey: result.stepKey, tool: result.tool, waitingOn: result.waitingOn })
 * }
 */
export class WaitingOnRun extends Schema.TaggedError<WaitingOnRun>()("WaitingOnRun", {
  runId: Schema.String,
  stepKey: Schema.String,
  tool: Schema.String,
  waitingOn: Schema.optional(Schema.Array(WaitingOn))
}) {
  /** The path from the awaited run down to the step that needs a person. */
  get path(): ReadonlyArray<WaitingOn> {
    return [{ runId: this.runId, stepKey: this.stepKey, tool: this.tool }, ...(this.waitingOn ?? [])]
  }
  override get message() {
    const last = this.path[this.path.length - 1]!
    return `waiting on run ${this.runId}, which needs reconciliation: reconcile step ${last.stepKey} (tool ${last.tool}) ` +
      `of run ${last.runId}, then resume`
  }
}

/**
 * This execution no longer owns the run: a newer execution claimed it (its owner epoch, the fencing token, is
 * higher), or the caller's lease on the run ran out or was taken over. Nothing was written and no tool handler was
 * started; the run's newer owner carries it on.
 */
export class OwnershipLost extends Schema.TaggedError<OwnershipLost>()("OwnershipLost", {
  runId: Schema.String,
  /** The owner epoch this execution held. */
  ownerEpoch: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `run ${this.runId}: this execution (owner epoch ${this.ownerEpoch}) no longer owns the run: ${this.reason}. ` +
      `It stopped without writing and without starting a tool handler; the newer owner carries the run on ` +
      `(if none does, resume the run)`
  }
}

/**
 * `reconcile` refused to settle a call in doubt that may still be running in the process that started it (its
 * task's lease has not expired, or the tool's timeout has not passed since its `ToolRequested`): settling it now
 * could record "did not happen" while it is happening.
 */
export class StepMayBeRunning extends Schema.TaggedError<StepMayBeRunning>()("StepMayBeRunning", {
  runId: Schema.String,
  stepKey: Schema.String,
  tool: Schema.String,
  reason: Schema.String,
  /** Epoch milliseconds from which the reason no longer holds (a lease may still be extended). */
  until: Schema.Number
}) {
  override get message() {
    return `run ${this.runId}: the call to tool "${this.tool}" at step ${this.stepKey} may still be running: ${this.reason}. ` +
      `Check the system it calls and settle it after ${new Date(this.until).toISOString()}; if you know the call has ` +
      `stopped (its process is gone), reconcile with force: true (\`artana reconcile --force\`)`
  }
}

/**
 * The database's schema is not one this code can use: it was written by a newer Artana (a version or a migration
 * this code does not know), or a table lacks a column the store needs (renamed or dropped outside Artana). Raised
 * when the store opens, before anything is read or written.
 */
export class SchemaMismatch extends Schema.TaggedError<SchemaMismatch>()("SchemaMismatch", {
  /** Which schema: a migration set (`"event_store"`, `"task_queue"`, ...) or `"sqlite file"` (its `user_version`). */
  schema: Schema.String,
  /** The version the database is at (the highest migration it records; 0 for none). */
  databaseVersion: Schema.Number,
  /** The highest version this code knows. */
  codeVersion: Schema.Number,
  /** What differs and what to do. */
  reason: Schema.String
}) {
  override get message() {
    return `the database's ${this.schema} schema is at version ${this.databaseVersion}, this Artana's at version ${this.codeVersion}: ${this.reason}`
  }
}

/**
 * A tenant given as plain data does not describe one. Raised at the boundary (`Artana.run`, `Artana.chat`, the
 * Promise client), before anything is written.
 */
export class InvalidTenant extends Schema.TaggedError<InvalidTenant>()("InvalidTenant", {
  /** Where in the tenant, and what is wrong there. */
  reason: Schema.String
}) {
  override get message() {
    return `invalid tenant: ${this.reason}. A tenant is { tenantId: a non-empty string, capabilities: an array of ` +
      `strings (default none), budgetUsdLimit: a finite number of USD, at least 0 }`
  }
}

// --- signals (`Kernel.signal`, `ctx.waitForSignal`)

/**
 * `Kernel.signal` refused a message: the run (the last of its chain, when the one addressed continued as new) has
 * ended, completed or failed, so nothing would ever read it. Nothing was written.
 */
export class SignalRefused extends Schema.TaggedError<SignalRefused>()("SignalRefused", {
  runId: Schema.String,
  name: Schema.String,
  status: Schema.String
}) {
  override get message() {
    return `run ${this.runId} is ${this.status}: signal "${this.name}" was refused and nothing was written (only a ` +
      `running or paused run, or one waiting for a person or reconciliation, takes signals)`
  }
}

/** A `ctx.waitForSignal` reached its deadline (logged) with no signal of its name; the code may catch it and go on. */
export class SignalTimeout extends Schema.TaggedError<SignalTimeout>()("SignalTimeout", {
  runId: Schema.String,
  name: Schema.String,
  /** The logged deadline, epoch milliseconds. */
  deadline: Schema.Number
}) {
  override get message() {
    return `run ${this.runId}: no signal "${this.name}" arrived before ${new Date(this.deadline).toISOString()}`
  }
}

/**
 * The signal a `ctx.waitForSignal` took does not decode with the schema the code gave. The signal is consumed (its
 * `SignalReceived` is logged, so a replay fails the same way); the next wait of that name takes the next signal.
 */
export class InvalidSignalPayload extends Schema.TaggedError<InvalidSignalPayload>()("InvalidSignalPayload", {
  runId: Schema.String,
  name: Schema.String,
  signalId: Schema.String,
  /** Where in the payload, and what is wrong there. */
  reason: Schema.String
}) {
  override get message() {
    return `run ${this.runId}: signal "${this.name}" (${this.signalId}) does not decode: ${this.reason}. It was consumed; ` +
      `send a corrected one`
  }
}

/** What a `ctx.waitForSignal` may fail with. */
export type WaitForSignalError = SignalTimeout | InvalidSignalPayload

// --- Per-tool approvals (issue 16).

/**
 * A person rejected the call's approval: the handler never ran. A chat loop answers it to the model as the call's
 * result (`{"error": "ApprovalRejected", "message": ...}`), so the model can react; a direct `ctx.tool` call fails
 * with it. Logged as the call's `ToolFailed` (kind `rejected`).
 */
export class ApprovalRejected extends Schema.TaggedError<ApprovalRejected>()("ApprovalRejected", {
  tool: Schema.String,
  reason: Schema.String,
  approver: Schema.optional(Schema.String)
}) {
  override get message() {
    return `the call to tool "${this.tool}" was rejected${this.approver === undefined ? "" : ` by ${this.approver}`}: ${this.reason}`
  }
}

/**
 * No pending or decided approval has this id for the tenant: a mistyped id, or another tenant's (which behaves exactly
 * like one that never existed). Nothing was written.
 */
export class ApprovalNotFound extends Schema.TaggedError<ApprovalNotFound>()("ApprovalNotFound", {
  tenantId: Schema.String,
  approvalId: Schema.String
}) {
  override get message() {
    return `approval ${this.approvalId} not found for tenant ${this.tenantId}: list the tenant's pending approvals ` +
      `(\`artana approvals --tenant ${this.tenantId}\`, or Artana.approvals)`
  }
}

/**
 * The approval exists but waits for no decision any more: another approver decided it first (two deciding at once:
 * exactly one decision is written), or the run moved on. Nothing was written.
 */
export class ApprovalNotPending extends Schema.TaggedError<ApprovalNotPending>()("ApprovalNotPending", {
  approvalId: Schema.String,
  runId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `approval ${this.approvalId} of run ${this.runId} is not pending: ${this.reason}`
  }
}

/** The approver is not among those the tool names (`Tool.make({ approvers })`). Nothing was written. */
export class ApproverNotAllowed extends Schema.TaggedError<ApproverNotAllowed>()("ApproverNotAllowed", {
  approvalId: Schema.String,
  approver: Schema.String,
  approvers: Schema.Array(Schema.String)
}) {
  override get message() {
    return `${this.approver} may not decide approval ${this.approvalId}: only ${this.approvers.join(", ")} may`
  }
}

/**
 * A tool call whose outcome cannot be known: the request was sent and the system that ran it went away before it
 * answered (an MCP server that died mid-call). A handler fails with it instead of a `ToolError` so the call is never
 * reported as failed when it may have acted: a non-idempotent tool's step is then in doubt, exactly as after a crash
 * (`ReconciliationRequired`, the run `needs_reconciliation` until a person reconciles it); an idempotent tool's call
 * fails as a tool error, which is safe to repeat.
 */
export class ToolOutcomeUnknown extends Schema.TaggedError<ToolOutcomeUnknown>()("ToolOutcomeUnknown", {
  tool: Schema.String,
  /** What happened, for the person who reconciles the call. */
  reason: Schema.String
}) {
  override get message() {
    return `tool ${this.tool}: the outcome of the call is unknown (${this.reason}); it may or may not have acted`
  }
}
