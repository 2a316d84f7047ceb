/**
 * What `artana --help` and `artana COMMAND --help` print: the commands, their options, examples and exit codes, in
 * one place. `Cli.ts` takes its descriptions from here too.
 *
 * This module imports nothing heavy (no Effect, no store, no sandbox): `bin.ts` answers `--help` and `--version`
 * with it alone, so help starts about as fast as Node itself.
 */
import * as fs from "node:fs"
import * as ExitCode from "../ExitCode.js"
import type * as T from "./terminal.js"

export interface OptionDoc {
  /** `--db FILE|postgres://URL` */
  readonly flag: string
  readonly description: string
}

export interface CommandDoc {
  readonly name: string
  /** The arguments and options after the command's name. */
  readonly usage: string
  /** One line, for the list of commands. */
  readonly summary: string
  /** More about it, for the command's own help. */
  readonly details: ReadonlyArray<string>
  readonly arguments: ReadonlyArray<OptionDoc>
  readonly options: ReadonlyArray<OptionDoc>
  readonly examples: ReadonlyArray<string>
  readonly exitCodes: ReadonlyArray<ExitCode.ExitCode | 130>
}

/** The options every command takes. */
export const common = {
  db: {
    flag: "--db FILE|postgres://URL",
    description: "the store: a SQLite file, or a postgres:// URL (default: $ARTANA_DB, else ./artana.db)"
  },
  tenant: {
    flag: "--tenant ID",
    description: "the tenant whose runs are read and written (default: $ARTANA_TENANT, else \"default\")"
  },
  format: {
    flag: "--format console|json",
    description: "console: for people (colours on a terminal only); json: one stable JSON document on stdout, errors as JSON on stderr"
  },
  verbose: {
    flag: "--verbose",
    description: "on an internal error, print its full stack too (also with DEBUG set in the environment)"
  }
} as const satisfies Record<string, OptionDoc>

const RUN: OptionDoc = { flag: "RUN", description: "the run id (as `artana run` or `artana list-runs` shows it)" }

