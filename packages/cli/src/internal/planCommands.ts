/**
 * `artana run`, `artana replay` and `artana reconcile`.
 */
import { Errors, EventStore, Json, Kernel, type Tenant, type Tool } from "@artana/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ExitCode from "../ExitCode.js"
import * as Plan from "../Plan.js"
import * as PlanRunner from "../PlanRunner.js"
import * as Database from "./database.js"
import * as Hints from "./hints.js"
import * as Out from "./output.js"
import * as Services from "./services.js"
import * as T from "./terminal.js"
import * as Toolbox from "./toolbox.js"

export interface Common {
  readonly db: string
  readonly tenant: string
  readonly format: Out.Format
  readonly verbose: boolean
  readonly auditKey: Redacted.Redacted<string> | undefined
}

const sha256File = (file: string) =>
  Effect.try({
    try: () => createHash("sha256").update(fs.readFileSync(file)).digest("hex"),
    catch: (e) => new Plan.PlanError({ file, kind: "unreadable", reason: `cannot read the plan: ${e instanceof Error ? e.message : String(e)}` })
  })

/**
 * Progress: on the console each step's line is printed when it ends (on a terminal, a "running" line first, replaced
 * in place); under --format json, lines go to stderr, and only when stderr is a terminal.
 */
const progress = (format: Out.Format, verb: string): PlanRunner.Observer => {
  const stream = format === "console" ? process.stdout : process.stderr
  const enabled = format === "console" || stream.isTTY === true
  const s = T.style(T.colorsFor(stream, process.env))
  const live = stream.isTTY === true
  let startedAt = 0
  const write = (text: string) => Effect.sync(() => void stream.write(text))
  return {
    started: (step, index, total) =>
      !enabled ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
        startedAt = now
        return live ? write(`  ${s.cyan("…")} ${s.dim(`[${index + 1}/${total}]`)} ${step.id} ${s.dim(step.tool)} ${s.dim(verb)}`) : Effect.void
      }),
    finished: (outcome, index, total) =>
      !enabled ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const detail = outcome.status === "ok" ? s.dim(`${T.duration(now - startedAt)}  ${outcome.outputHash.slice(0, 12)}`) : (outcome.status === "denied" ? s.red : s.yellow)(outcome.error ?? outcome.status)
        const line = `  ${T.icon(s, outcome.status)} ${s.dim(`[${index + 1}/${total}]`)} ${outcome.id} ${s.dim(outcome.tool)}  ${detail}\n`
        return write(live ? `\r\u001b[2K${line}` : line)
      })
  }
}

export interface RunArgs extends Common {
  readonly plan: string
  readonly policy: string
  readonly runId: string | undefined
}

