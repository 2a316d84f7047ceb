/**
 * The `artana` command, on `@effect/cli`:
 *
 * ```
 * artana run PLAN --policy POLICY [--run-id ID]   run a plan under a policy
 * artana replay RUN [--plan PLAN]                  re-run a plan run over its log (no tool executes)
 * artana reconcile RUN --step ID (--completed JSON | --failed MESSAGE) [--force]
 *                                                  settle the step a crash left in doubt
 * artana signal RUN NAME [--payload JSON] [--id ID] deliver a durable message to a run (ctx.waitForSignal)
 * artana approvals [--run RUN] [--tool NAME] [--older-than AGE] [--limit N] [--after CURSOR]
 *                                                  the tool calls waiting for approval
 * artana approve ID [--args JSON] [--approver NAME] approve one (with edited arguments)
 * artana reject ID --reason TEXT [--approver NAME]  reject one
 * artana report RUN [--from SEQ] [--limit N]       timeline, decisions, files, domains, commands, denials, cost
 * artana list-runs [--status S] [--workflow W] [--since T] [--until T] [--limit N] [--after CURSOR] [--root RUN]
 * artana show-run RUN [--from SEQ] [--limit N]     a run, its lineage tree and its events
 * artana export RUN [--out FILE]                   the run's events as JSON lines, verified
 * artana verify RUN [--head SEQ:HASH]              check the run's hash chain
 * artana mcp pin --policy POLICY [--server NAME]   pin the tools the policy's MCP servers offer now
 * artana mcp serve --policy POLICY [--http HOST:PORT]  serve the policy's tools over MCP, every call a logged run
 * artana ui [--port N] [--host H] [--allow-actions] a local web inspector of the store's runs
 * artana fork RUN (--at SEQ | --step KEY) [--set STEP=JSON] [--id FORK]  a new run from a prefix of RUN's log
 * artana replay-test --workflows MODULE [--workflow NAME] [--since T] [--limit N]
 *                                                  replay stored runs against the current code, report divergences
 * artana versions [--workflow W] [--all-tenants]   runs per workflow version, and how many are in flight
 * artana import FILE...                            load exported runs into a store, each chain verified first
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
import * as ExitCode from "./ExitCode.js"
import * as Help from "./internal/help.js"
import * as Out from "./internal/output.js"
import * as T from "./internal/terminal.js"

// A command's module is loaded when that command runs: the store drivers, the sandbox and PostgreSQL's client are
// only loaded by the commands that use them (and `--help` loads none of this file: see bin.ts).
const PlanCommands = Effect.promise(() => import("./internal/planCommands.js"))
const ReadCommands = Effect.promise(() => import("./internal/readCommands.js"))
const SignalCommand = Effect.promise(() => import("./internal/signalCommand.js"))
const ApprovalCommands = Effect.promise(() => import("./internal/approvalCommands.js"))
const McpCommands = Effect.promise(() => import("./internal/mcpCommands.js"))
const McpServe = Effect.promise(() => import("./internal/mcpServe.js"))
const ForkCommand = Effect.promise(() => import("./internal/forkCommand.js"))

const db = Options.text("db").pipe(
  Options.withDescription(Help.common.db.description),
  Options.withFallbackConfig(Config.string("ARTANA_DB")),
  Options.withDefault("./artana.db")
)

const tenant = Options.text("tenant").pipe(
  Options.withDescription(Help.common.tenant.description),
  Options.withFallbackConfig(Config.string("ARTANA_TENANT")),
  Options.withDefault("default")
)

const format = Options.choice("format", ["console", "json"]).pipe(
  Options.withDescription(Help.common.format.description),
  Options.withDefault("console")
)

/** `--verbose`, or DEBUG set in the environment: an internal error's stack is printed too. */
const verbose = Options.boolean("verbose").pipe(
  Options.withDescription(Help.common.verbose.description),
  Options.map((flag) => flag || (process.env.DEBUG ?? "") !== "")
)

const runArg = Args.text({ name: "RUN" }).pipe(Args.withDescription(Help.option("report", "RUN")))

