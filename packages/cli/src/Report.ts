/**
 * The report of a plan run, read from its log: a timeline of its steps (each allowed or denied and why, its
 * status, input and output hashes, duration), what it touched (files read and written, domains, commands), its
 * denials, duration and cost. `toJson` is the stable JSON shape (`artana report --format json`), `render` the
 * console form.
 *
 * @since 0.1.0
 */
import type { Event, Json } from "@artana/core"
import * as Plan from "./Plan.js"
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

/** The run a report is of: its id, tenant and status, its plan and policy as its log records them. */
export interface Run {
  readonly runId: string
  readonly tenantId: string
  readonly status: Event.RunStatus
  readonly onError: Plan.OnError | null
  readonly planFile: PlanRunner.FileRecord | null
  readonly policyFile: { readonly file: string; readonly sha256: string } | null
}

export interface Report extends Run {
  /** Why the run failed, as logged. */
  readonly error: { readonly tag: string; readonly message: string } | null
  readonly steps: ReadonlyArray<StepReport>
  readonly summary: Summary
}

const statusOf = (produced: PlanRunner.Produced | undefined): Status =>
  produced === undefined ? "in_doubt" : PlanRunner.stepStatusOf(produced)

/** Options of `make` and `builder`. */
export interface MakeOptions {
  /**
   * The events are a stretch of the log (after its first event, which holds the plan): the report holds the steps
   * logged in it, and its summary counts those; the plan's other steps are left out rather than shown as skipped.
   */
  readonly stretch?: boolean | undefined
}

/** A report without its steps: what `builder` gives once every event was pushed (the steps went by one by one). */
export type Ending = Omit<Report, "steps">

/**
 * A report built as a run's events stream by: `push` the events of the run (its first event, which holds the plan,
 * then the rest in log order, a page at a time), each call giving the steps it completed (a step is complete once the
 * next step's events begin); `finish` gives the steps still open (in doubt), the plan's steps never reached
 * (`skipped`, unless the events are a stretch), and the summary. Memory holds one step's events and the summary
 * (counts, the distinct files, domains and commands, the denials), however long the run. `make` is this over an array.
 */
export interface Builder {
  readonly push: (events: ReadonlyArray<Event.Event>) => ReadonlyArray<StepReport>
  readonly finish: () => { readonly steps: ReadonlyArray<StepReport>; readonly ending: Ending }
}

/**
 * Starts the report of a plan run from its row and its first event (a `RunStarted` of a plan run; anything else is
 * `NotAPlanRun`). `failed`: the run's `RunFailed` event, when it failed (the reason the report names).
 */