/** `artana run PLAN --policy POLICY`: everything is checked before the store is opened; bad input writes nothing. */
export const run = (args: RunArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const toolbox = yield* Toolbox.fromPolicyFile(args.policy, args.runId === undefined ? undefined : yield* loggedMcpTools(args, args.runId), args.tenant)
    const registry = { get: (name: string) => toolbox.tools.find((t) => t.name === name), list: () => toolbox.tools }
    const plan = yield* Effect.mapError(Plan.load(args.plan, { tools: registry }), (e) => {
      // A tool the policy's MCP servers offer but the policy withholds (not pinned, changed since pinned): say why.
      const withheld = e.kind === "unknown_tool" ? toolbox.withheld.find((w) => e.reason.startsWith(`unknown tool "${w.tool}"`)) : undefined
      return withheld === undefined
        ? e
        : new Plan.PlanError({ file: e.file, kind: e.kind, line: e.line, column: e.column, path: e.path, reason: `tool "${withheld.tool}" is withheld: ${withheld.reason}` })
    })
    const planFile = { file: path.resolve(args.plan), sha256: yield* sha256File(args.plan) }
    const tenant = yield* Services.tenant(args.tenant, toolbox.tools)
    const db = Database.parse(args.db)
    const s = Out.outStyle()
    if (args.format === "console") {
      yield* Out.stdout(`${s.bold("artana run")} ${args.plan} ${s.dim(`(${plan.steps.length} step${plan.steps.length === 1 ? "" : "s"}, on_error: ${plan.onError}) under ${args.policy}, store ${Database.describe(db)}, tenant ${tenant.tenantId}`)}`)
    }
    // The id is fixed here (a new UUID unless given) so that an interruption can name the run.
    const runId = args.runId ?? crypto.randomUUID()
    const input: PlanRunner.Input = {
      plan,
      planFile,
      ...(toolbox.policy === undefined ? {} : { policy: toolbox.policy }),
      ...(toolbox.mcp === undefined ? {} : { mcp: toolbox.mcp })
    }
    const outcome = yield* PlanRunner.run({ runId, tenant, input, observer: progress(args.format, "running") }).pipe(
      Effect.onInterrupt(() => whenInterrupted(args, { runId, tenant, input, tools: toolbox.tools })),
      Effect.provide(Services.kernel({
        store: Database.layer(db, { create: true }),
        tools: toolbox.tools,
        middleware: toolbox.middleware,
        workflows: [PlanRunner.workflow({ tools: registry })],
        auditKey: args.auditKey
      }))
    )
    const code: ExitCode.ExitCode = outcome.status === "failed"
      ? ExitCode.ofTag(outcome.failure?.tag ?? "")
      : outcome.status === "completed"
      ? ExitCode.ofSteps(outcome.steps.map((st) => st.status))
      : ExitCode.NeedsAttention
    if (args.format === "json") {
      yield* Out.json({ runId: outcome.runId, status: outcome.status, ...(outcome.approval === undefined ? {} : { approval: outcome.approval }) })
    } else {
      const counts = ["ok", "denied", "failed"].map((k) => `${outcome.steps.filter((st) => st.status === k).length} ${k}`).join(", ")
      const why = outcome.failure === undefined ? "" : `: ${outcome.failure.message}`
      yield* Out.stdout(`${T.icon(s, outcome.status)} run ${s.bold(outcome.runId)} ${outcome.status}${why} (${counts})`)
      if (outcome.approval !== undefined) yield* Out.stdout(Hints.approval(args, outcome.approval))
      if (outcome.inDoubt !== undefined) {
        yield* Out.stdout(`  step ${s.bold(Hints.stepName(outcome.inDoubt.stepKey))} (${outcome.inDoubt.tool}) is in doubt: it may or may not have acted, and is never run again silently`)
        yield* Out.stdout(`  check what happened, then settle it: ${Hints.reconcile(args, outcome.runId, outcome.inDoubt.stepKey)}`)
      }
      yield* Out.stdout(s.dim(`  artana report ${outcome.runId}${Hints.options(args)}   # the full report`))
    }
    return code
  })))

/**
 * The MCP tool list a run logged when it started, if it exists and has one: a continued run keeps the tools it was
 * listed (read-only; any problem with the store is reported later, where the run is opened to be written).
 */
const loggedMcpTools = (args: Common, runId: string) =>
  Effect.scoped(Effect.gen(function*() {
    const db = Database.parse(args.db)
    if (db.kind === "sqlite" && !fs.existsSync(db.filename)) return undefined
    const opened = yield* Layer.build(Database.layer(db, { create: false, readOnly: true }))
    const events = yield* Context.get(opened, EventStore.EventStore).readEvents(args.tenant, runId, 1, 1)
    return PlanRunner.loggedInput(events)?.mcp
  })).pipe(Effect.orElseSucceed(() => undefined))

/** The step a run's log shows requested and not finished: the call this process was making when it stopped. */
/**
 * The step a run was in when it stopped, if its call has no outcome logged: its last request, and whether anything
 * after it ended that step (read back from the head, then on from the request: a plan runs one step at a time).
 */
