/**
 * The commands that only read the store: `report`, `list-runs`, `show-run`, `verify`. None of them creates a
 * database or writes to one.
 */
import { Errors, type Event, EventStore, Verify, Workflow } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as ExitCode from "../ExitCode.js"
import * as PlanRunner from "../PlanRunner.js"
import * as Report from "../Report.js"
import * as Database from "./database.js"
import * as Hints from "./hints.js"
import * as Out from "./output.js"
import * as Services from "./services.js"
import * as T from "./terminal.js"

export interface Common {
  readonly db: string
  readonly tenant: string
  readonly format: Out.Format
  readonly verbose: boolean
  readonly auditKey: Redacted.Redacted<string> | undefined
}

const reading = (args: Common) =>
  Services.kernel({ store: Database.layer(Database.parse(args.db), { create: false, readOnly: true }), auditKey: args.auditKey })


/**
 * The run's hash chain, checked as `artana verify` checks it (the run row's head and record, the audit key), a page at a
 * time: memory holds one page however long the run. `report` and `show-run` print what the store holds either way, and
 * mark a broken chain loudly and exit 6 (integrity): a log changed after it was written must never read as a clean one.
 * `onPage` sees each page as it is checked (`artana ui` adds up the run's tokens in the same pass).
 */

/** A run's workflow as the tables show it: `name`, or `name@version` for a run of a version other than the default. */
const workflowOf = (r: Event.RunInfo): string => (r.version === Workflow.DEFAULT_VERSION ? r.workflow : `${r.workflow}@${r.version}`)

/**
 * The events a reading command holds at once: a page of 256, as the kernel's verified reads (a page of 1,000 events of
 * 4 KB each, and the next one read while it is printed, filled a 64 MB heap on a busy machine).
 */
const READ_PAGE = 256

export const chainOf = (
  args: Pick<Common, "tenant" | "auditKey">,
  info: Event.RunInfo,
  onPage: (page: ReadonlyArray<Event.Event>) => void = () => undefined,
  exported?: Verify.Head
) =>
  Effect.flatMap(EventStore.EventStore, (store) => {
    const verifier = Verify.make(info.runId, {
      auditKey: args.auditKey === undefined ? undefined : Redacted.value(args.auditKey),
      heads: [
        { source: "store's run record", seq: info.headSeq, hash: info.headHash },
        ...(exported === undefined ? [] : [{ source: "exported", ...exported }])
      ],
      record: info
    })
    // Up to the first break: what follows it changes nothing of the report.
    return EventStore.stream(store, args.tenant, info.runId, { pageSize: READ_PAGE }).pipe(
      Stream.chunks,
      Stream.runFoldWhile<Verify.VerifyReport | undefined, Chunk.Chunk<Event.Event>>(undefined, (broken) => broken === undefined, (_, page) => {
        const events = Chunk.toReadonlyArray(page)
        onPage(events)
        return verifier.push(events)
      }),
      Effect.map(() => verifier.finish())
    )
  })

/** The mark of a broken chain, printed before and after what a command shows. */
const tampered = (s: T.Style, chain: Verify.VerifyReport): string =>
  s.red(s.bold(`✗ TAMPERED: run ${chain.runId}'s hash chain is broken at seq ${chain.firstBrokenSeq ?? "?"}: ${chain.reason ?? "unknown"}.`)) +
  "\n" + s.red(`  The log was changed after it was written: what is shown is what the store holds now, not what ran (see \`artana verify ${chain.runId}\`).`)

// ------------------------------------------------------------------------------------------------- report

/** What `report` reads of a long run by default: the steps logged in its first and its last events. */
export const REPORT_HEAD = 1000
export const REPORT_TAIL = 1000

/**
 * The events of a stretch of a plan run's log, and on past its end to the last outcome of the step it ends in (a plan
 * runs one step at a time: a step's events follow one another), a page at a time.
 */
const stretchOf = (tenantId: string, runId: string, window: Window) => {
  const end = window.limit === undefined ? Number.POSITIVE_INFINITY : window.fromSeq + window.limit
  let lastKey: string | undefined
  return Stream.takeWhile(eventsOf(tenantId, runId, [{ fromSeq: window.fromSeq, limit: undefined }]), (e) => {
    if (e.seq < end) {
      lastKey = e.stepKey
      return true
    }
    return e.stepKey === lastKey
  })
}

/**
 * `report`: the steps of the stretches asked for, streamed as they are read. The run's first event (its plan) and, for
 * a failed run, its last (why it failed) are read alone; the stretches a page at a time, each step printed (a table
 * row, a JSON element) once the next one begins. Memory holds a page, one step's events and the summary, however
 * long the run or the stretch (`--from 1`: all of it).
 */