export const commands: ReadonlyArray<CommandDoc> = [
  {
    name: "run",
    usage: "PLAN --policy POLICY [--run-id ID]",
    summary: "Run a plan of tool calls under a deny-by-default policy, as a new logged run",
    details: [
      "Checks the plan and the policy first (bad input writes nothing), then runs each step as a logged,",
      "hash-chained tool step. An existing --run-id continues that run (after a crash or Ctrl-C), if its plan is",
      "the same: finished steps come from the log and never run again."
    ],
    arguments: [{ flag: "PLAN", description: "the plan file (YAML): on_error and a list of steps { id, tool, args }" }],
    options: [
      { flag: "--policy POLICY", description: "the policy file (YAML); paths in it are relative to its folder" },
      { flag: "--run-id ID", description: "the run's id (default: a new UUID); an existing id continues that run" }
    ],
    examples: [
      "artana run plan.yaml --policy policy.yaml --run-id demo-1",
      "artana run plan.yaml --policy policy.yaml --run-id demo-1   # again, after a crash: continues it"
    ],
    exitCodes: [0, 2, 3, 4, 6, 7, 8, 130]
  },
  {
    name: "replay",
    usage: "RUN [--plan PLAN]",
    summary: "Re-run a finished plan run over its log: no tool executes, every output hash must match",
    details: ["Every result comes from the log and nothing is written; a plan that asks for other steps than the log holds is a mismatch."],
    arguments: [RUN],
    options: [{ flag: "--plan PLAN", description: "a plan file that must match the log (default: the plan the run logged)" }],
    examples: ["artana replay demo-1", "artana replay demo-1 --plan plan.yaml"],
    exitCodes: [0, 2, 5, 6, 7, 8]
  },
  {
    name: "reconcile",
    usage: "RUN --step ID (--completed JSON | --failed MESSAGE) [--force]",
    summary: "Settle the step a crash or Ctrl-C left in doubt (needs_reconciliation)",
    details: [
      "A step whose tool may or may not have acted (a shell command cut off) is never repeated silently. Check what",
      "really happened, then say so here; `artana run PLAN --policy POLICY --run-id RUN` continues the plan after it."
    ],
    arguments: [RUN],
    options: [
      { flag: "--step ID", description: "the step in doubt: a plan step's id (or a run's step key), as `artana report` shows it" },
      { flag: "--completed JSON", description: "the call happened: its result, as JSON (one its tool returns)" },
      { flag: "--failed MESSAGE", description: "the call did not happen, or failed: why" },
      { flag: "--force", description: "settle it although the call may still be running (only when you know it has stopped)" }
    ],
    examples: [
      "artana reconcile crash-1 --step slow --completed '{\"exitCode\":0,\"signal\":null,\"stdout\":\"\",\"stderr\":\"\"}'",
      "artana reconcile crash-1 --step slow --failed \"the command never finished\""
    ],
    exitCodes: [0, 2, 5, 7, 8]
  },
  {
    name: "signal",
    usage: "RUN NAME [--payload JSON] [--id ID]",
    summary: "Deliver a durable message to a run, which its code takes with ctx.waitForSignal(NAME)",
    details: [
      "The signal is written into the run's hash-chained log: a process waiting in the run reads it there, and a run",
      "not yet at its wait (paused, or not running anywhere) takes it when it gets there. A run that has ended",
      "(completed, failed, continued) refuses it and nothing is written (exit 2)."
    ],
    arguments: [RUN, { flag: "NAME", description: "the signal's name, as the run's code waits for it" }],
    options: [
      { flag: "--payload JSON", description: "the message, as JSON (default null); the run's code decodes it with its schema" },
      { flag: "--id ID", description: "a de-duplication key: a signal of this id already in the run's log is not written again" }
    ],
    examples: [
      "artana signal order-7 decision --payload '{\"approve\":true}'",
      "artana signal agent-3 artana.steer --payload '{\"text\":\"Only EMEA, please.\"}'"
    ],
    exitCodes: [0, 2, 5, 7, 8]
  },
  {
    name: "approvals",
    usage: "[--run RUN] [--tool NAME] [--older-than AGE] [--limit N] [--after CURSOR]",
    summary: "The tenant's tool calls waiting for a person's approval (the approvals inbox), the longest waiting first",
    details: [
      "A call waits for approval when its tool says so (`needsApproval`, or `approval: required` in the sandbox policy):",
      "its run is paused before the call runs. Read from the tenant's paused runs in the order they paused (an index of",
      "paused runs), each by its last event. When more follow the page, it prints the next page's cursor and the command",
      "that shows it (the same filters, an age as the time it meant)."
    ],
    arguments: [],
    options: [
      { flag: "--run RUN", description: "only the approval this run waits for" },
      { flag: "--tool NAME", description: "only calls of this tool" },
      { flag: "--older-than AGE", description: "only calls waiting at least this long (90m, 24h, 7d), or requested before a time (as list-runs' --since)" },
      { flag: "--limit", description: "at most this many per page (default 50)" },
      { flag: "--after CURSOR", description: "the page after the one that printed CURSOR (its next page cursor)" }
    ],
    examples: ["artana approvals", "artana approvals --tool shell.run --older-than 1h --format json", "artana approvals --limit 20 --after r2.WzE3NjQxNTA0MDAwMDAsInJ1bi03Il0"],
    exitCodes: [0, 2, 5, 6, 7]
  },
  {
    name: "approve",
    usage: "ID [--args JSON] [--approver NAME]",
    summary: "Approve a tool call waiting for approval (optionally with edited arguments); a plan run then goes on",
    details: [
      "The decision is logged in the run's hash chain (who, when, and the edited arguments). Edited arguments are checked",
      "against the tool's parameters first: arguments it refuses are bad input and nothing is written. Of two people",
      "deciding one call at once, exactly one decision is written; the other is told who decided. A plan run continues",
      "at once, with the tools of its logged policy; any other run is resumed by the application that runs its workflow."
    ],
    arguments: [{ flag: "ID", description: "the approval's id, as `artana approvals` or a paused `artana run` shows it" }],
    options: [
      { flag: "--args JSON", description: "the arguments the call runs with instead of the requested ones (a JSON object)" },
      { flag: "--approver NAME", description: "who approves, as logged and checked against the tool's approvers (default: $ARTANA_APPROVER, else the OS user)" }
    ],
    examples: ["artana approve 'pub-1@3f2a…'", "artana approve 'pub-1@3f2a…' --args '{\"path\":\"workspace/out/q3.txt\",\"content\":\"Q3\"}' --approver ops"],
    exitCodes: [0, 2, 3, 4, 5, 7, 8]
  },
  {
    name: "reject",
    usage: "ID --reason TEXT [--approver NAME]",
    summary: "Reject a tool call waiting for approval; the run sees the reason as the call's failure",
    details: [
      "The call never runs: its step fails with the reason (a plan step counts as denied; an agent's model reads it and",
      "can react). Logged as approve's decision is; a plan run then goes on."
    ],
    arguments: [{ flag: "ID", description: "the approval's id, as `artana approvals` shows it" }],
    options: [
      { flag: "--reason TEXT", description: "why: the run (and its model) sees it" },
      { flag: "--approver NAME", description: "who rejects (default: $ARTANA_APPROVER, else the OS user)" }
    ],
    examples: ["artana reject 'pub-1@3f2a…' --reason \"not before the audit\""],
    exitCodes: [0, 2, 3, 4, 5, 7, 8]
  },
  {
    name: "report",
    usage: "RUN [--from SEQ] [--limit N]",
    summary: "A plan run's timeline: each call allowed or denied and why, files, domains, commands, cost",
    details: [
      "The run's hash chain is checked too: a log changed after it was written is marked TAMPERED (exit 6).",
      "A run of more than 2,000 events is reported by the steps logged in its first and last 1,000 events, with the",
      "command that reports the ones between; --from and --limit report the steps logged in that stretch instead",
      "(a step that starts in it is reported whole). `--format json` then adds `stretch`: { omitted, next }."
    ],
    arguments: [RUN],
    options: [
      { flag: "--from SEQ", description: "report the steps logged from this seq on (default: the first)" },
      { flag: "--limit N", description: "in at most N events (default: to the end when --from is given)" }
    ],
    examples: ["artana report demo-1", "artana report demo-1 --format json | jq .summary", "artana report long-1 --from 1001 --limit 1000"],
    exitCodes: [0, 2, 3, 4, 5, 6, 7, 8]
  },
  {
    name: "list-runs",
    usage: "[--status S] [--workflow W] [--since TIME] [--until TIME] [--limit N] [--after CURSOR] [--version V] [--root RUN]",
    summary: "The tenant's runs, newest first, a page at a time, and where a person is needed",
    details: [
      "Runs in needs_reconciliation are listed with the path to the step in doubt and the `artana reconcile` that settles it.",
      "When more runs follow the page, it prints the next page's cursor and the command that shows it (the same filters",
      "and --after CURSOR); `--format json` gives it as `next` (null on the last page). Each filter reads an index of its",
      "own, so a page costs the same however many runs the store keeps; given several filters, the store reads one index",
      "and checks the others on its rows."
    ],
    arguments: [],
    options: [
      { flag: "--status S", description: "only runs with this status: running, paused, completed, failed, needs_reconciliation, continued" },
      { flag: "--workflow W", description: "only runs of this workflow (plan runs: artana.plan)" },
      { flag: "--since TIME", description: "only runs created at or after TIME: an ISO date or time (2026-11-01, 2026-11-01T09:30:00Z), ms since the epoch, or an age (90m, 24h, 7d, 2w)" },
      { flag: "--until TIME", description: "only runs created before TIME (as --since)" },
      { flag: "--limit N", description: "at most N runs on the page (default 50)" },
      { flag: "--after CURSOR", description: "the page after the one that printed CURSOR (its next page cursor)" },
      { flag: "--version V", description: "only runs started by version V of their workflow's code (see `artana versions`)" },
      { flag: "--root RUN", description: "only the runs of the lineage rooted at RUN (its sub-runs and continue-as-new chain); show-run names the rest of a lineage too large to draw" }
    ],
    examples: [
      "artana list-runs",
      "artana list-runs --tenant acme --status needs_reconciliation",
      "artana list-runs --workflow artana.plan --since 7d --limit 20",
      "artana list-runs --after r2.WzE3NjQxNTA0MDAwMDAsIm5pZ2h0bHktNDIiXQ"
    ],
    exitCodes: [0, 2, 5, 7]
  },
  {
    name: "show-run",
    usage: "RUN [--from SEQ] [--limit N]",
    summary: "A run's record, its lineage tree (parent and child runs) and its events",
    details: [
      "Works for any run (a plan run or an application's workflow); the hash chain is checked as `verify` does.",
      "A run of more than 100 events shows its first 50 and last 50 and the command that shows the rest;",
      "--from and --limit show that stretch instead. Events are read and printed a page at a time, so memory stays",
      "bounded however long the run. `--format json`: one document whose `events` are the events shown, `omitted`",
      "the stretch left out ({ fromSeq, toSeq, events } or null), `next` the --from of the following page (or null).",
      "The lineage tree is drawn from at most 100 of the lineage's runs (the newest, and the path from the root to this",
      "run); a larger lineage says so and prints the `list-runs --root` command that pages the rest (`lineageNext` in JSON)."
    ],
    arguments: [RUN],
    options: [
      { flag: "--from SEQ", description: "show the events from this seq on (default: the first)" },
      { flag: "--limit N", description: "show at most N events (default: to the end when --from is given)" }
    ],
    examples: [
      "artana show-run demo-1",
      "artana show-run transfer-1 --tenant acme --db ./artana.db --format json",
      "artana show-run agent-7 --from 1001 --limit 1000"
    ],
    exitCodes: [0, 2, 5, 6, 7]
  },
  {
    name: "export",
    usage: "RUN [--format jsonl] [--out FILE]",
    summary: "A run's events as JSON lines, verified, to keep or check elsewhere",
    details: [
      "One event per line, with every field its hash chain covers (eventId, runId, tenantId, seq, timestamp, type,",
      "stepKey, payload as stored, prevHash, hash): `EventLines.decode` of @artana/core and `Verify` check it on any",
      "machine. The log is read, checked (as `verify` does) and written a page at a time: memory stays bounded however",
      "long the run. Nothing of a page is written before the page is checked; a broken chain stops the export (exit 6).",
      "With --out the lines go to a file beside FILE first, which replaces FILE once the whole log checked; the",
      "count and head are printed on stderr."
    ],
    arguments: [RUN],
    options: [
      { flag: "--format jsonl", description: "the format: JSON lines, one event per line (the only one, and the default)" },
      { flag: "--out FILE", description: "write to FILE, replaced only once the whole log checked (default: stdout)" }
    ],
    examples: ["artana export demo-1 > demo-1.jsonl", "artana export agent-7 --tenant acme --out agent-7.jsonl", "artana export demo-1 | jq -c 'select(.type == \"ToolFailed\")'"],
    exitCodes: [0, 2, 5, 6, 7]
  },
  {
    name: "verify",
    usage: "RUN [--head SEQ:HASH]",
    summary: "Check a run's hash chain (with ARTANA_AUDIT_KEY when it was written with one)",
    details: ["Every hash and link, no gaps, the store's head, and an exported head if given."],
    arguments: [RUN],
    options: [{ flag: "--head SEQ:HASH", description: "a head exported earlier that the chain must still contain" }],
    examples: ["artana verify demo-1", "artana verify demo-1 --head 12:3f2a…"],
    exitCodes: [0, 2, 5, 6, 7]
  },
  {
    name: "mcp",
    usage: "pin --policy POLICY [--server NAME] | serve --policy POLICY [--http HOST:PORT]",
    summary: "MCP: pin the tools the policy's MCP servers offer now; serve the policy's tools as an MCP server",
    details: [
      "pin: connects to each server of the policy's mcp: section (a stdio server is started, then stopped), fingerprints",
      "every tool it offers (name, description, input schema, read-only/idempotent/destructive hints, output schema) and writes the fingerprints as the server's pins, keeping",
      "the file's comments. From then on a tool whose fingerprint differs, or that is new, is withheld from the model",
      "(and the withholding logged) until a person reviews it and pins again.",
      "serve: serves the policy's tools over MCP (stdio, or Streamable HTTP with --http); every call is a run of its own,",
      "logged and governed by the policy. On an address other than 127.0.0.1 a bearer token is required: printed once on",
      "stderr, kept only hashed; a request without it gets 401 and nothing runs."
    ],
    arguments: [],
    options: [
      { flag: "--policy POLICY", description: "the policy file (YAML); pin: its mcp: section names the servers, and is rewritten with their pins" },
      { flag: "--server NAME", description: "pin: this server only (default: every server of the policy)" },
      { flag: "--http HOST:PORT", description: "serve: Streamable HTTP on HOST:PORT (default: stdio); any HOST but 127.0.0.1 requires the printed token" }
    ],
    examples: [
      "artana mcp pin --policy policy.yaml",
      "artana mcp pin --policy policy.yaml --server github --format json",
      "artana mcp serve --policy policy.yaml --db runs.db",
      "artana mcp serve --policy policy.yaml --http 127.0.0.1:8765"
    ],
    exitCodes: [0, 2, 4, 7, 130]
  },
  {
    name: "ui",
    usage: "[--port N] [--host HOST] [--allow-actions] [--approver NAME]",
    summary: "A local web inspector: runs, timelines, cost, lineage, chain status, approvals inbox, live updates",
    details: [
      "Serves a web app over the store (SQLite or PostgreSQL) until stopped (Ctrl-C). It binds 127.0.0.1 by default;",
      "on any other address every request needs the token it prints once on stderr (else 401). It only reads unless",
      "--allow-actions is given: then the approvals inbox can approve, reject and respond, which resumes plan runs.",
      "--tenant is the tenant shown first; the runs list has a tenant field to look at another."
    ],
    arguments: [],
    options: [
      { flag: "--port N", description: "the port to listen on (default 8484; 0: any free port; the address is printed)" },
      { flag: "--host HOST", description: "the address to bind (default 127.0.0.1); any other requires the printed token" },
      { flag: "--allow-actions", description: "let the inbox approve, reject and respond (default: read-only; the store opens read-only)" },
      { flag: "--approver NAME", description: "who decides, logged with each decision (default: $ARTANA_APPROVER, else the OS user)" }
    ],
    examples: [
      "artana ui --db runs.db",
      "artana ui --db postgres://artana@db/artana --allow-actions --approver ops",
      "artana ui --host 0.0.0.0 --port 8080"
    ],
    exitCodes: [0, 2, 5, 7, 130]
  },
  {
    name: "fork",
    usage: "RUN (--at SEQ | --step KEY) [--set STEP=JSON ...] [--id FORK]",
    summary: "Start a new run from a prefix of a run's log (time travel), optionally with step results replaced (what-if)",
    details: [
      "The fork's log is the run's events up to SEQ (or step KEY's end), cut back to the last step boundary: a model call",
      "without its reply, a tool call without its outcome, an approval or the run's end is left out whole, and runs live in",
      "the fork. The events are copied and re-chained under the fork's id in one transaction; the run is not touched. The",
      "CLI runs no workflow code: a plan run's fork goes on with `artana run PLAN --policy POLICY --run-id FORK`; any other",
      "run's with `Kernel.resume` (or a worker) in the application that runs its workflow. The same fork asked twice is one."
    ],
    arguments: [RUN],
    options: [
      { flag: "--at SEQ", description: "the last event the fork keeps (cut back to a step boundary)" },
      { flag: "--step KEY", description: "instead of --at: the fork keeps the run up to this step's end (a step key, or a plan step's id)" },
      { flag: "--set STEP=JSON", description: "replace a settled step's recorded result with JSON (repeatable); the code decodes it on replay" },
      { flag: "--id FORK", description: "the fork's run id (default RUN::fork::SEQ, with a hash of the --set values)" }
    ],
    examples: [
      "artana fork demo-1 --at 7",
      "artana fork demo-1 --step fetch --set 'fetch={\"status\":200,\"body\":\"changed\"}'"
    ],
    exitCodes: [0, 2, 5, 6, 7]
  },
  // Versioning (issue 19).
  {
    name: "replay-test",
    usage: "--workflows MODULE [--workflow NAME] [--since TIME] [--limit N]",
    summary: "Replay stored runs against the current code of your workflows: nothing runs, every divergence is reported",
    details: [
      "Loads MODULE (an ES module, as your application runs it) exporting `workflows`, an array of Workflow.make(...)",
      "values (or a default export), and optionally `tools`. Each run of the tenant (newest first, up to --limit) is",
      "replayed with the code of its workflow: every result comes from the log, no tool or model is called, nothing is",
      "written. A run whose log the code no longer matches is reported with both sides (recorded, now) and the command",
      "exits 6; a run of a workflow MODULE does not export is skipped. Run it in CI on runs exported from production",
      "(`artana export`, then `artana import` into a file of the CI's) before deploying a change."
    ],
    arguments: [],
    options: [
      { flag: "--workflows MODULE", description: "the ES module exporting `workflows` (and optionally `tools`): the code to replay with" },
      { flag: "--workflow NAME", description: "only runs of this workflow" },
      { flag: "--since TIME", description: "only runs created at or after TIME (as list-runs' --since)" },
      { flag: "--limit N", description: "at most N runs, newest first (default 100)" }
    ],
    examples: [
      "artana replay-test --db sample.db --workflows dist/workflows.js",
      "artana replay-test --db postgres://ci@localhost/artana --tenant acme --workflows dist/workflows.js --workflow approve --since 7d --format json"
    ],
    exitCodes: [0, 2, 5, 6, 7]
  },
  {
    name: "versions",
    usage: "[--workflow W] [--all-tenants]",
    summary: "Runs per workflow version, and how many are in flight: when an old version can be retired",
    details: [
      "A run records the version of the code that started it (Workflow.make({ version }); \"1\" by default). A version",
      "none of whose runs is running, paused or needs reconciliation can be retired: no worker needs its code any more."
    ],
    arguments: [],
    options: [
      { flag: "--workflow W", description: "only this workflow's versions" },
      { flag: "--all-tenants", description: "count every tenant's runs (an operator's view), not only --tenant's" }
    ],
    examples: ["artana versions --all-tenants", "artana versions --tenant acme --workflow approve --format json"],
    exitCodes: [0, 2, 5, 7]
  },
  {
    name: "import",
    usage: "FILE... ",
    summary: "Load runs exported with `artana export` into a store, each chain verified first",
    details: [
      "Each FILE (JSON lines of one run) is decoded and its hash chain verified (with ARTANA_AUDIT_KEY when the run was",
      "written with one) before anything is written: a file edited after its export is refused whole (exit 6). The run",
      "keeps its id, tenant and events as exported, and is verified again once stored. A run already in the store is",
      "refused. Creates the SQLite file when it does not exist."
    ],
    arguments: [{ flag: "FILE", description: "a file `artana export` wrote (one or more)" }],
    options: [],
    examples: ["artana import sample/*.jsonl --db ci.db"],
    exitCodes: [0, 2, 6, 7]
  }
]

