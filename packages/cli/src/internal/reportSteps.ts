/** A report's timeline rows: a step as its log tells it (with its audit), or a step of the plan never reached. */
import type * as Plan from "../Plan.js"
import * as PlanRunner from "../PlanRunner.js"
import type { Decision, Status, StepAudit, StepReport } from "../Report.js"

const statusOf = (produced: PlanRunner.Produced | undefined): Status =>
  produced === undefined ? "in_doubt" : PlanRunner.stepStatusOf(produced)

/**
 * A logged step as a report row: its decision and reason from its audit (`a`), else from the kernel's events; `name`
 * is the plan's name for it (none for a step the plan does not list: a log written by another version of the plan).
 */
export const fromLog = (step: PlanRunner.LoggedStep, a: StepAudit, name: string | undefined): StepReport => {
  const status = step.awaitingApproval === true ? "awaiting_approval" : statusOf(step.produced)
  const deniedBy = step.denial === undefined ? undefined : step.denial.middleware ?? (step.denial.capability === undefined ? undefined : `capability ${step.denial.capability}`)
  // The kernel refuses an unknown tool before any policy sees it; everything else passed the policy or was denied.
  const unknown = step.produced !== undefined && !step.produced.ok && step.produced.kind === "unknown_tool"
  const decision: Decision = a.decision ?? (status === "denied" ? "denied" : unknown ? "none" : "allowed")
  const reason = a.reason ??
    (step.denial !== undefined
      ? `${step.denial.reason}${deniedBy === undefined ? "" : ` (${deniedBy})`}`
      : decision === "allowed" ? "no rule denied the call" : "")
  return {
    id: step.id,
    name,
    tool: step.tool,
    decision,
    reason,
    status,
    inputHash: step.inputHash,
    outputHash: step.outputHash ?? null,
    args: step.args,
    startedAt: step.startedAt,
    durationMs: step.finishedAt === undefined ? null : step.finishedAt - step.startedAt,
    error: step.produced !== undefined && !step.produced.ok ? step.produced.error : null,
    reconciled: step.reconciled,
    filesRead: a.filesRead ?? [],
    filesWritten: a.filesWritten ?? [],
    domains: a.domains ?? [],
    commands: a.commands ?? [],
    containment: a.containment ?? null
  }
}

/** A step of the plan the run never reached. */
export const skipped = (step: Plan.Step): StepReport => ({
  id: step.id, name: step.name, tool: step.tool, decision: "none", reason: "not reached: the run stopped before this step", status: "skipped",
  inputHash: null, outputHash: null, args: null, startedAt: null, durationMs: null, error: null, reconciled: false,
  filesRead: [], filesWritten: [], domains: [], commands: [], containment: null
})
