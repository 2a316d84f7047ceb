/**
 * The commands that only read the store: `report`, `list-runs`, `show-run`, `verify`. None of them creates a
 * database or writes to one.
 */
import { Errors, type Event, EventStore, Kernel, type Verify } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
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
 * The run's hash chain, checked as `artana verify` checks it (the run row's head, the audit key). `report` and
 * `show-run` print what the store holds either way, and mark a broken chain loudly and exit 6 (integrity): a log
 * changed after it was written must never read as a clean one.
 */
const chainOf = (args: Common & { readonly run: string }) =>
  Effect.flatMap(Kernel.Kernel, (kernel) => kernel.verify({ tenantId: args.tenant, runId: args.run }))

/** The mark of a broken chain, printed before and after what a command shows. */
const tampered = (s: T.Style, chain: Verify.VerifyReport): string =>
  s.red(s.bold(`✗ TAMPERED: run ${chain.runId}'s hash chain is broken at seq ${chain.firstBrokenSeq ?? "?"}: ${chain.reason ?? "unknown"}.`)) +
  "\n" + s.red(`  The log was changed after it was written: what is shown is what the store holds now, not what ran (see \`artana verify ${chain.runId}\`).`)

/** What a command prints, between two marks when the chain is broken. */
const marked = (s: T.Style, chain: Verify.VerifyReport, text: string): string =>
  chain.ok ? text : [tampered(s, chain), "", text, "", tampered(s, chain)].join("\n")

// ------------------------------------------------------------------------------------------------- report

export const report = (args: Common & { readonly run: string }) =>
  Out.command(args, Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(args.tenant, args.run)
    const events = yield* store.readEvents(args.tenant, args.run)
    // The sandbox (its audit reader) is loaded by `report` alone: the other read commands never need it.
    const Toolbox = yield* Effect.promise(() => import("./toolbox.js"))
    const built = Report.make(info, events, Toolbox.audit)
    if (built instanceof PlanRunner.NotAPlanRun) return yield* built
    const chain = yield* chainOf(args)
    if (args.format === "json") yield* Out.json({ ...Report.toJson(built), chain })
    else {
      yield* Out.stdout(marked(Out.outStyle(), chain, Report.render(built, Out.outStyle())))
      yield* waitingNote(args, info)
    }
    if (!chain.ok) return ExitCode.Integrity
    return built.status === "completed" || built.status === "failed"
      ? ExitCode.ofSteps(built.steps.map((s) => s.status))
      : ExitCode.NeedsAttention
  }).pipe(Effect.provide(reading(args))))

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
}

export const listRuns = (args: ListArgs) =>
  Out.command(args, Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const runs = yield* store.listRuns(args.tenant, { status: args.status, workflow: args.workflow, limit: args.limit })
    const paths = yield* waitingPaths(args.tenant, runs)
    // None for this tenant: perhaps the wrong --tenant. Say which tenants have runs here.
    const others = runs.length === 0 ? (yield* tenantsWithRuns).filter((t) => t.tenantId !== args.tenant) : []
    if (args.format === "json") {
      const withPaths = runs.map((r) => {
        const reconciliationPath = paths.get(r.runId)
        return reconciliationPath === undefined ? r : { ...r, reconciliationPath }
      })
      yield* Out.json({ tenantId: args.tenant, runs: withPaths, ...(runs.length === 0 ? { tenantsWithRuns: others } : {}) })
      return ExitCode.Ok
    }
    const s = Out.outStyle()
    if (runs.length === 0) {
      const filtered = args.status !== undefined || args.workflow !== undefined
      yield* Out.stdout(`no runs for tenant ${args.tenant}${args.status === undefined ? "" : ` with status ${args.status}`}${args.workflow === undefined ? "" : ` of workflow ${args.workflow}`}`)
      if (others.length > 0 && !filtered) {
        yield* Out.stdout(`tenants with runs in ${Database.describe(Database.parse(args.db))}: ${others.map((t) => `${t.tenantId} (${t.runs})`).join(", ")}`)
        yield* Out.stdout(s.dim(`  artana list-runs${Hints.options({ ...args, tenant: others[0]!.tenantId })}`))
      }
      return ExitCode.Ok
    }
    const rows = runs.map((r) => [
      r.runId,
      r.workflow,
      `${T.icon(s, r.status)} ${r.status}`,
      String(r.headSeq),
      `$${r.costUsd.toFixed(4)}`,
      T.timestamp(r.createdAt),
      T.duration(r.updatedAt - r.createdAt),
      r.parentRunId ?? ""
    ])
    yield* Out.stdout(T.table(s, ["RUN", "WORKFLOW", "STATUS", "EVENTS", "COST", "CREATED", "TOOK", "PARENT"], rows, { right: [3, 4, 6] }))
    yield* Out.stdout(s.dim(`${runs.length} run${runs.length === 1 ? "" : "s"} of tenant ${args.tenant}, newest first${runs.length === args.limit ? ` (the first ${args.limit}; --limit for more)` : ""}`))
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
      return `${p.workflow}${p.parentRunId === undefined ? "" : ` (child of ${p.parentRunId})`}`
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
      return `ticket ${p.ticket}: ${JSON.stringify(p.payload)}`
    case "BudgetExceeded":
      return `spent $${p.spentUsd} of $${p.limitUsd} (${p.phase})`
    case "RunCompleted":
      return JSON.stringify(p.output)
    case "RunFailed":
      return `${p.errorTag}: ${p.error}`
  }
}

