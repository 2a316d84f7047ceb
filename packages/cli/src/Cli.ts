/**
 * The `artana` command, on `@effect/cli`:
 *
 * ```
 * artana run PLAN --policy POLICY [--run-id ID]   run a plan under a policy
 * artana replay RUN [--plan PLAN]                  re-run a plan run over its log (no tool executes)
 * artana reconcile RUN --step ID (--completed JSON | --failed MESSAGE) [--force]
 *                                                  settle the step a crash left in doubt
 * artana report RUN                                timeline, decisions, files, domains, commands, denials, cost
 * artana list-runs [--status S] [--workflow W] [--limit N]
 * artana show-run RUN                              a run, its lineage tree and its events
 * artana verify RUN [--head SEQ:HASH]              check the run's hash chain
 * ```
 *
 * Every command takes `--db FILE|postgres://URL` (default `ARTANA_DB`, else `./artana.db`), `--tenant ID` (default
 * `ARTANA_TENANT`, else `default`) and `--format console|json`. `main` runs it and returns the exit code
 * (`ExitCode`).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import type * as CliApp from "@effect/cli/CliApp"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as ExitCode from "./ExitCode.js"
import * as Out from "./internal/output.js"
import * as PlanCommands from "./internal/planCommands.js"
import * as T from "./internal/terminal.js"
import * as ReadCommands from "./internal/readCommands.js"

const db = Options.text("db").pipe(
  Options.withDescription("the store: a SQLite file, or a postgres:// URL (default: $ARTANA_DB, else ./artana.db)"),
  Options.withFallbackConfig(Config.string("ARTANA_DB")),
  Options.withDefault("./artana.db")
)

const tenant = Options.text("tenant").pipe(
  Options.withDescription("the tenant whose runs to read and write (default: $ARTANA_TENANT, else \"default\")"),
  Options.withFallbackConfig(Config.string("ARTANA_TENANT")),
  Options.withDefault("default")
)

const format = Options.choice("format", ["console", "json"]).pipe(
  Options.withDescription("console: for people (colours on a terminal only); json: one stable JSON document on stdout"),
  Options.withDefault("console")
)

const runArg = Args.text({ name: "RUN" }).pipe(Args.withDescription("the run id"))

/** The HMAC key runs were hashed with, if any: from the environment only, never from the command line. */
const auditKey = Effect.map(Effect.orDie(Config.option(Config.redacted("ARTANA_AUDIT_KEY"))), Option.getOrUndefined)

const common = { db, tenant, format }

const run = Command.make(
  "run",
  {
    ...common,
    plan: Args.text({ name: "PLAN" }).pipe(Args.withDescription("the plan file (YAML)")),
    policy: Options.text("policy").pipe(Options.withDescription("the policy file (YAML); paths in it are relative to its folder")),
    runId: Options.text("run-id").pipe(
      Options.withDescription("the run's id (default: a new UUID); an existing id continues that run, if its plan is the same"),
      Options.optional
    )
  },
  (a) => Effect.flatMap(auditKey, (key) => PlanCommands.run({ ...a, runId: Option.getOrUndefined(a.runId), auditKey: key }))
).pipe(Command.withDescription("Run a plan under a policy: every step is a logged, hashed tool step of a new run."))

const replay = Command.make(
  "replay",
  {
    ...common,
    run: runArg,
    plan: Options.text("plan").pipe(Options.withDescription("a plan file that must match the log (default: the plan the run logged)"), Options.optional)
  },
  (a) => Effect.flatMap(auditKey, (key) => PlanCommands.replay({ ...a, plan: Option.getOrUndefined(a.plan), auditKey: key }))
).pipe(Command.withDescription("Replay a finished plan run from its log: no tool executes; output hashes must equal the logged ones."))

const reconcile = Command.make(
  "reconcile",
  {
    ...common,
    run: runArg,
    step: Options.text("step").pipe(Options.withDescription("the step in doubt: a plan step's id (or a run's step key), as `artana report` shows it")),
    completed: Options.text("completed").pipe(
      Options.withDescription("the call happened: its result, as JSON (a plan step's result must be one its tool returns)"),
      Options.optional
    ),
    failed: Options.text("failed").pipe(Options.withDescription("the call did not happen, or failed: why"), Options.optional),
    force: Options.boolean("force").pipe(
      Options.withDescription("settle it although the call may still be running (its tool's timeout has not passed since it was requested, or a worker holds its task): only when you know it has stopped")
    )
  },
  (a) =>
    Effect.flatMap(auditKey, (key) =>
      PlanCommands.reconcile({ ...a, completed: Option.getOrUndefined(a.completed), failed: Option.getOrUndefined(a.failed), auditKey: key }))
).pipe(Command.withDescription("Settle the step a crash left in doubt (needs_reconciliation), after checking what really happened; `run --run-id` then continues the plan."))

