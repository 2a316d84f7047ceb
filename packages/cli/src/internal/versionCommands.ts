/**
 * Versioning commands (issue 19): `artana replay-test` replays stored runs against the current code of the user's
 * workflows (loaded from `--workflows MODULE`) without executing anything and reports each divergence with both sides;
 * `artana versions` counts runs in flight per workflow version; `artana import` loads exported runs (`artana export`)
 * into a store, verifying each chain first.
 */
import { Errors, type Event, EventLines, EventStore, Kernel, type Tool, Verify, type Workflow } from "@artana/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import type * as Redacted from "effect/Redacted"
import * as RedactedValue from "effect/Redacted"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { pathToFileURL } from "node:url"
import * as ExitCode from "../ExitCode.js"
import * as Database from "./database.js"
import * as Out from "./output.js"
import { parseTime } from "./readCommands.js"
import * as Services from "./services.js"
import * as T from "./terminal.js"

interface Common {
  readonly db: string
  readonly tenant: string
  readonly format: Out.Format
  readonly verbose: boolean
  readonly auditKey: Redacted.Redacted<string> | undefined
}

// ---------------------------------------------------------------------------------------------- --workflows MODULE

const isWorkflow = (u: unknown): u is Workflow.Any =>
  Predicate.hasProperty(u, "name") && typeof u.name === "string" && Predicate.hasProperty(u, "run") && typeof u.run === "function" &&
  Predicate.hasProperty(u, "decodeInput") && typeof u.decodeInput === "function"

const isTool = (u: unknown): u is Tool.Tool =>
  Predicate.hasProperty(u, "name") && typeof u.name === "string" && Predicate.hasProperty(u, "invoke") && typeof u.invoke === "function"

const listOf = <A>(u: unknown, guard: (u: unknown) => u is A): ReadonlyArray<A> | undefined =>
  Array.isArray(u) && u.every(guard) ? u : undefined

/** The user's code: `--workflows MODULE`'s `workflows` (or default) export, and its `tools` export if any. */
export interface UserCode {
  readonly workflows: ReadonlyArray<Workflow.Any>
  readonly tools: ReadonlyArray<Tool.Tool>
}

const badModule = (module: string, reason: string) => new Errors.InvalidInput({ what: "--workflows", reason: `${module}: ${reason}` })

/**
 * Loads `--workflows MODULE`: an ES module (JavaScript, as the application runs it) exporting `workflows` (or a
 * default export), an array of `Workflow.make(...)` values, and optionally `tools`, the tools their runs call (a
 * replay runs none of them: their results come from the log).
 */
export const loadUserCode = (module: string): Effect.Effect<UserCode, Errors.InvalidInput> =>
  Effect.gen(function*() {
    const file = path.resolve(module)
    if (!fs.existsSync(file)) return yield* badModule(module, "no such file")
    const loaded: unknown = yield* Effect.tryPromise({
      try: () => import(pathToFileURL(file).href),
      catch: (cause) => badModule(module, `cannot be loaded: ${cause instanceof Error ? cause.message : String(cause)}`)
    })
    const exported = Predicate.hasProperty(loaded, "workflows") ? loaded.workflows : Predicate.hasProperty(loaded, "default") ? loaded.default : undefined
    const workflows = listOf(exported, isWorkflow)
    if (workflows === undefined) return yield* badModule(module, "export `workflows` (or a default export): an array of Workflow.make(...) values")
    const tools = Predicate.hasProperty(loaded, "tools") ? listOf(loaded.tools, isTool) : []
    if (tools === undefined) return yield* badModule(module, "its `tools` export must be an array of Tool.make(...) values")
    return { workflows, tools }
  })

// ---------------------------------------------------------------------------------------------- replay-test

export interface ReplayTestArgs extends Common {
  readonly workflows: string
  readonly workflow: string | undefined
  readonly since: string | undefined
  readonly limit: number
}

/** How one run replayed: as logged, diverged (both sides), not replayable (an error), or skipped (no code for it). */
export interface Replayed {
  readonly runId: string
  readonly workflow: string
  readonly version: string
  readonly status: string
  readonly result: "ok" | "diverged" | "error" | "skipped"
  readonly stepKey?: string
  /** What the log holds at the step (diverged). */
  readonly recorded?: string
  /** What the current code asks for there (diverged). */
  readonly now?: string
  readonly error?: string
}

/** Kernel faults: a replay that stops on one did not run the code through (not the run's own logged failure). */
const FAULTS = new Set(["LogTampered", "StoreError", "InvalidInput", "InvalidRunState", "RunNotFound", "WorkflowNotFound", "SequenceConflict", "OwnershipLost"])

const tagOf = (e: unknown) => (Predicate.hasProperty(e, "_tag") && typeof e._tag === "string" ? e._tag : "Error")
const messageOf = (e: unknown) => (Predicate.hasProperty(e, "message") && typeof e.message === "string" ? e.message : String(e))