/** The command's documentation; every command of the tree has one. */
export const command = (name: string): CommandDoc => {
  const found = commands.find((c) => c.name === name)
  if (found === undefined) throw new Error(`no documentation for the command "${name}"`)
  return found
}

/** The description of a command's argument (`PLAN`) or option (`--policy`). */
export const option = (commandName: string, flag: string): string => {
  const found = [...command(commandName).arguments, ...command(commandName).options].find((o) => o.flag === flag || o.flag.startsWith(`${flag} `))
  if (found === undefined) throw new Error(`no documentation for ${flag} of the command "${commandName}"`)
  return found.description
}

/** The package's version, from its package.json. */
export const version = (): string => {
  try {
    const pkg: unknown = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
    return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string" ? pkg.version : "0.0.0"
  } catch {
    return "0.0.0"
  }
}

const INTERRUPTED = "interrupted (Ctrl-C, SIGTERM); a run stays resumable with --run-id"

const exitLine = (code: number): string => `  ${String(code).padStart(3)}  ${code === 130 ? INTERRUPTED : ExitCode.meaning(code)}`

const columns = (s: T.Style, rows: ReadonlyArray<OptionDoc>): Array<string> => {
  const width = Math.max(0, ...rows.map((r) => r.flag.length))
  return rows.map((r) => `  ${s.bold(r.flag.padEnd(width))}  ${r.description}`)
}

