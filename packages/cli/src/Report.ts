/**
 * The report of a plan run, read from its log: a timeline of its steps (each allowed or denied and why, its
 * status, input and output hashes, duration), what it touched (files read and written, domains, commands), its
 * denials, duration and cost. `toJson` is the stable JSON shape (`artana report --format json`), `render` the
 * console form.
 *
 * @since 0.1.0
 */
import type { Event, Json } from "@artana/core"
import type * as Plan from "./Plan.js"
import * as PlanRunner from "./PlanRunner.js"
import * as T from "./internal/terminal.js"

/** What the policy said about a call: allowed, denied, or nothing (the step never reached it). */
export type Decision = "allowed" | "denied" | "none"

/**
 * How a step ended; `skipped`: a stopped run never reached it; `in_doubt`: requested, no outcome logged (a crash);
 * `awaiting_approval`: its call waits for a person's decision (`artana approve` / `reject`).
 */
export type Status = "ok" | "denied" | "failed" | "skipped" | "in_doubt" | "awaiting_approval"

/** What one call touched, as the policy engine recorded it. */
export interface Touched {
  readonly filesRead: ReadonlyArray<string>
  readonly filesWritten: ReadonlyArray<string>
  readonly domains: ReadonlyArray<string>
  readonly commands: ReadonlyArray<string>
}

/**
 * The policy's view of one step, from the audit records its engine wrote into the log. A report without an audit
 * reader still knows every denial from the kernel's `PolicyDenied` events.
 */
export interface StepAudit extends Partial<Touched> {
  readonly decision?: "allowed" | "denied" | undefined
  readonly reason?: string | undefined
  /** How a shell step was contained (the sandbox's record): `none` is shown as a warning. */
  readonly containment?: Containment | undefined
}

/** How a command ran: the OS sandbox's mechanism (`none`: uncontained), what it saw, whether it had a network. */
export interface Containment {
  readonly mechanism: string
  readonly readOnly: ReadonlyArray<string>
  readonly readWrite: ReadonlyArray<string>
  readonly network: boolean
}

/** The warnings of a run's audit: each step whose command ran uncontained (the policy's `containment: none`). */
export const containmentWarnings = (audits: ReadonlyMap<string, StepAudit>): ReadonlyArray<string> =>
  [...audits.entries()].filter(([, a]) => a.containment?.mechanism === "none").map(([key]) =>
    `${key} ran uncontained: the policy says containment: none, so the command saw the whole machine its user can see`
  )

/** Reads the audit of each step (by step key) from a run's events. */
export type AuditReader = (events: ReadonlyArray<Event.Event>) => ReadonlyMap<string, StepAudit>

export interface StepReport extends Touched {
  readonly id: string
  readonly name: string | undefined
  readonly tool: string
  readonly decision: Decision
  readonly reason: string
  readonly status: Status
  readonly inputHash: string | null
  readonly outputHash: string | null
  readonly args: Json.Json | null
  readonly startedAt: number | null
  readonly durationMs: number | null
  readonly error: string | null
  /** The step was in doubt and a person settled its outcome (`artana reconcile`). */
  readonly reconciled: boolean
  /** How a shell step was contained; null for other steps. */
  readonly containment: Containment | null
}

export interface Summary extends Touched {
  readonly steps: number
  readonly ok: number
  readonly denied: number
  readonly failed: number
  readonly skipped: number
  readonly inDoubt: number
  readonly startedAt: number
  readonly finishedAt: number
  readonly durationMs: number
  readonly costUsd: number
  readonly denials: ReadonlyArray<{ readonly id: string; readonly tool: string; readonly reason: string }>
}

export interface Report {
  readonly runId: string
  readonly tenantId: string
  readonly status: Event.RunStatus
  readonly onError: Plan.OnError | null
  readonly planFile: PlanRunner.FileRecord | null
  readonly policyFile: { readonly file: string; readonly sha256: string } | null
  /** Why the run failed, as logged. */
  readonly error: { readonly tag: string; readonly message: string } | null
  readonly steps: ReadonlyArray<StepReport>
  readonly summary: Summary
}