/** The HMAC key runs were hashed with, if any: from the environment only, never from the command line. */
const auditKey = Effect.map(Effect.orDie(Config.option(Config.redacted("ARTANA_AUDIT_KEY"))), Option.getOrUndefined)

const common = { db, tenant, format, verbose }

const described = (name: string) => Command.withDescription(Help.command(name).summary)

const run = Command.make(
  "run",
  {
    ...common,
    plan: Args.text({ name: "PLAN" }).pipe(Args.withDescription(Help.option("run", "PLAN"))),
    policy: Options.text("policy").pipe(Options.withDescription(Help.option("run", "--policy"))),
    runId: Options.text("run-id").pipe(
      Options.withDescription(Help.option("run", "--run-id")),
      Options.optional
    )
  },
  (a) => Effect.flatMap(Effect.zip(PlanCommands, auditKey), ([m, key]) => m.run({ ...a, runId: Option.getOrUndefined(a.runId), auditKey: key }))
).pipe(described("run"))

const replay = Command.make(
  "replay",
  {
    ...common,
    run: runArg,
    plan: Options.text("plan").pipe(Options.withDescription(Help.option("replay", "--plan")), Options.optional)
  },
  (a) => Effect.flatMap(Effect.zip(PlanCommands, auditKey), ([m, key]) => m.replay({ ...a, plan: Option.getOrUndefined(a.plan), auditKey: key }))
).pipe(described("replay"))

const reconcile = Command.make(
  "reconcile",
  {
    ...common,
    run: runArg,
    step: Options.text("step").pipe(Options.withDescription(Help.option("reconcile", "--step"))),
    completed: Options.text("completed").pipe(
      Options.withDescription(Help.option("reconcile", "--completed")),
      Options.optional
    ),
    failed: Options.text("failed").pipe(Options.withDescription(Help.option("reconcile", "--failed")), Options.optional),
    force: Options.boolean("force").pipe(
      Options.withDescription(Help.option("reconcile", "--force"))
    )
  },
  (a) =>
    Effect.flatMap(Effect.zip(PlanCommands, auditKey), ([m, key]) =>
      m.reconcile({ ...a, completed: Option.getOrUndefined(a.completed), failed: Option.getOrUndefined(a.failed), auditKey: key }))
).pipe(described("reconcile"))


const approvals = Command.make(
  "approvals",
  {
    ...common,
    run: Options.text("run").pipe(Options.withDescription(Help.option("approvals", "--run")), Options.optional),
    tool: Options.text("tool").pipe(Options.withDescription(Help.option("approvals", "--tool")), Options.optional),
    olderThan: Options.text("older-than").pipe(Options.withDescription(Help.option("approvals", "--older-than")), Options.optional),
    limit: Options.integer("limit").pipe(Options.withDescription(Help.option("approvals", "--limit")), Options.withDefault(50)),
    after: Options.text("after").pipe(Options.withDescription(Help.option("approvals", "--after CURSOR")), Options.optional)
  },
  (a) =>
    Effect.flatMap(Effect.zip(ApprovalCommands, auditKey), ([m, key]) =>
      m.approvals({
        ...a,
        run: Option.getOrUndefined(a.run),
        tool: Option.getOrUndefined(a.tool),
        olderThan: Option.getOrUndefined(a.olderThan),
        after: Option.getOrUndefined(a.after),
        auditKey: key
      }))
).pipe(described("approvals"))

const approvalArg = (command: string) => Args.text({ name: "ID" }).pipe(Args.withDescription(Help.option(command, "ID")))
const approver = (command: string) => Options.text("approver").pipe(Options.withDescription(Help.option(command, "--approver")), Options.optional)

const approve = Command.make(
  "approve",
  {
    ...common,
    id: approvalArg("approve"),
    args: Options.text("args").pipe(Options.withDescription(Help.option("approve", "--args")), Options.optional),
    approver: approver("approve")
  },
  (a) =>
    Effect.flatMap(Effect.zip(ApprovalCommands, auditKey), ([m, key]) =>
      m.approve({ ...a, args: Option.getOrUndefined(a.args), approver: Option.getOrUndefined(a.approver), auditKey: key }))
).pipe(described("approve"))