/** Replays one run with `workflow` (nothing runs, nothing is written) and says how it went. */
const replayOne = (kernel: Kernel.Service, workflow: Workflow.Any, run: string, info: RunRow) =>
  Effect.map(Effect.exit(kernel.replay(workflow, { tenantId: info.tenantId, runId: run })), (exit): Replayed => {
    const base = { runId: run, workflow: info.workflow, version: info.version, status: info.status }
    if (Exit.isSuccess(exit)) return { ...base, result: "ok" }
    const failure = Cause.failureOption(exit.cause)
    if (failure._tag === "None") return { ...base, result: "error", error: Cause.pretty(exit.cause).split("\n")[0] ?? "defect" }
    const error = failure.value
    if (error instanceof Errors.NonDeterminism) return { ...base, result: "diverged", stepKey: error.stepKey, recorded: error.expected, now: error.actual }
    // A failed run replays as its logged failure (the kernel checks it is the same): that is a faithful replay.
    if (info.status === "failed" && !FAULTS.has(tagOf(error))) return { ...base, result: "ok" }
    return { ...base, result: "error", error: `${tagOf(error)}: ${messageOf(error)}` }
  })

type RunRow = Pick<Event.RunInfo, "tenantId" | "workflow" | "version" | "status">

export const replayTest = (args: ReplayTestArgs) =>
  Out.command(args, Effect.gen(function*() {
    const code = yield* loadUserCode(args.workflows)
    const byName = new Map(code.workflows.map((w) => [w.name, w]))
    if (args.workflow !== undefined && !byName.has(args.workflow)) {
      return yield* new Errors.InvalidInput({ what: "--workflow", reason: `${args.workflow} is not among the workflows of ${args.workflows}: ${[...byName.keys()].join(", ")}` })
    }
    const now = yield* Clock.currentTimeMillis
    const createdSince = args.since === undefined ? undefined : yield* parseTime("--since", args.since, now)
    const replayed = yield* Effect.provide(
      Effect.gen(function*() {
        const store = yield* EventStore.EventStore
        const kernel = yield* Kernel.Kernel
        const out: Array<Replayed> = []
        let after: string | undefined
        // The newest runs first, a page at a time, until --limit runs were looked at.
        while (out.length < args.limit) {
          const page = yield* store.listRunsPage(args.tenant, { workflow: args.workflow, createdSince, limit: Math.min(100, args.limit - out.length), after })
          for (const info of page.runs) {
            const workflow = byName.get(info.workflow)
            out.push(workflow === undefined
              ? { runId: info.runId, workflow: info.workflow, version: info.version, status: info.status, result: "skipped", error: "no such workflow in --workflows" }
              : yield* replayOne(kernel, workflow, info.runId, info))
          }
          if (page.next === undefined || page.runs.length === 0) break
          after = page.next
        }
        return out
      }),
      Services.kernel({
        store: Database.layer(Database.parse(args.db), { create: false, readOnly: true }),
        workflows: code.workflows,
        tools: code.tools.map(Services.replayOnly),
        auditKey: args.auditKey
      })
    )
    const count = (result: Replayed["result"]) => replayed.filter((r) => r.result === result).length
    const failed = count("diverged") + count("error")
    const exitCode = count("diverged") > 0 ? ExitCode.Integrity : count("error") > 0 ? ExitCode.ofTag("StoreError") : ExitCode.Ok
    if (args.format === "json") {
      yield* Out.json({ tenantId: args.tenant, runs: replayed, ok: count("ok"), diverged: count("diverged"), errors: count("error"), skipped: count("skipped") })
      return exitCode
    }
    const s = Out.outStyle()
    const rows = replayed.map((r) => [r.runId, r.workflow, r.version, r.status, r.result, r.result === "diverged" ? `at ${r.stepKey}` : r.error ?? ""])
    if (rows.length > 0) yield* Out.stdout(T.table(s, ["RUN", "WORKFLOW", "VERSION", "STATUS", "REPLAY", "DETAIL"], rows))
    for (const r of replayed.filter((r) => r.result === "diverged")) {
      yield* Out.stdout(`\n${s.bold(`${r.runId}`)} diverged at step ${r.stepKey}:\n  recorded: ${r.recorded}\n  now:      ${r.now}`)
    }
    const summary = `${replayed.length} run${replayed.length === 1 ? "" : "s"} of tenant ${args.tenant}: ${count("ok")} replayed as logged, ` +
      `${count("diverged")} diverged, ${count("error")} could not be replayed, ${count("skipped")} skipped (no code for their workflow)`
    yield* Out.stdout(failed > 0 ? summary : s.dim(summary))
    return exitCode
  }))

// ---------------------------------------------------------------------------------------------- versions

