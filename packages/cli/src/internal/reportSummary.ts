/**
 * A report's summary, added up as its steps go by: counts by status, the distinct files, domains and commands the
 * steps touched, the denials, and which steps were seen (the plan's others were never reached).
 */
import type { Status, StepReport, Summary } from "../Report.js"

export interface Tally {
  readonly seen: Set<string>
  readonly counts: Record<Status, number>
  readonly filesRead: Set<string>
  readonly filesWritten: Set<string>
  readonly domains: Set<string>
  readonly commands: Set<string>
  readonly denials: Array<Summary["denials"][number]>
}

export const make = (): Tally => ({
  seen: new Set(),
  counts: { ok: 0, denied: 0, failed: 0, skipped: 0, in_doubt: 0, awaiting_approval: 0 },
  filesRead: new Set(),
  filesWritten: new Set(),
  domains: new Set(),
  commands: new Set(),
  denials: []
})

/** Counts `step` in `t`, and gives it back. */
export const add = (t: Tally, step: StepReport): StepReport => {
  t.seen.add(step.id)
  t.counts[step.status]++
  for (const f of step.filesRead) t.filesRead.add(f)
  for (const f of step.filesWritten) t.filesWritten.add(f)
  for (const d of step.domains) t.domains.add(d)
  for (const c of step.commands) t.commands.add(c)
  if (step.decision === "denied") t.denials.push({ id: step.id, tool: step.tool, reason: step.reason })
  return step
}

/** The summary of the steps counted, for a run that went from `startedAt` to `finishedAt` and cost `costUsd`. */
export const summary = (t: Tally, startedAt: number, finishedAt: number, costUsd: number): Summary => {
  const sorted = (set: ReadonlySet<string>) => [...set].sort()
  const c = t.counts
  return {
    steps: c.ok + c.denied + c.failed + c.skipped + c.in_doubt,
    ok: c.ok,
    denied: c.denied,
    failed: c.failed,
    skipped: c.skipped,
    inDoubt: c.in_doubt,
    startedAt,
    finishedAt,
    durationMs: finishedAt - startedAt,
    costUsd,
    filesRead: sorted(t.filesRead),
    filesWritten: sorted(t.filesWritten),
    domains: sorted(t.domains),
    commands: sorted(t.commands),
    denials: t.denials
  }
}