export const report = (args: ShowArgs) =>
  Out.command(args, Effect.gen(function*() {
    yield* positive("--from", args.from)
    yield* positive("--limit", args.limit)
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(args.tenant, args.run)
    yield* withinRun(args.from, info)
    // The sandbox's audit reader alone (not the sandbox, not the MCP SDK): `report` reads what calls did, it runs none.
    const Audit = yield* Effect.promise(() => import("@artana/sandbox/Audit"))
    const { next, omitted, windows } = windowsOf(info.headSeq, args.from, args.limit, REPORT_HEAD, REPORT_TAIL)
    const whole = windows.length === 1 && windows[0]!.fromSeq === 1 && windows[0]!.limit === undefined
    const [first] = yield* store.readEvents(args.tenant, args.run, 1, 1)
    const failed = info.status === "failed" ? yield* EventStore.lastEvent(store, args.tenant, info.runId, (e) => e.payload._tag === "RunFailed") : undefined
    const built = Report.builder(info, first, Audit.read, { stretch: !whole, failed })
    if (built instanceof PlanRunner.NotAPlanRun) return yield* built
    const chain = yield* chainOf(args, info)
    // The stretches, one after the other; the run's first event, in the first one or not, was given to the builder.
    const steps = Stream.concatAll(Chunk.fromIterable(windows.map((window) => stretchOf(args.tenant, info.runId, window)))).pipe(
      Stream.mapChunks((page) => Chunk.unsafeFromArray(built.push(Chunk.toReadonlyArray(page))))
    )
    const statuses = new Set<string>()
    const uncontained: Array<string> = []
    const seen = (page: ReadonlyArray<Report.StepReport>) => {
      for (const step of page) statuses.add(step.status)
      uncontained.push(...Report.uncontainedOf(page))
    }
    const pageCommand = (fromSeq: number, limit: number) => Hints.readOn(args, "report", info.runId, [["--from", fromSeq], ["--limit", limit]])
    if (args.format === "json") {
      // One document, written as the steps are read: `steps` first, then what is known once they all went by.
      yield* Out.stdoutPaced(`{\n  "runId": ${JSON.stringify(info.runId)},\n  "status": ${JSON.stringify(info.status)},\n  "steps": [`)
      let firstStep = true
      const write = (page: ReadonlyArray<Report.StepReport>) => {
        seen(page)
        const text = page.map((step) => {
          const line = `${firstStep ? "" : ","}\n    ${JSON.stringify(Report.stepJson(step))}`
          firstStep = false
          return line
        }).join("")
        return text === "" ? Effect.void : Out.stdoutPaced(text)
      }
      yield* Stream.runForEachChunk(steps, (page) => write(Chunk.toReadonlyArray(page)))
      const { ending, steps: rest } = built.finish()
      yield* write(rest)
      const { runId: _runId, status: _status, ...after } = Report.endingJson(ending)
      const tail = JSON.stringify({ ...after, ...(whole ? {} : { stretch: { omitted: omitted ?? null, next: next ?? null } }), chain }, null, 2)
      yield* Out.stdoutPaced(`\n  ],\n${tail.slice(tail.indexOf("\n") + 1)}\n`)
    } else {
      const s = Out.outStyle()
      const heading = Report.renderHeading({
        ...info,
        onError: null,
        planFile: null,
        policyFile: null,
        ...headingOf(first),
        startedAt: first?.timestamp ?? info.createdAt,
        durationMs: info.updatedAt - (first?.timestamp ?? info.createdAt)
      }, s)
      yield* Out.stdoutPaced(`${chain.ok ? "" : `${tampered(s, chain)}\n\n`}${heading}\n`)
      // A table per page of steps, the header over the first.
      let header = true
      const print = (page: ReadonlyArray<Report.StepReport>) => {
        seen(page)
        if (page.length === 0 && !header) return Effect.void
        const text = `${Report.renderSteps(page, s, { header })}\n`
        header = false
        return Out.stdoutPaced(text)
      }
      yield* Stream.runForEachChunk(steps, (page) => {
        const reported = Chunk.toReadonlyArray(page)
        return reported.length === 0 ? Effect.void : print(reported)
      })
      const { ending, steps: rest } = built.finish()
      if (rest.length > 0 || header) yield* print(rest)
      const shown = windows.map((w) => (w.limit === undefined ? `from seq ${w.fromSeq}` : `at seq ${w.fromSeq}–${w.fromSeq + w.limit - 1}`)).join(" and ")
      const notes = whole ? [] : [
        "",
        s.dim(`  a stretch of the log: the steps logged ${shown}`),
        ...(omitted === undefined ? [] : [s.dim(`  the steps logged at seq ${omitted.fromSeq}–${omitted.toSeq} are not shown: ${pageCommand(omitted.fromSeq, REPORT_HEAD)}`)]),
        ...(next === undefined || args.limit === undefined ? [] : [s.dim(`  more: ${pageCommand(next, args.limit)}`)])
      ]
      const closing = [Report.renderEnding(ending, uncontained, s), ...notes, ...(chain.ok ? [] : ["", tampered(s, chain)])]
      yield* Out.stdoutPaced(`${closing.join("\n")}\n`)
      yield* waitingNote(args, info)
    }
    if (!chain.ok) return ExitCode.Integrity
    return info.status === "completed" || info.status === "failed" ? ExitCode.ofSteps([...statuses]) : ExitCode.NeedsAttention
  }).pipe(Effect.provide(reading(args))))