export interface VersionsArgs extends Common {
  readonly workflow: string | undefined
  readonly allTenants: boolean
}

export const versions = (args: VersionsArgs) =>
  Out.command(args, Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const counts = yield* store.versionCounts({ tenantId: args.allTenants ? undefined : args.tenant, workflow: args.workflow })
    if (args.format === "json") {
      yield* Out.json({ tenantId: args.allTenants ? null : args.tenant, versions: counts })
      return ExitCode.Ok
    }
    const s = Out.outStyle()
    const whose = args.allTenants ? "every tenant" : `tenant ${args.tenant}`
    if (counts.length === 0) {
      yield* Out.stdout(`no runs for ${whose}${args.workflow === undefined ? "" : ` of workflow ${args.workflow}`}`)
      return ExitCode.Ok
    }
    const rows = counts.map((c) => [c.workflow, c.version, String(c.inFlight), String(c.runs), T.timestamp(c.lastCreatedAt)])
    yield* Out.stdout(T.table(s, ["WORKFLOW", "VERSION", "IN FLIGHT", "RUNS", "LAST STARTED"], rows, { right: [2, 3] }))
    const retirable = counts.filter((c) => c.inFlight === 0).map((c) => `${c.workflow}@${c.version}`)
    yield* Out.stdout(s.dim(`runs of ${whose}; a version with no run in flight can be retired (its workers stopped)${retirable.length === 0 ? "" : `: ${retirable.join(", ")}`}`))
    return ExitCode.Ok
  }).pipe(Effect.provide(Database.layer(Database.parse(args.db), { create: false, readOnly: true }))))

// ---------------------------------------------------------------------------------------------- import

export interface ImportArgs extends Common {
  readonly files: ReadonlyArray<string>
}

const IMPORT_BATCH = 500

/** One exported run: decoded and verified a line at a time, then appended in batches as the export holds it. */
const importFile = (store: EventStore.Service, file: string, auditKey: string | undefined) =>
  Effect.gen(function*() {
    const lines = yield* Effect.tryPromise({
      try: async () => {
        const out: Array<string> = []
        for await (const line of readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity })) if (line.trim() !== "") out.push(line)
        return out
      },
      catch: (cause) => new Errors.InvalidInput({ what: file, reason: `cannot be read: ${cause instanceof Error ? cause.message : String(cause)}` })
    })
    const events = []
    for (const [i, line] of lines.entries()) {
      const event = EventLines.decode(line)
      if (Either.isLeft(event)) return yield* new Errors.InvalidInput({ what: `${file} line ${i + 1}`, reason: event.left })
      events.push(event.right)
    }
    const first = events[0]
    if (first === undefined) return yield* new Errors.InvalidInput({ what: file, reason: "holds no event" })
    // The whole chain is checked before anything is written: a file edited after the export is refused whole.
    const report = Verify.verifyEvents(first.runId, events, { auditKey })
    if (!report.ok) {
      return yield* new Errors.LogTampered({ runId: first.runId, seq: report.firstBrokenSeq ?? 0, reason: `${file}: ${report.reason ?? "the chain does not verify"}` })
    }
    for (let at = 0; at < events.length; at += IMPORT_BATCH) {
      const batch = events.slice(at, at + IMPORT_BATCH)
      yield* store.append({ runId: first.runId, tenantId: first.tenantId, expectedSeq: at, events: batch }).pipe(
        Effect.catchTag("SequenceConflict", () =>
          new Errors.InvalidInput({ what: file, reason: `run ${first.runId} of tenant ${first.tenantId} is already in the store (or another writer appended to it)` }))
      )
    }
    const last = events[events.length - 1]!
    return { file, runId: first.runId, tenantId: first.tenantId, events: events.length, head: `${last.seq}:${last.hash}` }
  })

export const importRuns = (args: ImportArgs) =>
  Out.command(args, Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const kernel = yield* Kernel.Kernel
    const key = args.auditKey === undefined ? undefined : RedactedValue.value(args.auditKey)
    const imported = []
    for (const file of args.files) {
      const run = yield* importFile(store, file, key)
      // Read back from the store and verified there too: the row the store derived agrees with the log.
      const check = yield* kernel.verify({ tenantId: run.tenantId, runId: run.runId })
      if (!check.ok) return yield* new Errors.LogTampered({ runId: run.runId, seq: check.firstBrokenSeq ?? 0, reason: check.reason ?? "the imported run does not verify in the store" })
      imported.push(run)
      if (args.format === "console") yield* Out.stdout(`imported run ${run.runId} of tenant ${run.tenantId} from ${file}: ${run.events} events, verified, head ${run.head}`)
    }
    if (args.format === "json") yield* Out.json({ imported })
    return ExitCode.Ok
  }).pipe(Effect.provide(Services.kernel({ store: Database.layer(Database.parse(args.db), { create: true }), auditKey: args.auditKey }))))