const unfinishedStep = (store: EventStore.Service, tenantId: string, runId: string) =>
  Effect.gen(function*() {
    const requested = yield* EventStore.lastEvent(store, tenantId, runId, (e) => e.payload._tag === "ToolRequested")
    if (requested === undefined || requested.payload._tag !== "ToolRequested") return undefined
    const ended = yield* EventStore.stream(store, tenantId, runId, { fromSeq: requested.seq + 1 }).pipe(
      Stream.filter((e) =>
        e.stepKey === requested.stepKey && (e.payload._tag === "ToolCompleted" || e.payload._tag === "ToolFailed" || e.payload._tag === "PolicyDenied")
      ),
      Stream.runHead
    )
    return Option.isSome(ended) ? undefined : { stepKey: requested.stepKey, tool: requested.payload.tool, arguments: requested.payload.arguments }
  })

interface Interrupted {
  readonly runId: string
  readonly tenant: Tenant.TenantContext
  readonly input: PlanRunner.Input
  readonly tools: ReadonlyArray<Tool.Tool>
}

/**
 * What `artana run` says when it is interrupted (Ctrl-C, SIGTERM) and the run is left: the step it was in, and
 * what to do. A step whose tool is not idempotent (a shell command) is in doubt: the run is recovered at once as
 * `artana run --run-id` would recover it (finished steps come from the log, no tool runs, the step is marked
 * `needs_reconciliation`), so the printed `artana reconcile` works as printed; `--force` in it because this process
 * stopped the call (the sandbox kills the command's process group). An idempotent step is simply run again by
 * `artana run --run-id`.
 */
const whenInterrupted = (args: RunArgs, run: Interrupted) => {
  const resume = Hints.continueRun(args, run.runId, args.plan, args.policy)
  const explain = Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const step = yield* unfinishedStep(store, run.tenant.tenantId, run.runId)
    if (step === undefined) return `interrupted: run ${run.runId} stopped between steps, nothing is in doubt; continue it: ${resume}`
    const name = Hints.stepName(step.stepKey)
    const call = `${step.tool} ${T.clip(step.arguments, 120)}`
    if (run.tools.find((t) => t.name === step.tool)?.idempotent === true) {
      return `interrupted during step ${name} (${call}), which is safe to repeat (${step.tool} is idempotent); continue the run, which runs it again: ${resume}`
    }
    const recovered = yield* PlanRunner.run({ runId: run.runId, tenant: run.tenant, input: run.input })
    if (recovered.status !== "needs_reconciliation") return `interrupted; run ${run.runId} is ${recovered.status}: ${resume}`
    return [
      `interrupted during step ${name} (${call}): the step is in doubt. Its call was stopped and may or may not have acted,`,
      `so run ${run.runId} needs reconciliation: the step is never run again silently. Check what happened, then settle it`,
      "(--force: this process stopped the call):",
      `  ${Hints.reconcile(args, run.runId, step.stepKey, true)}`,
      `then continue the plan: ${resume}`
    ].join("\n")
  }).pipe(Effect.catchAllCause(() => Effect.succeed(`interrupted; run ${run.runId} stays resumable: ${resume}`)))
  return Effect.flatMap(explain, (message) =>
    args.format === "json"
      ? Out.stderr(JSON.stringify({ error: { tag: "Interrupted", message, exitCode: 130 } }))
      // On a terminal the step's "running" line has no line end yet.
      : Out.stderr(`${process.stdout.isTTY === true ? "\n" : ""}${Out.errStyle().yellow("interrupted")}${message.slice("interrupted".length)}`))
}

export interface ReplayArgs extends Common {
  readonly run: string
  readonly plan: string | undefined
}