/** The plan and policy a plan run's first event records, for the report's heading. */
const headingOf = (first: Event.Event | undefined) => {
  const input = first === undefined ? undefined : PlanRunner.loggedInput([first])
  return input === undefined ? {} : {
    onError: input.plan.onError,
    planFile: input.planFile ?? null,
    policyFile: input.policy === undefined ? null : { file: input.policy.file, sha256: input.policy.sha256 }
  }
}

// ------------------------------------------------------------------------------------ waiting for a person

/** Where runs in `needs_reconciliation` wait: each one's path down to the step in doubt (core's reconciliationPath). */
const waitingPaths = (tenantId: string, runs: ReadonlyArray<Event.RunInfo>) =>
  Effect.flatMap(EventStore.EventStore, (store) =>
    Effect.map(
      Effect.forEach(runs.filter((r) => r.status === "needs_reconciliation"), (r) =>
        Effect.map(EventStore.reconciliationPath(store, tenantId, r.runId), (path) => [r.runId, path] as const)),
      (entries) => new Map<string, ReadonlyArray<Event.WaitingOn>>(entries)
    ))

/** On the console, under what a command showed of a run in `needs_reconciliation`: where it waits, the exact command. */
const waitingNote = (args: Common, info: Event.RunInfo) =>
  info.status !== "needs_reconciliation" || args.format !== "console" ? Effect.void : Effect.flatMap(waitingPaths(args.tenant, [info]), (paths) => {
    const s = Out.outStyle()
    const { todo, where } = Hints.waiting(args, info.runId, paths.get(info.runId) ?? [], info.workflow === PlanRunner.WORKFLOW)
    return Out.stdout(`\n${T.icon(s, "needs_reconciliation")} ${s.bold("needs reconciliation")}: ${where}\n  ${todo}`)
  })

/**
 * The tenants that have runs in the store, most runs first (at most 10). The event store is scoped by tenant and has
 * no such query, so this reads the SQL stores' runs table (`runs`, the CLI's stores use no table prefix) through the
 * `SqlClient` both store layers provide; a store without one (or a read that fails) names none.
 */
const tenantsWithRuns = Effect.flatMap(Effect.serviceOption(SqlClient.SqlClient), (client) =>
  Option.isNone(client) ? Effect.succeed([]) : client.value<{ readonly tenant_id: unknown; readonly runs: unknown }>`
    SELECT tenant_id, COUNT(*) AS runs FROM runs GROUP BY tenant_id ORDER BY COUNT(*) DESC, tenant_id LIMIT 10`.pipe(
      Effect.map((rows) => rows.map((r) => ({ tenantId: String(r.tenant_id), runs: Number(r.runs) }))),
      Effect.orElseSucceed((): ReadonlyArray<{ readonly tenantId: string; readonly runs: number }> => [])
    ))

// ---------------------------------------------------------------------------------------------- list-runs

export interface ListArgs extends Common {
  readonly status: Event.RunStatus | undefined
  readonly workflow: string | undefined
  readonly limit: number
  /** `--after`: the cursor a previous page printed. */
  readonly after: string | undefined
  /** `--since`, `--until`: as given (`parseTime`). */
  readonly since: string | undefined
  readonly until: string | undefined
  /** `--version`: only runs started by this version of their workflow. */
  readonly version?: string | undefined
  /** `--root`: only the runs of this lineage. */
  readonly root?: string | undefined
}

const UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/**
 * A time a person gives on the command line, as ms since the epoch: an ISO 8601 date or time (`2026-11-01`,
 * `2026-11-01T09:30:00Z`), ms since the epoch, or an age before `now` (`90m`, `24h`, `7d`, `2w`).
 */
export const parseTime = (what: string, text: string, now: number): Effect.Effect<number, Errors.InvalidInput> => {
  const age = /^(\d+)([smhdw])$/.exec(text)
  if (age !== null) return Effect.succeed(now - Number(age[1]) * UNITS[age[2]!]!)
  if (/^\d+$/.test(text)) return Effect.succeed(Number(text))
  const at = /^\d{4}-\d\d-\d\d([T ][\d:.]+(Z|[+-]\d\d:?\d\d)?)?$/.test(text) ? Date.parse(text) : Number.NaN
  return Number.isNaN(at)
    ? Effect.fail(new Errors.InvalidInput({ what, reason: `"${text}" is not a time: give an ISO date or time (2026-11-01, 2026-11-01T09:30:00Z), ms since the epoch, or an age (90m, 24h, 7d, 2w)` }))
    : Effect.succeed(at)
}

