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
import * as ReportSummary from "./internal/reportSummary.js"
import * as ReportSteps from "./internal/reportSteps.js"

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
  const tally = ReportSummary.make()
  const startedAt = first.timestamp
  let finishedAt = first.timestamp
  // The events of the step being read (its key), until the next step's begin.
  let open: { key: string; events: Array<Event.Event> } | undefined

  const close = (): ReadonlyArray<StepReport> => {
    if (open === undefined) return []
    const step = PlanRunner.loggedStep(open.key, open.events)
    open = undefined
    if (step === undefined) return []
    return [ReportSummary.add(tally, ReportSteps.fromLog(step, audit(step.events).get(step.key) ?? {}, planned.get(step.id)?.name))]
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
        for (const step of input.plan.steps) if (!tally.seen.has(step.id)) steps.push(ReportSummary.add(tally, ReportSteps.skipped(step)))
      }
      const failed = options.failed?.payload
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
          summary: ReportSummary.summary(tally, startedAt, finishedAt, info.costUsd)
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

/** What the console form's first lines say: the run, its plan and policy, when it started, how long it took, its cost. */
export interface Heading extends Run {
  readonly startedAt: number
  readonly durationMs: number
  readonly costUsd: number
}

export { render, renderEnding, renderHeading, renderSteps, uncontainedOf } from "./internal/reportRender.js"