const reject = Command.make(
  "reject",
  {
    ...common,
    id: approvalArg("reject"),
    reason: Options.text("reason").pipe(Options.withDescription(Help.option("reject", "--reason"))),
    approver: approver("reject")
  },
  (a) => Effect.flatMap(Effect.zip(ApprovalCommands, auditKey), ([m, key]) => m.reject({ ...a, approver: Option.getOrUndefined(a.approver), auditKey: key }))
).pipe(described("reject"))

const signal = Command.make(
  "signal",
  {
    ...common,
    run: runArg,
    name: Args.text({ name: "NAME" }).pipe(Args.withDescription(Help.option("signal", "NAME"))),
    payload: Options.text("payload").pipe(Options.withDescription(Help.option("signal", "--payload JSON")), Options.optional),
    id: Options.text("id").pipe(Options.withDescription(Help.option("signal", "--id ID")), Options.optional)
  },
  (a) => Effect.flatMap(Effect.zip(SignalCommand, auditKey), ([m, key]) => m.signal({ ...a, payload: Option.getOrUndefined(a.payload), id: Option.getOrUndefined(a.id), auditKey: key }))
).pipe(described("signal"))

const statuses = ["running", "paused", "completed", "failed", "needs_reconciliation", "continued"] as const

const listRuns = Command.make(
  "list-runs",
  {
    ...common,
    status: Options.choice("status", statuses).pipe(Options.withDescription(Help.option("list-runs", "--status")), Options.optional),
    workflow: Options.text("workflow").pipe(Options.withDescription(Help.option("list-runs", "--workflow")), Options.optional),
    limit: Options.integer("limit").pipe(Options.withDescription(Help.option("list-runs", "--limit")), Options.withDefault(50)),
    after: Options.text("after").pipe(Options.withDescription(Help.option("list-runs", "--after CURSOR")), Options.optional),
    since: Options.text("since").pipe(Options.withDescription(Help.option("list-runs", "--since TIME")), Options.optional),
    until: Options.text("until").pipe(Options.withDescription(Help.option("list-runs", "--until TIME")), Options.optional),
    version: Options.text("version").pipe(Options.withDescription(Help.option("list-runs", "--version V")), Options.optional),
    root: Options.text("root").pipe(Options.withDescription(Help.option("list-runs", "--root RUN")), Options.optional)
  },
  (a) =>
    Effect.flatMap(Effect.zip(ReadCommands, auditKey), ([m, key]) =>
      m.listRuns({
        ...a,
        status: Option.getOrUndefined(a.status),
        workflow: Option.getOrUndefined(a.workflow),
        after: Option.getOrUndefined(a.after),
        since: Option.getOrUndefined(a.since),
        until: Option.getOrUndefined(a.until),
        version: Option.getOrUndefined(a.version),
        root: Option.getOrUndefined(a.root),
        auditKey: key
      }))
).pipe(described("list-runs"))

/** `--from SEQ --limit N`: the stretch of a run's log a command prints. */
const page = (command: string) => ({
  from: Options.integer("from").pipe(Options.withDescription(Help.option(command, "--from SEQ")), Options.optional),
  limit: Options.integer("limit").pipe(Options.withDescription(Help.option(command, "--limit N")), Options.optional)
})

const report = Command.make(
  "report",
  { ...common, run: runArg, ...page("report") },
  (a) =>
    Effect.flatMap(Effect.zip(ReadCommands, auditKey), ([m, key]) =>
      m.report({ ...a, from: Option.getOrUndefined(a.from), limit: Option.getOrUndefined(a.limit), auditKey: key }))
).pipe(described("report"))

const showRun = Command.make(
  "show-run",
  { ...common, run: runArg, ...page("show-run") },
  (a) =>
    Effect.flatMap(Effect.zip(ReadCommands, auditKey), ([m, key]) =>
      m.showRun({ ...a, from: Option.getOrUndefined(a.from), limit: Option.getOrUndefined(a.limit), auditKey: key }))
).pipe(described("show-run"))