export const listRuns = (args: ListArgs) =>
  Out.command(args, Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const now = yield* Clock.currentTimeMillis
    const createdSince = args.since === undefined ? undefined : yield* parseTime("--since", args.since, now)
    const createdUntil = args.until === undefined ? undefined : yield* parseTime("--until", args.until, now)
    const filtered = args.status !== undefined || args.workflow !== undefined || createdSince !== undefined || createdUntil !== undefined || args.root !== undefined || args.version !== undefined
    const page = yield* store.listRunsPage(args.tenant, {
      status: args.status,
      workflow: args.workflow,
      createdSince,
      createdUntil,
      limit: args.limit,
      after: args.after,
      rootRunId: args.root,
      version: args.version
    })
    const runs = page.runs
    // The same command, one page on: every filter as given (an age as the time it meant, so the window stays put
    // however late the next page is asked), and the cursor.
    const at = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString())
    const nextCommand = page.next === undefined ? undefined : Hints.readOn(args, "list-runs", undefined, [
      ["--status", args.status],
      ["--workflow", args.workflow],
      ["--since", at(createdSince)],
      ["--until", at(createdUntil)],
      ["--version", args.version],
      ["--limit", args.limit === 50 ? undefined : args.limit],
      ["--root", args.root],
      ["--after", page.next]
    ])
    const paths = yield* waitingPaths(args.tenant, runs)
    // None for this tenant: perhaps the wrong --tenant. Say which tenants have runs here.
    const others = runs.length === 0 && args.after === undefined ? (yield* tenantsWithRuns).filter((t) => t.tenantId !== args.tenant) : []
    if (args.format === "json") {
      const withPaths = runs.map((r) => {
        const reconciliationPath = paths.get(r.runId)
        return reconciliationPath === undefined ? r : { ...r, reconciliationPath }
      })
      yield* Out.json({ tenantId: args.tenant, runs: withPaths, next: page.next ?? null, ...(runs.length === 0 && args.after === undefined ? { tenantsWithRuns: others } : {}) })
      return ExitCode.Ok
    }
    const s = Out.outStyle()
    if (runs.length === 0) {
      const since = createdSince === undefined ? "" : ` created since ${T.timestamp(createdSince)}`
      const until = createdUntil === undefined ? "" : ` created before ${T.timestamp(createdUntil)}`
      yield* Out.stdout(`no ${args.after === undefined ? "" : "more "}runs for tenant ${args.tenant}${args.status === undefined ? "" : ` with status ${args.status}`}${args.workflow === undefined ? "" : ` of workflow ${args.workflow}`}${args.version === undefined ? "" : ` of version ${args.version}`}${since}${until}`)
      if (others.length > 0 && !filtered) {
        yield* Out.stdout(`tenants with runs in ${Database.describe(Database.parse(args.db))}: ${others.map((t) => `${t.tenantId} (${t.runs})`).join(", ")}`)
        yield* Out.stdout(s.dim(`  artana list-runs${Hints.options({ ...args, tenant: others[0]!.tenantId })}`))
      }
      return ExitCode.Ok
    }
    const rows = runs.map((r) => [
      r.runId,
      workflowOf(r),
      `${T.icon(s, r.status)} ${r.status}`,
      String(r.headSeq),
      `$${r.costUsd.toFixed(4)}`,
      T.timestamp(r.createdAt),
      T.duration(r.updatedAt - r.createdAt),
      r.parentRunId ?? ""
    ])
    yield* Out.stdout(T.table(s, ["RUN", "WORKFLOW", "STATUS", "EVENTS", "COST", "CREATED", "TOOK", "PARENT"], rows, { right: [3, 4, 6] }))
    const counted = `${runs.length} run${runs.length === 1 ? "" : "s"} of tenant ${args.tenant}, newest first${args.after === undefined ? "" : ", after the cursor given"}`
    yield* Out.stdout(s.dim(nextCommand === undefined || page.next === undefined
      ? counted
      : `${counted}; more follow (next page cursor ${page.next}):\n  ${nextCommand}`))
    if (runs.some((r) => r.status === "continued")) {
      yield* Out.stdout(s.dim(`${T.icon(s, "continued")} continued: the run went on as a new run of its chain (continue-as-new); \`artana show-run RUN\` names it`))
    }
    // One entry per topmost waiting run (the runs below it are on its path): where the person is needed.
    const topmost = runs.filter((r) => paths.has(r.runId) && (r.parentRunId === undefined || !paths.has(r.parentRunId)))
    if (topmost.length > 0) {
      const lines = ["", s.bold("waiting for a person")]
      for (const r of topmost) {
        const { todo, where } = Hints.waiting(args, r.runId, paths.get(r.runId) ?? [], r.workflow === PlanRunner.WORKFLOW)
        lines.push(`  ${T.icon(s, "needs_reconciliation")} ${where}`, `    ${s.dim(todo)}`)
      }
      yield* Out.stdout(lines.join("\n"))
    }
    return ExitCode.Ok
  }).pipe(Effect.provide(reading(args))))