const report = Command.make("report", { ...common, run: runArg }, (a) => Effect.flatMap(auditKey, (key) => ReadCommands.report({ ...a, auditKey: key }))).pipe(
  Command.withDescription("Report a plan run: timeline, each call allowed or denied and why, files, domains, commands, denials, duration, cost.")
)

const statuses = ["running", "paused", "completed", "failed", "needs_reconciliation"] as const

const listRuns = Command.make(
  "list-runs",
  {
    ...common,
    status: Options.choice("status", statuses).pipe(Options.withDescription("only runs with this status"), Options.optional),
    workflow: Options.text("workflow").pipe(Options.withDescription("only runs of this workflow (plan runs: artana.plan)"), Options.optional),
    limit: Options.integer("limit").pipe(Options.withDescription("at most this many runs, newest first"), Options.withDefault(50))
  },
  (a) =>
    Effect.flatMap(auditKey, (key) =>
      ReadCommands.listRuns({ ...a, status: Option.getOrUndefined(a.status), workflow: Option.getOrUndefined(a.workflow), auditKey: key }))
).pipe(Command.withDescription("List the tenant's runs, newest first."))

const showRun = Command.make("show-run", { ...common, run: runArg }, (a) => Effect.flatMap(auditKey, (key) => ReadCommands.showRun({ ...a, auditKey: key }))).pipe(
  Command.withDescription("Show a run: its record, its lineage tree (parent and child runs) and its events.")
)

const verify = Command.make(
  "verify",
  {
    ...common,
    run: runArg,
    head: Options.text("head").pipe(Options.withDescription("a head exported earlier, SEQ:HASH, that the chain must still contain"), Options.optional)
  },
  (a) => Effect.flatMap(auditKey, (key) => ReadCommands.verify({ ...a, head: Option.getOrUndefined(a.head), auditKey: key }))
).pipe(Command.withDescription("Verify a run's hash chain (with ARTANA_AUDIT_KEY when the log was written with one)."))

/** The command tree. */
export const command = Command.make("artana").pipe(
  Command.withDescription("Artana: run tool plans under a deny-by-default policy, replay, report and verify runs."),
  Command.withSubcommands([run, replay, reconcile, report, listRuns, showRun, verify])
)

const version = (): string => {
  try {
    const pkg: unknown = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8"))
    return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string" ? pkg.version : "0.0.0"
  } catch {
    return "0.0.0"
  }
}

const unstyled = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? T.strip(a) : a))

/** @effect/cli styles its help and usage errors always: without a terminal (or with NO_COLOR) they print plain. */
const plainWhereNoColors = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.console, (console) => {
    const out = T.colorsFor(process.stdout, process.env)
    const err = T.colorsFor(process.stderr, process.env)
    if (out && err) return self
    return Effect.withConsole(self, {
      ...console,
      log: (...args: ReadonlyArray<unknown>) => console.log(...(out ? args : unstyled(args))),
      error: (...args: ReadonlyArray<unknown>) => console.error(...(err ? args : unstyled(args)))
    })
  })

/**
 * Runs the command line (`process.argv`) and returns the exit code: 0, a command's code (`ExitCode`), or 2 for a
 * command line that does not parse (its message already printed by @effect/cli).
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<number, never, CliApp.CliApp.Environment> =>
  Command.run(command, { name: "artana", version: version() })(argv).pipe(
    plainWhereNoColors,
    Effect.as(ExitCode.Ok),
    Effect.catchAll((error) => Effect.succeed(error instanceof Out.Done ? error.code : ValidationError.isValidationError(error) ? ExitCode.BadInput : ExitCode.Internal)),
    Effect.catchAllDefect((defect) => Effect.as(Out.stderr(`internal error: ${String(defect)}`), ExitCode.Internal))
  )