const ExportCommand = Effect.promise(() => import("./internal/exportCommand.js"))

const exportRun = Command.make(
  "export",
  {
    db,
    tenant,
    verbose,
    run: runArg,
    format: Options.choice("format", ["jsonl"]).pipe(Options.withDescription(Help.option("export", "--format jsonl")), Options.withDefault("jsonl")),
    out: Options.text("out").pipe(Options.withDescription(Help.option("export", "--out FILE")), Options.optional)
  },
  (a) => Effect.flatMap(Effect.zip(ExportCommand, auditKey), ([m, key]) => m.exportRun({ ...a, out: Option.getOrUndefined(a.out), auditKey: key }))
).pipe(described("export"))

const verify = Command.make(
  "verify",
  {
    ...common,
    run: runArg,
    head: Options.text("head").pipe(Options.withDescription(Help.option("verify", "--head")), Options.optional)
  },
  (a) => Effect.flatMap(Effect.zip(ReadCommands, auditKey), ([m, key]) => m.verify({ ...a, head: Option.getOrUndefined(a.head), auditKey: key }))
).pipe(described("verify"))

const mcpPin = Command.make(
  "pin",
  {
    format,
    verbose,
    policy: Options.text("policy").pipe(Options.withDescription(Help.option("mcp", "--policy"))),
    server: Options.text("server").pipe(Options.withDescription(Help.option("mcp", "--server")), Options.optional)
  },
  (a) => Effect.flatMap(McpCommands, (m) => m.pin({ ...a, server: Option.getOrUndefined(a.server) }))
).pipe(described("mcp"))

const mcpServe = Command.make(
  "serve",
  {
    ...common,
    policy: Options.text("policy").pipe(Options.withDescription(Help.option("mcp", "--policy"))),
    http: Options.text("http").pipe(Options.withDescription(Help.option("mcp", "--http")), Options.optional)
  },
  (a) => Effect.flatMap(Effect.zip(McpServe, auditKey), ([m, key]) => m.serve({ ...a, http: Option.getOrUndefined(a.http), auditKey: key }))
).pipe(described("mcp"))

const fork = Command.make(
  "fork",
  {
    ...common,
    run: runArg,
    at: Options.integer("at").pipe(Options.withDescription(Help.option("fork", "--at")), Options.optional),
    step: Options.text("step").pipe(Options.withDescription(Help.option("fork", "--step")), Options.optional),
    set: Options.text("set").pipe(Options.withDescription(Help.option("fork", "--set")), Options.repeated),
    id: Options.text("id").pipe(Options.withDescription(Help.option("fork", "--id")), Options.optional)
  },
  (a) =>
    Effect.flatMap(Effect.zip(ForkCommand, auditKey), ([m, key]) =>
      m.fork({ ...a, at: Option.getOrUndefined(a.at), step: Option.getOrUndefined(a.step), id: Option.getOrUndefined(a.id), auditKey: key }))
).pipe(described("fork"))

const mcp = Command.make("mcp").pipe(described("mcp"), Command.withSubcommands([mcpPin, mcpServe]))

const UiCommand = Effect.promise(() => import("./internal/ui/command.js"))

const ui = Command.make(
  "ui",
  {
    ...common,
    port: Options.integer("port").pipe(Options.withDescription(Help.option("ui", "--port")), Options.withDefault(8484)),
    host: Options.text("host").pipe(Options.withDescription(Help.option("ui", "--host")), Options.withDefault("127.0.0.1")),
    allowActions: Options.boolean("allow-actions").pipe(Options.withDescription(Help.option("ui", "--allow-actions"))),
    approver: Options.text("approver").pipe(Options.withDescription(Help.option("ui", "--approver")), Options.optional)
  },
  (a) => Effect.flatMap(Effect.zip(UiCommand, auditKey), ([m, key]) => m.ui({ ...a, approver: Option.getOrUndefined(a.approver), auditKey: key }))
).pipe(described("ui"))
// Versioning (issue 19): replay-test, versions, import.
const VersionCommands = Effect.promise(() => import("./internal/versionCommands.js"))

