/** A report's console form (`artana report`, `show-run`): heading, timeline table, what the run touched, totals. */
import type { Ending, Heading, Report, StepReport } from "../Report.js"
import * as T from "./terminal.js"

const short = (hash: string | null) => (hash === null ? "-" : hash.slice(0, 12))

/** The console form's first lines (`render`'s, before the timeline). */
export const renderHeading = (h: Heading, s: T.Style): string => {
  const out: Array<string> = []
  out.push(`${T.icon(s, h.status)} ${s.bold(`run ${h.runId}`)}  ${h.status}  ${s.dim(`tenant ${h.tenantId}`)}`)
  if (h.planFile !== null) out.push(`  plan    ${h.planFile.file}  ${s.dim(`sha256 ${short(h.planFile.sha256)}`)}  on_error: ${h.onError}`)
  if (h.policyFile !== null) out.push(`  policy  ${h.policyFile.file}  ${s.dim(`sha256 ${short(h.policyFile.sha256)}`)}`)
  out.push(`  started ${T.timestamp(h.startedAt)}  took ${T.duration(h.durationMs)}  cost $${h.costUsd.toFixed(6)}`)
  out.push("")
  return out.join("\n")
}

/** Timeline rows as a table (`header`: with its header line; a streamed timeline prints it over the first rows only). */
export const renderSteps = (steps: ReadonlyArray<StepReport>, s: T.Style, options: { readonly header?: boolean } = {}): string => {
  const rows = steps.map((step) => [
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
  const table = T.table(s, ["STEP", "TOOL", "DECISION", "TIME", "INPUT", "OUTPUT", "WHY"], rows, { right: [3] })
  return options.header === false ? table.slice(table.indexOf("\n") + 1) : table
}

/**
 * The console form's last lines: what the run touched, its denials, the steps that ran uncontained (their ids), its
 * error, the counts.
 */
export const renderEnding = (ending: Ending, uncontained: ReadonlyArray<string>, s: T.Style): string => {
  const out: Array<string> = []
  const sum = ending.summary
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
  if (uncontained.length > 0) {
    out.push("")
    for (const id of uncontained) out.push(s.yellow(`  warning: ${id} ran uncontained (the policy says containment: none): the command saw the whole machine its user can see`))
  }
  if (ending.error !== null) out.push("", s.red(`  run failed with ${ending.error.tag}: ${ending.error.message}`))
  out.push("")
  const parts = [`${sum.ok} ok`, `${sum.denied} denied`, `${sum.failed} failed`, `${sum.skipped} skipped`]
  if (sum.inDoubt > 0) parts.push(`${sum.inDoubt} in doubt`)
  out.push(`  ${sum.steps} steps: ${parts.join(", ")}`)
  return out.join("\n")
}

/** The ids of the steps that ran uncontained (`containment: none`): the console form warns of each. */
export const uncontainedOf = (steps: ReadonlyArray<StepReport>): ReadonlyArray<string> =>
  steps.filter((step) => step.containment?.mechanism === "none").map((step) => step.id)

/** The console form: header, timeline table, what the run touched, denials, totals. */
export const render = (report: Report, s: T.Style): string =>
  [
    renderHeading({ ...report, startedAt: report.summary.startedAt, durationMs: report.summary.durationMs, costUsd: report.summary.costUsd }, s),
    renderSteps(report.steps, s),
    renderEnding(report, uncontainedOf(report.steps), s)
  ].join("\n")