/** `artana replay RUN [--plan PLAN]`: the kernel's replay over the log; no tool runs; hashes compared. */
export const replay = (args: ReplayArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const db = Database.parse(args.db)
    const s = Out.outStyle()
    const opened = yield* Layer.build(Database.layer(db, { create: false }))
    const store = Layer.succeedContext(opened)
    const openedStore = Context.get(opened, EventStore.EventStore)
    const info = yield* openedStore.getRun(args.tenant, args.run)
    if (info.status === "needs_reconciliation") {
      const path = yield* EventStore.reconciliationPath(openedStore, args.tenant, args.run)
      return yield* new Hints.RunNeedsReconciliation({ runId: args.run, ...Hints.waiting(args, args.run, path, info.workflow === PlanRunner.WORKFLOW) })
    }
    // The plan is in the run's first event: the replay reads the rest.
    const events = yield* openedStore.readEvents(args.tenant, args.run, 1, 1)
    const input = PlanRunner.loggedInput(events)
    if (input === undefined) {
      const started = events[0]?.payload
      return yield* new PlanRunner.NotAPlanRun({ runId: args.run, workflow: started?._tag === "RunStarted" ? started.workflow : "unknown" })
    }
    // The tools the run was logged with (rebuilt from the logged policy), every handler disabled.
    const toolbox = yield* Toolbox.fromRecord(input.policy, input.mcp)
    const tools = toolbox.tools.map(Services.replayOnly)
    const registry = { get: (name: string) => tools.find((t) => t.name === name), list: () => tools }
    const plan = args.plan === undefined ? undefined : yield* Plan.load(args.plan, { tools: registry })
    if (args.format === "console") {
      yield* Out.stdout(`${s.bold("artana replay")} ${args.run} ${s.dim(`against ${args.plan ?? "the plan in its log"}; no tool runs, results come from the log`)}`)
    }
    const outcome = yield* PlanRunner.replay({ tenantId: args.tenant, runId: args.run, plan, observer: progress(args.format, "replaying") }).pipe(
      Effect.provide(Services.kernel({ store, tools, workflows: [PlanRunner.workflow({ tools: registry })], auditKey: args.auditKey }))
    )
    if (args.format === "json") {
      yield* Out.json({
        runId: outcome.runId,
        status: outcome.status,
        matches: true,
        steps: outcome.steps.map((st) => ({ id: st.id, tool: st.tool, status: st.status, outputHash: st.outputHash, loggedOutputHash: st.loggedOutputHash ?? null }))
      })
    } else {
      yield* Out.stdout(`${s.green("✓")} replay of run ${s.bold(outcome.runId)} matches its log: ${outcome.steps.length} step${outcome.steps.length === 1 ? "" : "s"}, every output hash equal to the logged one (run ${outcome.status})`)
    }
    return ExitCode.Ok
  })))

export interface ReconcileArgs extends Common {
  readonly run: string
  readonly step: string
  /** The step's result as JSON text: the call happened. */
  readonly completed: string | undefined
  /** Why the call did not happen or failed: the step failed. */
  readonly failed: string | undefined
  /** Settle it although the call may still be running (see `Kernel.reconcile`). */
  readonly force: boolean
}

const badInput = (what: string, reason: string) => new Errors.InvalidInput({ what, reason })

/**
 * `artana reconcile RUN --step ID (--completed JSON | --failed MESSAGE)`: settles the step a crash left in doubt
 * (a non-idempotent call whose request is logged and whose outcome is not), as a person who checked what really
 * happened says. `--step` must name that step (a plan step's id, or any run's step key), so a stale command settles
 * nothing. A plan run's result is checked against its tool's result schema first. The kernel's `reconcile` writes
 * the outcome (`reconciled: true`); `artana run PLAN --run-id RUN` then continues the plan after it. While the call
 * may still be running (its tool's timeout has not passed since its request), nothing is written and the command
 * exits 8 saying until when, unless `--force` says the person knows it has stopped.
 */