export const showRun = (args: Common & { readonly run: string }) =>
  Out.command(args, Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(args.tenant, args.run)
    const events = yield* store.readEvents(args.tenant, args.run)
    const family = yield* store.listRuns(args.tenant, { rootRunId: info.rootRunId })
    const lineage = lineageOf(family, info.rootRunId) ?? { runId: info.runId, workflow: info.workflow, status: info.status, children: [] }
    // What the lineage spent: every run of the tree draws on the root's budget (sub-agents, tools that start runs).
    const lineageCostUsd = EventStore.lineageCostUsd(family)
    const reconciliationPath = (yield* waitingPaths(args.tenant, [info])).get(info.runId)
    const chain = yield* chainOf(args)
    const code = chain.ok ? ExitCode.Ok : ExitCode.Integrity
    if (args.format === "json") {
      yield* Out.json({ run: info, lineage, lineageCostUsd, ...(reconciliationPath === undefined ? {} : { reconciliationPath }), chain, events })
      return code
    }
    const s = Out.outStyle()
    const out: Array<string> = [
      `${T.icon(s, info.status)} ${s.bold(`run ${info.runId}`)}  ${info.status}`,
      `  workflow  ${info.workflow}`,
      `  tenant    ${info.tenantId}`,
      `  created   ${T.timestamp(info.createdAt)}   updated ${T.timestamp(info.updatedAt)}   took ${T.duration(info.updatedAt - info.createdAt)}`,
      `  events    ${info.headSeq}   head ${s.dim(info.headHash)}`,
      family.length > 1
        ? `  cost      $${info.costUsd.toFixed(6)} this run   $${lineageCostUsd.toFixed(6)} its tree of ${family.length} runs (charged to the root's budget)`
        : `  cost      $${info.costUsd.toFixed(6)}`,
      ...(reconciliationPath === undefined ? [] : (() => {
        const { todo, where } = Hints.waiting(args, info.runId, reconciliationPath, info.workflow === PlanRunner.WORKFLOW)
        return [`  waits on  ${where}`, `            ${s.dim(todo)}`]
      })()),
      "",
      s.bold("lineage"),
      ...renderLineage(s, lineage, info.runId),
      "",
      s.bold("events")
    ]
    const start = events[0]?.timestamp ?? info.createdAt
    const rows = events.map((e) => [
      String(e.seq),
      `+${T.duration(e.timestamp - start)}`,
      e.stepKey,
      e.seq === chain.firstBrokenSeq ? `${e.type} ${s.red("✗ chain broken here")}` : e.type,
      T.clip(describeEvent(e.payload))
    ])
    out.push(T.table(s, ["SEQ", "AT", "STEP", "EVENT", "DETAIL"], rows, { right: [0, 1] }))
    const Toolbox = yield* Effect.promise(() => import("./toolbox.js"))
    for (const warning of Report.containmentWarnings(Toolbox.audit(events))) out.push(s.yellow(`warning: ${warning}`))
    yield* Out.stdout(marked(s, chain, out.join("\n")))
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
    const kernel = yield* Kernel.Kernel
    const result = yield* kernel.verify({ tenantId: args.tenant, runId: args.run, head })
    const info = yield* Effect.flatMap(EventStore.EventStore, (store) => store.getRun(args.tenant, args.run))
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
