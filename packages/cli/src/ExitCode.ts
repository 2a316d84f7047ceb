/**
 * The `artana` command's exit codes. Each kind of outcome has its own, so scripts can tell a policy denial from a
 * failing tool, bad input from a missing run.
 *
 * | code | meaning |
 * |---|---|
 * | 0 | success |
 * | 1 | internal error (a bug: please report it) |
 * | 2 | bad input: command line, plan or policy file (malformed YAML, unknown tool or field, wrong type, bad arguments) |
 * | 3 | a step was denied by the policy |
 * | 4 | a step's tool failed (an error, a timeout) |
 * | 5 | not found: the run or the approval (for this tenant), or the database |
 * | 6 | integrity: `verify` found a broken hash chain, or `replay` diverged from the log (plan mismatch) |
 * | 7 | the store cannot be opened (or its schema is a newer Artana's) or failed |
 * | 8 | the run needs attention: unfinished, paused (for approval: `artana approve`), in doubt (needs reconciliation), driven by another process, or its call in doubt may still be running |
 *
 * @since 0.1.0
 */
export const Ok = 0
export const Internal = 1
export const BadInput = 2
export const Denied = 3
export const ToolFailed = 4
export const NotFound = 5
export const Integrity = 6
export const StoreUnavailable = 7
export const NeedsAttention = 8

export type ExitCode = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8

const MEANINGS: ReadonlyMap<number, string> = new Map([
  [Ok, "success"],
  [Internal, "internal error (a bug: please report it, with the output of --verbose)"],
  [BadInput, "bad input: the command line, the plan or the policy"],
  [Denied, "a step was denied by the policy"],
  [ToolFailed, "a step's tool failed (an error, a timeout)"],
  [NotFound, "not found: the run (for this tenant), or the database"],
  [Integrity, "integrity: a broken hash chain, or a replay that diverged from the log"],
  [StoreUnavailable, "the store cannot be opened (or was written by a newer Artana), or failed"],
  [NeedsAttention, "the run needs attention: unfinished, in doubt (needs_reconciliation), or driven by another process"]
])

/** What an exit code means, in a few words (the table above; `artana --help` prints it). */
export const meaning = (code: number): string => MEANINGS.get(code) ?? "unknown"

const BY_TAG: Readonly<Record<string, ExitCode>> = {
  PlanError: BadInput,
  PolicyError: BadInput,
  InvalidMcpConfig: BadInput,
  // An MCP server that cannot be started, reached or listed.
  McpServerError: ToolFailed,
  InvalidInput: BadInput,
  NotAPlanRun: BadInput,
  ValidationError: BadInput,
  UnknownTool: BadInput,
  PolicyDenied: Denied,
  ToolError: ToolFailed,
  InvalidToolArguments: ToolFailed,
  RunNotFound: NotFound,
  DatabaseNotFound: NotFound,
  PlanMismatch: Integrity,
  NonDeterminism: Integrity,
  ChainBroken: Integrity,
  LogTampered: Integrity,
  StoreUnavailable: StoreUnavailable,
  StoreError: StoreUnavailable,
  SchemaMismatch: StoreUnavailable,
  InvalidRunState: NeedsAttention,
  RunNeedsReconciliation: NeedsAttention,
  SequenceConflict: NeedsAttention,
  OwnershipLost: NeedsAttention,
  StepMayBeRunning: NeedsAttention,
  // The run has ended: it takes no signal.
  SignalRefused: BadInput,
  ApprovalRejected: Denied,
  ApprovalNotFound: NotFound,
  ApprovalNotPending: NeedsAttention,
  ApproverNotAllowed: BadInput
}

/** The exit code for an error tag (a typed error's `_tag`, or a failed run's logged `errorTag`). */
export const ofTag = (tag: string): ExitCode => BY_TAG[tag] ?? Internal

/** The exit code for an error. */
export const ofError = (error: unknown): ExitCode =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string" ? ofTag(error._tag) : Internal

/**
 * The exit code of a finished plan run from its steps' statuses: a denial wins over a tool failure (a policy
 * violation is the louder signal), a failure over success.
 */
export const ofSteps = (statuses: ReadonlyArray<string>): ExitCode =>
  statuses.includes("denied") ? Denied : statuses.includes("failed") ? ToolFailed : Ok