// ----------------------------------------------------------------------------------------------- show-run

/** A run and the runs below it (sub-runs a tool or sub-agent started). */
export interface Lineage {
  readonly runId: string
  readonly workflow: string
  readonly status: Event.RunStatus
  readonly children: ReadonlyArray<Lineage>
}

const lineageOf = (runs: ReadonlyArray<Event.RunInfo>, rootRunId: string): Lineage | undefined => {
  const byParent = new Map<string, Array<Event.RunInfo>>()
  for (const r of runs) {
    if (r.parentRunId === undefined) continue
    const list = byParent.get(r.parentRunId) ?? []
    list.push(r)
    byParent.set(r.parentRunId, list)
  }
  const node = (r: Event.RunInfo, depth: number): Lineage => ({
    runId: r.runId,
    workflow: r.workflow,
    status: r.status,
    // Oldest first; the depth bound guards against a corrupt row naming its own descendant as parent.
    children: depth > 64 ? [] : (byParent.get(r.runId) ?? []).sort((a, b) => a.createdAt - b.createdAt).map((c) => node(c, depth + 1))
  })
  const root = runs.find((r) => r.runId === rootRunId)
  return root === undefined ? undefined : node(root, 0)
}

/** Runs of a lineage the tree is drawn from, at most: a larger lineage is paged with `list-runs --root`. */
export const LINEAGE_SHOWN = 100

const renderLineage = (s: T.Style, tree: Lineage, current: string): Array<string> => {
  const lines: Array<string> = []
  const walk = (n: Lineage, prefix: string, branch: string) => {
    const label = `${T.icon(s, n.status)} ${n.runId === current ? s.bold(n.runId) : n.runId}  ${s.dim(n.workflow)}  ${n.status}${n.runId === current ? s.cyan("  ◀ this run") : ""}`
    lines.push(`  ${prefix}${branch}${label}`)
    const childPrefix = prefix + (branch === "├─ " ? "│  " : branch === "└─ " ? "   " : "")
    n.children.forEach((c, i) => walk(c, childPrefix, i === n.children.length - 1 ? "└─ " : "├─ "))
  }
  walk(tree, "", "")
  return lines
}

/** One line about an event's payload. */
export const describeEvent = (p: Event.EventPayload): string => {
  switch (p._tag) {
    case "RunStarted":
      return `${p.workflow}${p.parentRunId === undefined ? "" : ` (child of ${p.parentRunId})`}${p.continuedFrom === undefined ? "" : ` (continues run ${p.continuedFrom.runId})`}`
    case "RunContinued":
      return `continued as run ${p.nextRunId} with ${JSON.stringify(p.input)}`
    case "RunResumed":
      return p.reason
    case "ToolRequested":
      return `${p.tool} ${p.arguments}`
    case "ToolCompleted":
      return `${p.tool} -> ${JSON.stringify(p.result)}${p.reconciled === true ? " (reconciled)" : ""}`
    case "ToolFailed":
      return `${p.tool} ${p.kind}${p.path === undefined ? "" : ` at ${p.path}`}: ${p.error}`
    case "PolicyDenied":
      return `${p.tool}: ${p.reason}${p.middleware === undefined ? "" : ` (${p.middleware})`}`
    case "MiddlewareNote":
      return `${p.middleware}: ${p.note} ${JSON.stringify(p.data)}`
    case "StepCompleted":
      return `${p.name} = ${JSON.stringify(p.value)}`
    case "ModelRequested":
      return `${p.model}, ${p.messages.length} messages, tools [${p.tools.join(", ")}]`
    case "ModelCompleted":
      return `${p.model}, ${p.usage.inputTokens}+${p.usage.outputTokens} tokens, $${p.costUsd.toFixed(6)}`
    case "ModelFailed":
      return `${p.kind}: ${p.error}`
    case "ReconciliationRequired": {
      const awaited = p.waitingOn?.[0]
      const last = p.waitingOn?.[p.waitingOn.length - 1]
      return awaited === undefined || last === undefined
        ? `${p.tool} (in doubt; key ${p.idempotencyKey})`
        : `${p.tool} waits on run ${awaited.runId} (in doubt at step ${last.stepKey} of run ${last.runId})`
    }
    case "PauseRequested":
      return `${p.reason} (ticket ${p.ticket})`
    case "HumanResponded":
      return `ticket ${p.ticket}${p.respondedBy === undefined ? "" : ` by ${p.respondedBy}`}: ${JSON.stringify(p.payload)}`
    case "BudgetExceeded":
      return `spent $${p.spentUsd} of $${p.limitUsd} (${p.phase})`
    case "RunCompleted":
      return JSON.stringify(p.output)
    case "RunFailed":
      return `${p.errorTag}: ${p.error}`
    case "SignalSent":
      return `${p.name}${p.carriedFrom === undefined ? "" : ` (carried from run ${p.carriedFrom.runId} seq ${p.carriedFrom.seq})`}: ${JSON.stringify(p.payload)} (id ${p.signalId})`
    case "SignalAwaited":
      return `${p.name}${p.deadline === undefined ? "" : ` until ${new Date(p.deadline).toISOString()}`}`
    case "SignalReceived":
      return `${p.name} sent at seq ${p.signalSeq}: ${JSON.stringify(p.payload)}`
    case "SignalTimedOut":
      return `${p.name}: none before ${new Date(p.deadline).toISOString()}`
    case "ApprovalRequested":
      return `${p.tool} ${p.arguments} waits for approval${p.approvers === undefined ? "" : ` by ${p.approvers.join(" or ")}`} (${p.approvalId})`
    case "ApprovalDecided":
      return `${p.decision} by ${p.approver}${p.arguments === undefined ? "" : `, arguments edited to ${p.arguments}`}${p.reason === undefined ? "" : `: ${p.reason}`}`
  }
}