const unique = (lists: ReadonlyArray<ReadonlyArray<string> | undefined>): ReadonlyArray<string> =>
  [...new Set(lists.flatMap((l) => l ?? []))].sort()

const statusOf = (produced: PlanRunner.Produced | undefined): Status =>
  produced === undefined ? "in_doubt" : PlanRunner.stepStatusOf(produced)

/** Options of `make`. */
export interface MakeOptions {
  /**
   * The events are a stretch of the log (after its first event, which holds the plan): the report holds the steps
   * logged in it, and its summary counts those; the plan's other steps are left out rather than shown as skipped.
   */
  readonly stretch?: boolean | undefined
}

/**
 * Builds the report of a plan run from its row and events. Fails (returns a reason) for another workflow's run.
 */
export const make = (
  info: Event.RunInfo,
  events: ReadonlyArray<Event.Event>,
  audit: AuditReader = () => new Map(),
  options: MakeOptions = {}
): Report | PlanRunner.NotAPlanRun => {
  const input = PlanRunner.loggedInput(events)
  if (input === undefined) return new PlanRunner.NotAPlanRun({ runId: info.runId, workflow: info.workflow })
  const audits = audit(events)
  const logged = new Map(PlanRunner.loggedSteps(events).map((s) => [s.id, s]))
  const steps: Array<StepReport> = []
  const seen = new Set<string>()
  const report = (id: string, name: string | undefined, tool: string): StepReport => {
    seen.add(id)
    const step = logged.get(id)
    if (step === undefined) {
      return {
        id, name, tool, decision: "none", reason: "not reached: the run stopped before this step", status: "skipped",
        inputHash: null, outputHash: null, args: null, startedAt: null, durationMs: null, error: null, reconciled: false,
        filesRead: [], filesWritten: [], domains: [], commands: [], containment: null
      }
    }
    const a = audits.get(step.key) ?? {}
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
      id,
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
  for (const step of input.plan.steps) if (options.stretch !== true || logged.has(step.id)) steps.push(report(step.id, step.name, step.tool))
  // Steps the log holds that the plan does not list (a log written by another version of the plan) still show.
  for (const step of logged.values()) if (!seen.has(step.id)) steps.push(report(step.id, undefined, step.tool))

  const count = (s: Status) => steps.filter((x) => x.status === s).length
  const first = events[0]
  const last = events[events.length - 1]
  const failed = [...events].reverse().find((e) => e.payload._tag === "RunFailed")?.payload
  const startedAt = first?.timestamp ?? info.createdAt
  const finishedAt = last?.timestamp ?? info.updatedAt
  return {
    runId: info.runId,
    tenantId: info.tenantId,
    status: info.status,
    onError: input.plan.onError,
    planFile: input.planFile ?? null,
    policyFile: input.policy === undefined ? null : { file: input.policy.file, sha256: input.policy.sha256 },
    error: failed?._tag === "RunFailed" ? { tag: failed.errorTag, message: failed.error } : null,
    steps,
    summary: {
      steps: steps.length,
      ok: count("ok"),
      denied: count("denied"),
      failed: count("failed"),
      skipped: count("skipped"),
      inDoubt: count("in_doubt"),
      startedAt,
      finishedAt,
      durationMs: finishedAt - startedAt,
      costUsd: info.costUsd,
      filesRead: unique(steps.map((s) => s.filesRead)),
      filesWritten: unique(steps.map((s) => s.filesWritten)),
      domains: unique(steps.map((s) => s.domains)),
      commands: unique(steps.map((s) => s.commands)),
      denials: steps.filter((s) => s.decision === "denied").map((s) => ({ id: s.id, tool: s.tool, reason: s.reason }))
    }
  }
}

/**
 * The stable JSON form (`artana report --format json`):
 * `{ runId, status, steps: [{ id, tool, decision, reason, status, inputHash, outputHash, ... }], summary, ... }`.
 * Fields are only ever added, never renamed or removed.
 */
export const toJson = (report: Report) => ({
  runId: report.runId,
  status: report.status,
  steps: report.steps.map((s) => ({
    id: s.id,
    tool: s.tool,
    decision: s.decision,
    reason: s.reason,
    status: s.status,
    inputHash: s.inputHash,
    outputHash: s.outputHash,
    name: s.name ?? null,
    args: s.args,
    error: s.error,
    startedAt: s.startedAt,
    durationMs: s.durationMs,
    reconciled: s.reconciled,
    filesRead: s.filesRead,
    filesWritten: s.filesWritten,
    domains: s.domains,
    commands: s.commands,
    containment: s.containment
  })),
  summary: report.summary,
  tenantId: report.tenantId,
  onError: report.onError,
  planFile: report.planFile,
  policyFile: report.policyFile,
  error: report.error
})

const short = (hash: string | null) => (hash === null ? "-" : hash.slice(0, 12))

/** The console form: header, timeline table, what the run touched, denials, totals. */
export const render = (report: Report, s: T.Style): string => {
  const out: Array<string> = []
  const sum = report.summary
  out.push(`${T.icon(s, report.status)} ${s.bold(`run ${report.runId}`)}  ${report.status}  ${s.dim(`tenant ${report.tenantId}`)}`)
  if (report.planFile !== null) out.push(`  plan    ${report.planFile.file}  ${s.dim(`sha256 ${short(report.planFile.sha256)}`)}  on_error: ${report.onError}`)
  if (report.policyFile !== null) out.push(`  policy  ${report.policyFile.file}  ${s.dim(`sha256 ${short(report.policyFile.sha256)}`)}`)
  out.push(`  started ${T.timestamp(sum.startedAt)}  took ${T.duration(sum.durationMs)}  cost $${sum.costUsd.toFixed(6)}`)
  out.push("")
  const rows = report.steps.map((step) => [
    `${T.icon(s, step.status)} ${step.id}`,
    step.tool,
    step.decision === "denied" ? s.red(step.decision) : step.decision === "allowed" ? s.green(step.decision) : s.dim(step.decision),
    step.durationMs === null ? "-" : T.duration(step.durationMs),
    short(step.inputHash),
    short(step.outputHash),
    `${step.status === "ok" || step.status === "skipped" ? step.reason : `${step.reason}${step.error !== null && step.error !== step.reason ? ` — ${step.error}` : ""}`}${
      step.reconciled ? s.yellow(" (outcome settled by hand: artana reconcile)") : ""
    }`
  ])
  out.push(T.table(s, ["STEP", "TOOL", "DECISION", "TIME", "INPUT", "OUTPUT", "WHY"], rows, { right: [3] }))
  const touched: Array<[string, ReadonlyArray<string>]> = [
    ["files read", sum.filesRead],
    ["files written", sum.filesWritten],
    ["domains", sum.domains],
    ["commands", sum.commands]
  ]
  out.push("")
  for (const [label, list] of touched) out.push(`  ${label.padEnd(14)}${list.length === 0 ? s.dim("none") : list.join(", ")}`)
  if (sum.denials.length > 0) {
    out.push("")
    out.push(s.red(`  ${sum.denials.length} denial${sum.denials.length === 1 ? "" : "s"}:`))
    for (const d of sum.denials) out.push(`    ${d.id} (${d.tool}): ${d.reason}`)
  }
  const uncontained = report.steps.filter((step) => step.containment?.mechanism === "none")
  if (uncontained.length > 0) {
    out.push("")
    for (const step of uncontained) out.push(s.yellow(`  warning: ${step.id} ran uncontained (the policy says containment: none): the command saw the whole machine its user can see`))
  }
  if (report.error !== null) out.push("", s.red(`  run failed with ${report.error.tag}: ${report.error.message}`))
  out.push("")
  const parts = [`${sum.ok} ok`, `${sum.denied} denied`, `${sum.failed} failed`, `${sum.skipped} skipped`]
  if (sum.inDoubt > 0) parts.push(`${sum.inDoubt} in doubt`)
  out.push(`  ${sum.steps} steps: ${parts.join(", ")}`)
  return out.join("\n")
}