export const builder = (
  info: Event.RunInfo,
  first: Event.Event | undefined,
  audit: AuditReader = () => new Map(),
  options: MakeOptions & { readonly failed?: Event.Event | undefined } = {}
): Builder | PlanRunner.NotAPlanRun => {
  const input = PlanRunner.loggedInput(first === undefined ? [] : [first])
  if (input === undefined || first === undefined) return new PlanRunner.NotAPlanRun({ runId: info.runId, workflow: info.workflow })
  const planned = new Map(input.plan.steps.map((step) => [step.id, step]))
  const seen = new Set<string>()
  const counts: Record<Status, number> = { ok: 0, denied: 0, failed: 0, skipped: 0, in_doubt: 0, awaiting_approval: 0 }
  const touched = { filesRead: new Set<string>(), filesWritten: new Set<string>(), domains: new Set<string>(), commands: new Set<string>() }
  const denials: Array<{ readonly id: string; readonly tool: string; readonly reason: string }> = []
  const startedAt = first.timestamp
  let finishedAt = first.timestamp
  // The events of the step being read (its key), until the next step's begin.
  let open: { key: string; events: Array<Event.Event> } | undefined

  const counted = (step: StepReport): StepReport => {
    seen.add(step.id)
    counts[step.status]++
    for (const f of step.filesRead) touched.filesRead.add(f)
    for (const f of step.filesWritten) touched.filesWritten.add(f)
    for (const d of step.domains) touched.domains.add(d)
    for (const c of step.commands) touched.commands.add(c)
    if (step.decision === "denied") denials.push({ id: step.id, tool: step.tool, reason: step.reason })
    return step
  }

  const report = (step: PlanRunner.LoggedStep): StepReport => {
    const a = audit(step.events).get(step.key) ?? {}
    const status = step.awaitingApproval === true ? "awaiting_approval" : statusOf(step.produced)
    const deniedBy = step.denial === undefined ? undefined : step.denial.middleware ?? (step.denial.capability === undefined ? undefined : `capability ${step.denial.capability}`)
    // The kernel refuses an unknown tool before any policy sees it; everything else passed the policy or was denied.
    const unknown = step.produced !== undefined && !step.produced.ok && step.produced.kind === "unknown_tool"
    const decision: Decision = a.decision ?? (status === "denied" ? "denied" : unknown ? "none" : "allowed")
    const reason = a.reason ??
      (step.denial !== undefined
        ? `${step.denial.reason}${deniedBy === undefined ? "" : ` (${deniedBy})`}`
        : decision === "allowed" ? "no rule denied the call" : "")
    return counted({
      id: step.id,
      // Steps the log holds that the plan does not list (a log written by another version of the plan) have no name.
      name: planned.get(step.id)?.name,
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
    })
  }

  const close = (): ReadonlyArray<StepReport> => {
    if (open === undefined) return []
    const step = PlanRunner.loggedStep(open.key, open.events)
    open = undefined
    return step === undefined ? [] : [report(step)]
  }

  return {
    push: (events) => {
      const done: Array<StepReport> = []
      for (const event of events) {
        if (event.seq === first.seq) continue
        finishedAt = event.timestamp
        if (Plan.stepIdOf(event.stepKey) === undefined) continue
        if (open !== undefined && open.key !== event.stepKey) done.push(...close())
        if (open === undefined) open = { key: event.stepKey, events: [] }
        open.events.push(event)
      }
      return done
    },
    finish: () => {
      const steps = [...close()]
      if (options.stretch !== true) {
        for (const step of input.plan.steps) {
          if (seen.has(step.id)) continue
          steps.push(counted({
            id: step.id, name: step.name, tool: step.tool, decision: "none", reason: "not reached: the run stopped before this step", status: "skipped",
            inputHash: null, outputHash: null, args: null, startedAt: null, durationMs: null, error: null, reconciled: false,
            filesRead: [], filesWritten: [], domains: [], commands: [], containment: null
          }))
        }
      }
      const failed = options.failed?.payload
      const sorted = (set: ReadonlySet<string>) => [...set].sort()
      const total = counts.ok + counts.denied + counts.failed + counts.skipped + counts.in_doubt
      return {
        steps,
        ending: {
          runId: info.runId,
          tenantId: info.tenantId,
          status: info.status,
          onError: input.plan.onError,
          planFile: input.planFile ?? null,
          policyFile: input.policy === undefined ? null : { file: input.policy.file, sha256: input.policy.sha256 },
          error: failed?._tag === "RunFailed" ? { tag: failed.errorTag, message: failed.error } : null,
          summary: {
            steps: total,
            ok: counts.ok,
            denied: counts.denied,
            failed: counts.failed,
            skipped: counts.skipped,
            inDoubt: counts.in_doubt,
            startedAt,
            finishedAt,
            durationMs: finishedAt - startedAt,
            costUsd: info.costUsd,
            filesRead: sorted(touched.filesRead),
            filesWritten: sorted(touched.filesWritten),
            domains: sorted(touched.domains),
            commands: sorted(touched.commands),
            denials
          }
        }
      }
    }
  }
}

/**
 * Builds the report of a plan run from its row and events (its first event, then the rest in log order). Fails
 * (returns a reason) for another workflow's run. Steps are listed in log order (a plan runs in its order), then the
 * plan's steps the run never reached.
 */
export const make = (
  info: Event.RunInfo,
  events: ReadonlyArray<Event.Event>,
  audit: AuditReader = () => new Map(),
  options: MakeOptions = {}
): Report | PlanRunner.NotAPlanRun => {
  const failed = [...events].reverse().find((e) => e.payload._tag === "RunFailed")
  const built = builder(info, events[0], audit, { ...options, failed })
  if (built instanceof PlanRunner.NotAPlanRun) return built
  const steps = [...built.push(events)]
  const { steps: rest, ending } = built.finish()
  return { ...ending, steps: [...steps, ...rest] }
}

/** One step in the stable JSON form (`toJson`'s `steps`). */
export const stepJson = (s: StepReport) => ({
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
})

/** The stable JSON form of a report without its steps (`toJson` is this with `steps` after `status`). */
export const endingJson = (ending: Ending) => ({
  runId: ending.runId,
  status: ending.status,
  summary: ending.summary,
  tenantId: ending.tenantId,
  onError: ending.onError,
  planFile: ending.planFile,
  policyFile: ending.policyFile,
  error: ending.error
})

/**
 * The stable JSON form (`artana report --format json`):
 * `{ runId, status, steps: [{ id, tool, decision, reason, status, inputHash, outputHash, ... }], summary, ... }`.
 * Fields are only ever added, never renamed or removed.
 */
export const toJson = (report: Report) => {
  const { runId, status, ...rest } = endingJson(report)
  return { runId, status, steps: report.steps.map(stepJson), ...rest }
}

const short = (hash: string | null) => (hash === null ? "-" : hash.slice(0, 12))

/** What the console form's first lines say: the run, its plan and policy, when it started, how long it took, its cost. */
export interface Heading extends Run {
  readonly startedAt: number
  readonly durationMs: number
  readonly costUsd: number
}

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