/**
 * The run's place in a continue-as-new chain: the run it continues (its `RunStarted`) and the run it continued as (its
 * last event, `RunContinued`). Two one-event reads, whatever the run's length.
 */
const continuation = (store: EventStore.Service, info: Event.RunInfo) =>
  Effect.gen(function*() {
    const [first] = yield* store.readEvents(info.tenantId, info.runId, 1, 1)
    const [last] = info.status === "continued" ? yield* store.readEvents(info.tenantId, info.runId, info.headSeq, 1) : []
    return {
      continuedFrom: first?.payload._tag === "RunStarted" ? first.payload.continuedFrom : undefined,
      continuedAs: last?.payload._tag === "RunContinued" ? last.payload.nextRunId : undefined,
      forkedFrom: first?.payload._tag === "RunStarted" ? first.payload.forkedFrom : undefined
    }
  })

/** What `show-run` prints of a long run by default: its first and its last events. */
export const SHOW_HEAD = 50
export const SHOW_TAIL = 50

export interface ShowArgs extends Common {
  readonly run: string
  /** `--from SEQ`: the first event shown. */
  readonly from: number | undefined
  /** `--limit N`: at most N events from there. */
  readonly limit: number | undefined
}

/** A stretch of the log that a command prints: `limit` events from `fromSeq` (to the end without one). */
interface Window {
  readonly fromSeq: number
  readonly limit: number | undefined
}

/**
 * The stretches of the run's log a command prints: the one asked for (`--from`, `--limit`), else all of a short run,
 * else its first `head` and last `tail` events; the events left out between them, and the `--from` of the page after.
 */
export const windowsOf = (headSeq: number, from: number | undefined, limit: number | undefined, head: number, tail: number) => {
  if (from !== undefined || limit !== undefined) {
    const fromSeq = from ?? 1
    const next = limit !== undefined && fromSeq + limit <= headSeq ? fromSeq + limit : undefined
    return { windows: [{ fromSeq, limit }], omitted: undefined, next }
  }
  if (headSeq <= head + tail) return { windows: [{ fromSeq: 1, limit: undefined }], omitted: undefined, next: undefined }
  const windows: ReadonlyArray<Window> = [{ fromSeq: 1, limit: head }, { fromSeq: headSeq - tail + 1, limit: tail }]
  return { windows, omitted: { fromSeq: head + 1, toSeq: headSeq - tail, events: headSeq - head - tail }, next: undefined }
}

/** `--from` past the run's last event shows nothing: refused, saying where the run ends. */
const withinRun = (from: number | undefined, info: { readonly runId: string; readonly headSeq: number }) =>
  from === undefined || from <= info.headSeq
    ? Effect.void
    : Effect.fail(new Errors.InvalidInput({ what: "--from", reason: `${from} is past the end of run ${info.runId}: its last event is seq ${info.headSeq}` }))

const positive = (what: string, value: number | undefined) =>
  value === undefined || (Number.isSafeInteger(value) && value >= 1)
    ? Effect.void
    : Effect.fail(new Errors.InvalidInput({ what, reason: `${value} is not a whole number of 1 or more` }))