const ENVIRONMENT: ReadonlyArray<OptionDoc> = [
  { flag: "ARTANA_DB", description: "the default --db" },
  { flag: "ARTANA_TENANT", description: "the default --tenant" },
  { flag: "ARTANA_APPROVER", description: "the default --approver of approve and reject" },
  { flag: "ARTANA_AUDIT_KEY", description: "the HMAC key of the hash chain (never on the command line, which `ps` shows)" },
  { flag: "NO_COLOR, FORCE_COLOR", description: "colours off, or on where there is no terminal" },
  { flag: "DEBUG", description: "as --verbose" }
]

/** `artana --help`. */
export const top = (s: T.Style, version: string): string => {
  const width = Math.max(...commands.map((c) => c.name.length))
  return [
    `${s.bold("artana")} ${version}: run tool plans under a deny-by-default policy, every decision in a hash-chained log;`,
    "replay, report, inspect and verify runs.",
    "",
    s.bold("Usage"),
    "  artana COMMAND [ARGS] [--db FILE|postgres://URL] [--tenant ID] [--format console|json]",
    "  artana COMMAND --help        a command's options and examples",
    "",
    s.bold("Commands"),
    ...commands.map((c) => `  ${s.bold(c.name.padEnd(width))}  ${c.summary}`),
    "",
    s.bold("Options of every command"),
    ...columns(s, [...Object.values(common), { flag: "-h, --help", description: "this help" }, { flag: "--version", description: "the version" }]),
    "",
    s.bold("Environment"),
    ...columns(s, ENVIRONMENT),
    "",
    s.bold("Examples"),
    "  artana run plan.yaml --policy policy.yaml --run-id demo-1",
    "  artana report demo-1",
    "  artana replay demo-1 && artana verify demo-1",
    "  artana list-runs --status needs_reconciliation",
    "  artana report demo-1 --format json > report.json",
    "",
    s.bold("Exit codes"),
    ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 130].map(exitLine),
    ""
  ].join("\n")
}

