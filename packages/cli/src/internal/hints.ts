/**
 * The commands the CLI tells a person to run next, written out exactly: the run id, the step, and the `--tenant` and
 * `--db` the person used (a PostgreSQL URL with its password hidden), quoted for the shell.
 */
import type { Event } from "@artana/core"
import * as Schema from "effect/Schema"
import * as Plan from "../Plan.js"
import * as Database from "./database.js"

/** Where a command worked: its `--db` and `--tenant`. */
export interface Where {
  readonly db: string
  readonly tenant: string
}

const quote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`)

/** The `--tenant` and `--db` options a command needs to reach the same run (none for the defaults). */
export const options = (where: Where): string =>
  (where.tenant === "default" ? "" : ` --tenant ${quote(where.tenant)}`) +
  (where.db === "./artana.db" ? "" : ` --db ${quote(Database.describe(Database.parse(where.db)))}`)

/**
 * A command that reads on from where the last one stopped: `artana COMMAND [RUN] OPTIONS`, with the same `--tenant` and
 * `--db`, each option given once (`undefined` ones left out).
 */
export const readOn = (where: Where, command: string, run: string | undefined, flags: ReadonlyArray<readonly [string, string | number | undefined]>): string =>
  `artana ${command}${run === undefined ? "" : ` ${quote(run)}`}${flags.map(([flag, value]) => (value === undefined ? "" : ` ${flag} ${quote(String(value))}`)).join("")}${options(where)}`

/** What a person does about a step waiting for approval: its call, and the exact `artana approve` / `artana reject`. */
export const approval = (where: Where, pending: { readonly approvalId: string; readonly stepKey: string; readonly tool: string; readonly arguments: string }): string =>
  [
    `  step ${stepName(pending.stepKey)} (${pending.tool} ${pending.arguments.length > 120 ? `${pending.arguments.slice(0, 119)}…` : pending.arguments}) waits for approval:`,
    `  artana approve ${quote(pending.approvalId)}${options(where)} [--args JSON]`,
    `  artana reject ${quote(pending.approvalId)}${options(where)} --reason TEXT`
  ].join("\n")

/** A step as a person names it: a plan step's id, else the run's step key. */
export const stepName = (stepKey: string): string => Plan.stepIdOf(stepKey) ?? stepKey

/** `artana reconcile RUN --step ID (--completed JSON | --failed MESSAGE)`, for this run and step. */
export const reconcile = (where: Where, runId: string, stepKey: string, force = false): string =>
  `artana reconcile ${quote(runId)} --step ${quote(stepName(stepKey))}${options(where)}${force ? " --force" : ""} (--completed JSON | --failed MESSAGE)`

/** `artana run PLAN --policy POLICY --run-id RUN`: continues a plan run. */
export const continueRun = (where: Where, runId: string, plan = "PLAN", policy = "POLICY"): string =>
  `artana run ${quote(plan)} --policy ${quote(policy)} --run-id ${quote(runId)}${options(where)}`

/**
 * Where a run in `needs_reconciliation` waits (`root → child → …: step K (tool) in doubt`) and what a person does
 * about it: the exact `artana reconcile`, then continuing the run.
 */
export const waiting = (where: Where, runId: string, path: ReadonlyArray<Event.WaitingOn>, isPlan: boolean): { readonly where: string; readonly todo: string } => {
  const last = path[path.length - 1]
  const resume = isPlan ? continueRun(where, runId) : `resume ${runId} with the application that runs its workflow`
  if (last === undefined) return { where: `${runId}: the run it waited on was settled since`, todo: `continue it: ${resume}` }
  return {
    where: `${path.map((link) => link.runId).join(" → ")}: step ${stepName(last.stepKey)} (${last.tool}) in doubt`,
    todo: `settle it: ${reconcile(where, last.runId, last.stepKey)}, then ${resume}`
  }
}

/** The run waits for a person to settle a step in doubt: the command refuses to go on, and says how to settle it. */
export class RunNeedsReconciliation extends Schema.TaggedError<RunNeedsReconciliation>()("RunNeedsReconciliation", {
  runId: Schema.String,
  /** Where it waits (`Hints.waiting`). */
  where: Schema.String,
  todo: Schema.String
}) {
  override get message() {
    return `run ${this.runId} needs reconciliation (${this.where}); ${this.todo}`
  }
}