/** The events of the windows, a page at a time (a page of the store is a chunk). */
const eventsOf = (tenantId: string, runId: string, windows: ReadonlyArray<Window>) =>
  Stream.flatMap(EventStore.EventStore, (store) =>
    Stream.concatAll(Chunk.fromIterable(windows.map((w) => {
      const pageSize = Math.min(w.limit ?? READ_PAGE, READ_PAGE)
      const events = EventStore.stream(store, tenantId, runId, { fromSeq: w.fromSeq, pageSize })
      return w.limit === undefined ? events : Stream.take(events, w.limit)
    }))))

export const showRun = (args: ShowArgs) =>
  Out.command(args, Effect.gen(function*() {
    yield* positive("--from", args.from)
    yield* positive("--limit", args.limit)
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(args.tenant, args.run)
    yield* withinRun(args.from, info)
    const family = yield* EventStore.lineageSample(store, info, { limit: LINEAGE_SHOWN })
    const lineage = lineageOf(family.runs, info.rootRunId) ?? { runId: info.runId, workflow: info.workflow, status: info.status, children: [] }
    const lineageMore = family.next === undefined ? undefined : Hints.readOn(args, "list-runs", undefined, [["--root", info.rootRunId], ["--after", family.next]])
    // What the lineage spent: every run of the tree draws on the root's budget (sub-agents, tools that start runs).
    const lineageCostUsd = yield* store.lineageCostUsd(args.tenant, info.rootRunId)
    const reconciliationPath = (yield* waitingPaths(args.tenant, [info])).get(info.runId)
    const { continuedFrom, continuedAs, forkedFrom } = yield* continuation(store, info)
    const chain = yield* chainOf(args, info)
    const code = chain.ok ? ExitCode.Ok : ExitCode.Integrity
    const { next, omitted, windows } = windowsOf(info.headSeq, args.from, args.limit, SHOW_HEAD, SHOW_TAIL)
    const pageCommand = (fromSeq: number, limit: number) => Hints.readOn(args, "show-run", info.runId, [["--from", fromSeq], ["--limit", limit]])
    const events = eventsOf(args.tenant, info.runId, windows)
    if (args.format === "json") {
      // One document, written as the pages are read: its events last, so they stream.
      const head = JSON.stringify({
        run: info,
        lineage,
        lineageNext: family.next ?? null,
        lineageCostUsd,
        ...(reconciliationPath === undefined ? {} : { reconciliationPath }),
        ...(continuedFrom === undefined ? {} : { continuedFrom }),
        ...(continuedAs === undefined ? {} : { continuedAs }),
        ...(forkedFrom === undefined ? {} : { forkedFrom }),
        chain,
        omitted: omitted ?? null,
        next: next ?? null
      }, null, 2)
      yield* Out.stdoutPaced(`${head.slice(0, head.lastIndexOf("}")).trimEnd()},\n  "events": [`)
      let first = true
      yield* Stream.runForEachChunk(events, (page) => {
        const text = Chunk.toReadonlyArray(page).map((e) => {
          const line = `${first ? "" : ","}\n    ${JSON.stringify(e)}`
          first = false
          return line
        }).join("")
        return Out.stdoutPaced(text)
      })
      yield* Out.stdoutPaced("\n  ]\n}\n")
      return code
    }
    const s = Out.outStyle()
    const out: Array<string> = [
      ...(chain.ok ? [] : [tampered(s, chain), ""]),
      `${T.icon(s, info.status)} ${s.bold(`run ${info.runId}`)}  ${info.status}`,
      `  workflow  ${info.workflow}   version ${info.version}`,
      `  tenant    ${info.tenantId}`,
      `  created   ${T.timestamp(info.createdAt)}   updated ${T.timestamp(info.updatedAt)}   took ${T.duration(info.updatedAt - info.createdAt)}`,
      `  events    ${info.headSeq}   head ${s.dim(info.headHash)}`,
      family.runs.length > 1
        ? `  cost      $${info.costUsd.toFixed(6)} this run   $${lineageCostUsd.toFixed(6)} its tree of ${family.next === undefined ? "" : "more than "}${family.runs.length} runs (charged to the root's budget)`
        : `  cost      $${info.costUsd.toFixed(6)}`,
      ...(reconciliationPath === undefined ? [] : (() => {
        const { todo, where } = Hints.waiting(args, info.runId, reconciliationPath, info.workflow === PlanRunner.WORKFLOW)
        return [`  waits on  ${where}`, `            ${s.dim(todo)}`]
      })()),
      ...(continuedFrom === undefined ? [] : [`  continues ${continuedFrom.runId}   ${s.dim(`(run ${continuedFrom.generation + 1} of chain ${continuedFrom.chainRunId})`)}`]),
      ...(continuedAs === undefined ? [] : [`  continued as ${continuedAs}   ${s.dim(`artana show-run ${continuedAs}`)}`]),
      "",
      s.bold("lineage"),
      ...renderLineage(s, lineage, info.runId),
      ...(forkedFrom === undefined ? [] : [
        `  forked from ${forkedFrom.runId} at seq ${forkedFrom.seq}${forkedFrom.overridden === undefined ? "" : ` (replaced: ${forkedFrom.overridden.map(Hints.stepName).join(", ")})`}   ${
          s.dim(Hints.readOn(args, "show-run", forkedFrom.runId, []))
        }`
      ]),
      ...(lineageMore === undefined ? [] : [`  ${s.dim(`… drawn from ${family.runs.length} of the lineage's runs (the newest, and the path to this run); the rest: ${lineageMore}`)}`]),
      "",
      s.bold("events")
    ]
    yield* Out.stdoutPaced(`${out.join("\n")}\n`)
    // A table per page, the header over the first: a page in memory, however long the run.
    let header = true
    let gap = omitted
    // Steps that ran uncontained (`containment: none`), read from each page's audit; a step whose events straddle two
    // pages is read with the page before's events of it.
    const Audit = yield* Effect.promise(() => import("@artana/sandbox/Audit"))
    const warnings = new Set<string>()
    let carried: ReadonlyArray<Event.Event> = []
    yield* Stream.runForEachChunk(events, (page) => {
      const pageEvents = [...carried, ...Chunk.toReadonlyArray(page)]
      for (const warning of Report.containmentWarnings(Audit.read(pageEvents))) warnings.add(warning)
      const lastKey = pageEvents[pageEvents.length - 1]?.stepKey
      carried = pageEvents.filter((e) => e.stepKey === lastKey)
      const rows = Chunk.toReadonlyArray(page).map((e) => [
        String(e.seq),
        `+${T.duration(e.timestamp - info.createdAt)}`,
        e.stepKey,
        e.seq === chain.firstBrokenSeq ? `${e.type} ${s.red("✗ chain broken here")}` : e.type,
        T.clip(describeEvent(e.payload))
      ])
      const firstSeq = Chunk.head(page).pipe(Option.map((e) => e.seq), Option.getOrElse(() => 0))
      // The events left out of a long run, where they would be.
      const skipped = gap !== undefined && firstSeq > gap.toSeq
        ? `${s.dim(`  … ${gap.events} events not shown (seq ${gap.fromSeq}–${gap.toSeq}): ${pageCommand(gap.fromSeq, EventStore.DEFAULT_PAGE_SIZE)}`)}\n`
        : ""
      if (skipped !== "") gap = undefined
      const table = T.table(s, ["SEQ", "AT", "STEP", "EVENT", "DETAIL"], rows, { right: [0, 1] })
      const text = `${skipped}${header ? table : table.slice(table.indexOf("\n") + 1)}\n`
      header = false
      return Out.stdoutPaced(text)
    })
    const more = next === undefined || args.limit === undefined ? [] : [s.dim(`  more: ${pageCommand(next, args.limit)}`)]
    const closing = [...more, ...[...warnings].map((w) => s.yellow(`warning: ${w}`)), ...(chain.ok ? [] : ["", tampered(s, chain)])]
    if (closing.length > 0) yield* Out.stdoutPaced(`${closing.join("\n")}\n`)
    return code
  }).pipe(Effect.provide(reading(args))))

// ------------------------------------------------------------------------------------------------- verify

const parseHead = (text: string): Effect.Effect<Verify.Head, Errors.InvalidInput> => {
  const m = /^(\d+):([0-9a-f]{64})$/.exec(text)
  return m === null
    ? Effect.fail(new Errors.InvalidInput({ what: "--head", reason: `"${text}" is not SEQ:HASH (a sequence number, a colon, a 64-digit hex hash)` }))
    : Effect.succeed({ seq: Number(m[1]), hash: m[2]! })
}

export const verify = (args: Common & { readonly run: string; readonly head: string | undefined }) =>
  Out.command(args, Effect.gen(function*() {
    const head = args.head === undefined ? undefined : yield* parseHead(args.head)
    const info = yield* Effect.flatMap(EventStore.EventStore, (store) => store.getRun(args.tenant, args.run))
    // The chain a page of READ_PAGE events at a time, as show-run and report check it: the whole log never in memory.
    const result = yield* chainOf(args, info, undefined, head)
    if (args.format === "json") yield* Out.json(result)
    else {
      const s = Out.outStyle()
      yield* Out.stdout(
        result.ok
          ? `${s.green("✓")} run ${s.bold(result.runId)}: hash chain intact, ${result.events} events, head seq ${result.headSeq} ${s.dim(result.headHash)}`
          : `${s.red("✗")} run ${s.bold(result.runId)}: hash chain broken at seq ${result.firstBrokenSeq}: ${result.reason}`
      )
      yield* waitingNote(args, info)
    }
    return result.ok ? ExitCode.Ok : ExitCode.Integrity
  }).pipe(Effect.provide(reading(args))))