const replayTest = Command.make(
  "replay-test",
  {
    ...common,
    workflows: Options.text("workflows").pipe(Options.withDescription(Help.option("replay-test", "--workflows MODULE"))),
    workflow: Options.text("workflow").pipe(Options.withDescription(Help.option("replay-test", "--workflow NAME")), Options.optional),
    since: Options.text("since").pipe(Options.withDescription(Help.option("replay-test", "--since TIME")), Options.optional),
    limit: Options.integer("limit").pipe(Options.withDescription(Help.option("replay-test", "--limit N")), Options.withDefault(100))
  },
  (a) =>
    Effect.flatMap(Effect.zip(VersionCommands, auditKey), ([m, key]) =>
      m.replayTest({ ...a, workflow: Option.getOrUndefined(a.workflow), since: Option.getOrUndefined(a.since), auditKey: key }))
).pipe(described("replay-test"))

const versions = Command.make(
  "versions",
  {
    ...common,
    workflow: Options.text("workflow").pipe(Options.withDescription(Help.option("versions", "--workflow W")), Options.optional),
    allTenants: Options.boolean("all-tenants").pipe(Options.withDescription(Help.option("versions", "--all-tenants")))
  },
  (a) => Effect.flatMap(Effect.zip(VersionCommands, auditKey), ([m, key]) => m.versions({ ...a, workflow: Option.getOrUndefined(a.workflow), auditKey: key }))
).pipe(described("versions"))

const importRuns = Command.make(
  "import",
  { ...common, files: Args.text({ name: "FILE" }).pipe(Args.withDescription(Help.option("import", "FILE")), Args.atLeast(1)) },
  (a) => Effect.flatMap(Effect.zip(VersionCommands, auditKey), ([m, key]) => m.importRuns({ ...a, auditKey: key }))
).pipe(described("import"))

/** The command tree. */
export const command = Command.make("artana").pipe(
  Command.withDescription("Artana: run tool plans under a deny-by-default policy, replay, report, inspect and verify runs."),
  Command.withSubcommands([run, replay, reconcile, signal, approvals, approve, reject, report, listRuns, showRun, exportRun, verify, mcp, ui, fork, replayTest, versions, importRuns])
)

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

/** `Run \`artana report --help\``: where to look after a command line that does not parse. */
const usageHint = (argv: ReadonlyArray<string>) => {
  const named = Help.commands.find((c) => c.name === argv[2])
  return Out.stderr(`see \`artana ${named === undefined ? "" : `${named.name} `}--help\` for the usage`)
}

/**
 * Runs the command line (`process.argv`) and returns the exit code: 0, a command's code (`ExitCode`), or 2 for a
 * command line that does not parse (its message already printed by @effect/cli, then where to find the usage).
 * `--help` prints Artana's own help (`internal/help.ts`), not @effect/cli's.
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<number, never, CliApp.CliApp.Environment> => {
  const help = Help.requested(argv.slice(2), Out.outStyle(), Help.version())
  if (help !== undefined) return Effect.as(Out.stdout(help), ExitCode.Ok)
  const stray = Help.notACommand(argv[2])
  if (stray !== undefined) return Effect.as(Effect.zipRight(Out.stderr(stray), usageHint(argv)), ExitCode.BadInput)
  return Command.run(command, { name: "artana", version: Help.version() })(argv).pipe(
    plainWhereNoColors,
    Effect.as(ExitCode.Ok),
    Effect.catchAll((error) =>
      error instanceof Out.Done
        ? Effect.succeed(error.code)
        : ValidationError.isValidationError(error)
        ? Effect.as(usageHint(argv), ExitCode.BadInput)
        : Effect.succeed(ExitCode.Internal)
    ),
    Effect.catchAllDefect((defect) => Effect.as(Out.stderr(Out.internalError(defect, Out.verboseIn(argv))), ExitCode.Internal))
  )
}