export const reconcile = (args: ReconcileArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    if ((args.completed === undefined) === (args.failed === undefined)) {
      return yield* badInput("outcome", "give exactly one of --completed JSON (the call happened: its result) or --failed MESSAGE (it did not happen, or it failed: why)")
    }
    let outcome: Kernel.ReconcileOutcome
    if (args.completed !== undefined) {
      let parsed: unknown
      try {
        parsed = JSON.parse(args.completed)
      } catch (e) {
        return yield* badInput("--completed", `not JSON (${e instanceof Error ? e.message : String(e)}); quote it for the shell, e.g. --completed '{"exitCode":0}'`)
      }
      const json = Json.fromUnknown(parsed)
      if (!json.ok) return yield* badInput("--completed", json.error)
      outcome = { ok: true, result: json.json }
    } else {
      const reason = (args.failed ?? "").trim()
      if (reason === "") return yield* badInput("--failed", "say why the call failed or did not happen")
      outcome = { ok: false, error: reason }
    }

    const db = Database.parse(args.db)
    const opened = yield* Layer.build(Database.layer(db, { create: false }))
    const store = Context.get(opened, EventStore.EventStore)
    const info = yield* store.getRun(args.tenant, args.run)
    // The step in doubt is the run's last marker, and its request comes before it: both read back from the head.
    const required = yield* EventStore.lastEvent(store, args.tenant, args.run, (e) => e.payload._tag === "ReconciliationRequired", { throughSeq: info.headSeq })
    if (info.status !== "needs_reconciliation" || required === undefined || required.payload._tag !== "ReconciliationRequired") {
      return yield* badInput("RUN", `run ${args.run} is ${info.status}: only a run in needs_reconciliation has a step to settle`)
    }
    const key = required.stepKey
    const tool = required.payload.tool
    const id = Plan.stepIdOf(key) ?? key
    const requested = yield* EventStore.lastEvent(store, args.tenant, args.run, (e) => e.stepKey === key && e.payload._tag === "ToolRequested", { throughSeq: required.seq })
    // Arguments can be long (a file's content): the message shows their start.
    const call = requested?.payload._tag === "ToolRequested" ? `${tool} ${T.clip(requested.payload.arguments, 120)}` : tool
    if (args.step !== id && args.step !== key) {
      return yield* badInput("--step", `"${args.step}" is not the step in doubt: run ${args.run} waits on step "${id}" (${call})`)
    }
    // A plan run's tools are known (rebuilt from its logged policy): the result must be one its tool can return.
    const input = PlanRunner.loggedInput(yield* store.readEvents(args.tenant, args.run, 1, 1))
    const toolbox = input === undefined ? undefined : yield* Toolbox.fromRecord(input.policy, input.mcp)
    // It is logged as the tool would have returned it (fields the tool does not have are dropped).
    if (toolbox !== undefined && outcome.ok) {
      const known = toolbox.tools.find((t) => t.name === tool)
      if (known !== undefined) {
        const checked = Either.flatMap(known.decodeResult(outcome.result), (value) => known.encodeResult(value))
        if (Either.isLeft(checked)) return yield* badInput("--completed", `not a result ${tool} returns: ${checked.left.reason}`)
        outcome = { ok: true, result: checked.right }
      }
    }
    // The kernel checks the step again against the log it writes to: a run that moved on since settles nothing.
    // With the plan's tools, the kernel knows the tool's timeout, and refuses a call that may still be running.
    yield* Effect.flatMap(Kernel.Kernel, (kernel) => kernel.reconcile({ tenantId: args.tenant, runId: args.run, stepKey: key, outcome, force: args.force })).pipe(
      Effect.provide(Services.kernel({ store: Layer.succeedContext(opened), auditKey: args.auditKey, tools: toolbox?.tools }))
    )
    const settled = outcome.ok ? "completed" : "failed"
    if (args.format === "json") {
      yield* Out.json({ runId: args.run, step: id, stepKey: key, tool, outcome: settled, status: "running" })
    } else {
      const s = Out.outStyle()
      yield* Out.stdout(`${s.green("✓")} step ${s.bold(id)} of run ${s.bold(args.run)} (${call}) settled as ${settled}`)
      yield* Out.stdout(s.dim(input === undefined
        ? "  the run is resumable: continue it with the application that runs its workflow"
        : `  ${Hints.continueRun(args, args.run)}   # continue the plan after it`))
    }
    return ExitCode.Ok
  })))