/** `artana COMMAND --help`. */
export const ofCommand = (s: T.Style, doc: CommandDoc): string =>
  [
    `${s.bold(`artana ${doc.name}`)} ${doc.usage}`,
    "",
    `${doc.summary}.`,
    ...doc.details,
    ...(doc.arguments.length === 0 ? [] : ["", s.bold("Arguments"), ...columns(s, doc.arguments)]),
    "",
    s.bold("Options"),
    // A command with a --format of its own (export) takes no other.
    ...columns(s, [...doc.options, ...Object.values(common).filter((o) => o !== common.format || !doc.options.some((d) => d.flag.startsWith("--format ")))]),
    "",
    s.bold("Examples"),
    ...doc.examples.map((e) => `  ${e}`),
    "",
    s.bold("Exit codes"),
    ...doc.exitCodes.map(exitLine),
    ""
  ].join("\n")


/**
 * What `artana FIRST ...` says when FIRST names no command (a typo, or an option put before the command), instead
 * of @effect/cli's "Invalid subcommand"; undefined when FIRST is a command, or asks for help or the version.
 */
export const notACommand = (first: string | undefined): string | undefined => {
  if (first === undefined || ["help", "--version", "-h", "--help"].includes(first) || commands.some((c) => c.name === first)) return undefined
  const names = commands.map((c) => c.name).join(", ")
  return first.startsWith("-")
    ? `${first} before a command: the command comes first (artana COMMAND [ARGS] [OPTIONS]); the commands: ${names}`
    : `no command "${first}"; the commands: ${names}`
}

/**
 * The help `args` (the command line after `artana`) ask for, or `undefined` when they ask for something else: no
 * arguments, `--help`/`-h` anywhere (with a known command first: that command's help), or `help COMMAND`.
 */
export const requested = (args: ReadonlyArray<string>, s: T.Style, version: string): string | undefined => {
  const first = args[0]
  if (first === undefined) return top(s, version)
  if (first !== "help" && !args.some((a) => a === "-h" || a === "--help")) return undefined
  const named = first === "help" ? args[1] : first
  const doc = commands.find((c) => c.name === named)
  return doc === undefined ? top(s, version) : ofCommand(s, doc)
}
