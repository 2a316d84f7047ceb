/**
 * Artana in one place. `Artana.layer(options)` builds the whole runtime (store, model, tools, workflows, middleware,
 * audit key) for Effect code; `Artana.chat`, `Artana.run`, `Artana.resume`, ... are its operations as functions of
 * the `Kernel` service (as `@effect/ai`'s `LanguageModel.generateText` is one of its `LanguageModel`); `Artana.create(options)`
 * is the Promise client over exactly that layer, with the same option names.
 *
 * ```ts
 * const artana = Artana.create({ store: SqliteStore.layer({ filename: "artana.db" }), model, tools: [getBalance] })
 * const result = await artana.chat({ tenant: { tenantId: "acme", budgetUsdLimit: 1 }, prompt: "Balance of acc-1?" })
 * if (result.status === "completed") console.log(result.output)
 * await artana.close()
 * ```
 *
 * The governed order, fixed: the kernel removes the tools the tenant may not use and refuses a run over its budget,
 * then `middleware` runs in the order given (`before*` hooks first to last), then the kernel prices the call and
 * refuses it when its estimate passes the budget; the answer goes back through `after*` hooks last to first, and the
 * kernel adds its cost to the spend. Capabilities and budget need no middleware; the PII scrubber is an explicit
 * entry (`Pii.middleware()` from `@artana/middleware`), first in the list.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Approval from "./Approval.js"
import * as Errors from "./Errors.js"
import type { Event, EventPayload, RunInfo } from "./Event.js"
import * as EventStore from "./EventStore.js"
import type * as Fork from "./Fork.js"
import type * as Json from "./Json.js"
import * as Kernel from "./Kernel.js"
import type { Lease } from "./Lease.js"
import type * as Live from "./Live.js"
import * as Middleware from "./Middleware.js"
import type { ModelPort } from "./ModelPort.js"
import type * as Pricing from "./Pricing.js"
import type * as Register from "./Register.js"
import { type Input as TenantInput, TenantContext } from "./Tenant.js"
import type { Tool } from "./Tool.js"
import * as ToolRegistry from "./ToolRegistry.js"
import type { Head, VerifyReport } from "./Verify.js"
import * as Workflow from "./Workflow.js"

// ------------------------------------------------------------------------------------------------ the runtime

/** What `Artana.layer` provides: the kernel and the services it is built from. */
export type Services = Kernel.Kernel | EventStore.EventStore | ModelPort | ToolRegistry.ToolRegistry | Middleware.Middleware

/** The runtime's options, the same for `Artana.layer` and `Artana.create`; pricing as in `Kernel.Options`. */
export interface Options extends Pricing.Options {
  /** Where the log lives (the state kernel): `SqliteStore.layer(...)`, `PgStore.layer(...)`; in memory when absent. */
  readonly store?: Layer.Layer<EventStore.EventStore, unknown> | undefined
  /** The model: `OpenAiModel.layer(...)`, `ScriptedModel.layer(...)`. */
  readonly model: Layer.Layer<ModelPort, unknown>
  /** The tools the kernel can call by name, or a `ToolRegistry` layer of your own (the tool kernel). */
  readonly tools?: ReadonlyArray<Tool> | Layer.Layer<ToolRegistry.ToolRegistry, unknown> | undefined
  /** The workflows `resume` (and workers, and replay by name) can find by name. */
  readonly workflows?: ReadonlyArray<Workflow.Any> | undefined
  /**
   * The middleware chain, in order (see the governed order above); an entry may be an Effect that needs the
   * ModelPort (a quota reading its tokenizer). Default: none.
   */
  readonly middleware?: ReadonlyArray<Middleware.Interceptor | Effect.Effect<Middleware.Interceptor, never, ModelPort>> | undefined
  /** HMAC key for the hash chain, kept outside the database. */
  readonly auditKey?: string | Redacted.Redacted<string> | undefined
  /** `false` turns the budget off, visibly (see `Kernel.Options.enforceBudget`). */
  readonly enforceBudget?: boolean | undefined
  /** How often an execution waiting for a signal reads its run's log (see `Kernel.Options.signalPollInterval`). */
  readonly signalPollInterval?: Duration.DurationInput | undefined
  /** How long an execution waits for a signal in its process before the run pauses (`Kernel.Options.signalWaitHold`). */
  readonly signalWaitHold?: Duration.DurationInput | undefined
  /** How long a model call's estimate stays held in a shared store when nothing releases it (`Kernel.Options.budgetHoldTtl`). */
  readonly budgetHoldTtl?: Duration.DurationInput | undefined
  /**
   * More services the workflows read when they run (workflow code runs with the kernel's services and the kernel
   * itself), e.g. the `MemoryStore` of `@artana/agent`'s agents: layers with no requirements of their own.
   */
  readonly services?: ReadonlyArray<Layer.Layer<never, unknown>> | undefined
}

const isToolList = (tools: ReadonlyArray<Tool> | Layer.Layer<ToolRegistry.ToolRegistry, unknown>): tools is ReadonlyArray<Tool> =>
  Array.isArray(tools)

/**
 * The whole runtime as one layer: the store, the model, the tools, the middleware chain in the governed order and the
 * kernel over them. Replace a part by giving its layer (`store`, `model`, `tools`).
 *
 * @example
 * const program = Artana.chat({ tenant, prompt: "Balance of acc-1?" }).pipe(
 *   Effect.provide(Artana.layer({ store: SqliteStore.layer({ filename: "artana.db" }), model, tools: [getBalance] }))
 * )
 */
export const layer = (options: Options): Layer.Layer<Services, unknown> => {
  const tools = options.tools === undefined || isToolList(options.tools) ? ToolRegistry.layer(options.tools ?? []) : options.tools
  const ports = Layer.mergeAll(
    options.store ?? EventStore.layerMemory,
    options.model,
    tools,
    // The same model layer object twice: Effect builds it once and shares it.
    Middleware.layer(options.middleware ?? []).pipe(Layer.provide(options.model)),
    ...(options.services ?? [])
  )
  const auditKey = options.auditKey
  const kernel = Kernel.layer({
    workflows: options.workflows,
    auditKey: auditKey === undefined || Redacted.isRedacted(auditKey) ? auditKey : Redacted.make(auditKey),
    prices: options.prices,
    unknownModelPrice: options.unknownModelPrice,
    defaultMaxOutputTokens: options.defaultMaxOutputTokens,
    enforceBudget: options.enforceBudget,
    signalPollInterval: options.signalPollInterval,
    signalWaitHold: options.signalWaitHold,
    budgetHoldTtl: options.budgetHoldTtl
  })
  return Layer.provideMerge(kernel, ports)
}

// ------------------------------------------------------------------------------------------------ tenants

const decodeTenant = Schema.decodeUnknownEither(TenantContext)

/**
 * A `TenantContext` from a tenant given as a value or as plain data (`Tenant.Input`); a bad one is `InvalidTenant`,
 * naming the field. Every operation here that takes a tenant checks it so.
 */
export const tenant = (input: TenantContext | TenantInput): Effect.Effect<TenantContext, Errors.InvalidTenant> => {
  if (input instanceof TenantContext) return Effect.succeed(input)
  if (!Predicate.isRecord(input)) {
    return Effect.fail(new Errors.InvalidTenant({ reason: `expected an object, got ${input === null ? "null" : typeof input}` }))
  }
  const decoded = decodeTenant({ ...input, capabilities: input.capabilities ?? [] }, { onExcessProperty: "error" })
  if (Either.isRight(decoded)) return Effect.succeed(decoded.right)
  const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
  const where = issue === undefined || issue.path.length === 0 ? "" : `${issue.path.join(".")}: `
  return Effect.fail(new Errors.InvalidTenant({ reason: `${where}${issue?.message ?? decoded.left.message}` }))
}

// ------------------------------------------------------------------------------------------------ operations

/** A run's options: `Kernel.StartOptions` with a tenant that may be plain data. */
export interface RunOptions<I> {
  /** Id of the run; a new UUID when absent. Running an existing id continues that run (a crashed run resumes). */
  readonly runId?: string | undefined
  readonly tenant: TenantContext | TenantInput
  readonly input: I
  /** The run that started this one (its lineage and budget). */
  readonly parentRunId?: string | undefined
  /** The caller's hold on the run (a worker's lease): no tool handler starts once it is lost. */
  readonly lease?: Lease | undefined
}

/** Runs a workflow durably (or continues the run `runId`): `Kernel.execute`. */
export const run = <I, O, E>(
  workflow: Workflow.Workflow<I, O, E>,
  options: RunOptions<I>
): Effect.Effect<Kernel.RunResult<O>, E | Kernel.KernelError | Errors.InvalidTenant, Kernel.Kernel> =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    return yield* kernel.execute(workflow, { ...options, tenant: yield* tenant(options.tenant) })
  })

/** The options of a chat run: a `prompt` (the user's message), `messages` before it, or both. */
export interface ChatOptions<A, I = unknown> extends Workflow.ChatOptions<A, I> {
  readonly runId?: string | undefined
  readonly tenant: TenantContext | TenantInput
}

/** A run that did not complete in this execution: paused for a person, or a tool call in doubt. */
export type Stopped = Exclude<Kernel.RunResult<never>, { readonly status: "completed" }>

/** A completed chat: its typed answer is `output`, beside the conversation, usage and cost. */
export interface ChatCompleted<A> extends Workflow.ChatResult<A> {
  readonly status: "completed"
  readonly runId: string
}

/** How a chat run ended, when it did not fail. */
export type ChatResult<A> = ChatCompleted<A> | Stopped

/** A run of one chat (model steps and the tool calls they ask for, until the answer decodes): `Kernel.chat`, flat. */
export const chat = <A = string, I = unknown>(
  options: ChatOptions<A, I>
): Effect.Effect<ChatResult<A>, Workflow.ChatError | Kernel.KernelError | Errors.InvalidTenant | Errors.InvalidInput, Kernel.Kernel> =>
  Effect.gen(function*() {
    const { tenant: given, ...rest } = options
    if (Workflow.conversation(options).length === 0) return yield* new Errors.InvalidInput({ what: "chat", reason: "give a prompt, messages, or both" })
    const kernel = yield* Kernel.Kernel
    const result = yield* kernel.chat({ ...rest, tenant: yield* tenant(given) })
    if (result.status !== "completed") return result
    return { status: "completed", runId: result.runId, ...result.output } satisfies ChatCompleted<A>
  })

/** What `callTool` takes: the tool by name and its arguments as JSON. */
export interface CallToolOptions {
  readonly runId?: string | undefined
  readonly tenant: TenantContext | TenantInput
  readonly tool: string
  readonly args: Json.Json
}

/** A run of one tool call, with arguments given by code: `Kernel.callTool`. */
export const callTool = (options: CallToolOptions): Effect.Effect<Kernel.RunResult<Json.Json>, Workflow.ToolCallError | Kernel.KernelError | Errors.InvalidTenant, Kernel.Kernel> =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    return yield* kernel.callTool({ ...options, tenant: yield* tenant(options.tenant) })
  })

/**
 * Resumes a paused run with a person's response (or a crashed run): `Kernel.resume`. Given the run's `workflow`, the
 * result is typed by it, and a run that failed fails again with the workflow's declared error; without it, the
 * workflow is found by name.
 */
export function resume<I, O, E>(
  run: Kernel.ResumeOptions & { readonly workflow: Workflow.Workflow<I, O, E> }
): Effect.Effect<Kernel.RunResult<O>, E | Kernel.KernelError, Kernel.Kernel>
export function resume(run: Kernel.ResumeOptions): Effect.Effect<Kernel.RunResult<Register.ByNameOutput>, Register.ByNameError | Kernel.KernelError, Kernel.Kernel>
export function resume(
  run: Kernel.ResumeOptions & { readonly workflow?: Workflow.Any }
): Effect.Effect<Kernel.RunResult<unknown>, unknown, Kernel.Kernel> {
  const { workflow, ...ref } = run
  return Effect.flatMap(Kernel.Kernel, (k) => (workflow === undefined ? k.resume(ref) : k.resume({ ...ref, workflow })))
}

/** Re-runs the code over the log, executing and writing nothing: `Kernel.replay`. */
export const replay = <I, O, E>(
  workflow: Workflow.Workflow<I, O, E>,
  run: Kernel.RunRef
): Effect.Effect<Kernel.RunResult<O>, E | Kernel.KernelError, Kernel.Kernel> => Effect.flatMap(Kernel.Kernel, (k) => k.replay(workflow, run))

/** What `reconcile` takes: the run, what really happened, and optionally the step checked and `force`. */
export interface ReconcileOptions extends Kernel.RunRef {
  readonly outcome: Kernel.ReconcileOutcome
  /** The step the caller checked; another step in doubt is `InvalidRunState`, and nothing is written. */
  readonly stepKey?: string | undefined
  /** Settle it even while the call may still be running where it started. */
  readonly force?: boolean | undefined
}

/** Settles a tool call in doubt: `Kernel.reconcile`. */
export const reconcile = (options: ReconcileOptions): Effect.Effect<void, Kernel.KernelError | Errors.StepMayBeRunning, Kernel.Kernel> =>
  Effect.flatMap(Kernel.Kernel, (k) => k.reconcile(options))

/**
 * Delivers a durable message to a run (`Kernel.signal`): `ctx.waitForSignal(name, schema)` in its code takes it. A run
 * that ended refuses it (`SignalRefused`); another tenant's run is `RunNotFound`.
 *
 * @example
 * yield* Artana.signal({ tenantId: "acme", runId: "order-7", name: "decision", payload: { approve: true } })
 */
export const signal = (request: Kernel.SignalRequest): Effect.Effect<Kernel.SignalReceipt, Kernel.SignalError, Kernel.Kernel> =>
  Effect.flatMap(Kernel.Kernel, (k) => k.signal(request))

// ------------------------------------------------------------------------------------------------ approvals

/** The tenant's pending approvals, filtered by run, tool or age: `Kernel.approvals`. */
export const approvals = (
  filter: Approval.ApprovalsFilter
): Effect.Effect<ReadonlyArray<Approval.PendingApproval>, Errors.StoreError | Errors.LogTampered, Kernel.Kernel> =>
  Effect.flatMap(Kernel.Kernel, (k) => k.approvals(filter))

/** The inbox a page at a time, the longest waiting first: `Kernel.approvalsPage` (`{ approvals, next }`; pass `next` as `after`). */
export const approvalsPage = (
  filter: Approval.ApprovalsFilter
): Effect.Effect<Approval.ApprovalsPage, Errors.StoreError | Errors.LogTampered | Errors.InvalidInput, Kernel.Kernel> =>
  Effect.flatMap(Kernel.Kernel, (k) => k.approvalsPage(filter))

/** Records a decision without continuing the run (`Kernel.decideApproval`): for runs a worker drives, or another process resumes. */
export const decide = (decision: Approval.DecideRequest): Effect.Effect<Approval.Decided, Approval.DecideError, Kernel.Kernel> =>
  Effect.flatMap(Kernel.Kernel, (k) => k.decideApproval(decision))

/** What `approve` and `reject` take besides the decision: the run's workflow, to type the result (else found by name). */
interface Continue<W> {
  readonly workflow?: W | undefined
}

/** `approve`'s options: the approval, who approves, and optionally edited arguments (a JSON value). */
export type ApproveOptions<W = Workflow.Any> = Approval.DecisionRef & Continue<W> & {
  readonly arguments?: Json.Json | undefined
  /** The tool to check edited arguments against, when the kernel's registry does not hold it. */
  readonly tool?: Tool | undefined
}

/** `reject`'s options: the approval, who rejects, and why (the model sees it as the call's result). */
export type RejectOptions<W = Workflow.Any> = Approval.DecisionRef & Continue<W> & { readonly reason: string }

const decideAndResume = (decision: Approval.DecideRequest, workflow: Workflow.Any | undefined) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const decided = yield* kernel.decideApproval(decision)
    const ref = { tenantId: decision.tenantId, runId: decided.runId }
    return yield* (workflow === undefined ? kernel.resume(ref) : kernel.resume({ ...ref, workflow }))
  })

/**
 * Approves a pending tool call and continues its run with it: `decide`, then `resume` (the handler runs with the
 * approved arguments; an agent or chat loop goes on). Edited `arguments` are checked against the tool's parameters
 * first: invalid ones are refused (`InvalidToolArguments`) and nothing is written. The decision is written before the
 * run resumes: a kernel that does not know the run's workflow (neither registered nor given) then fails with
 * `WorkflowNotFound`, and the run goes on wherever it is resumed (a chat: `Artana.chat` again under its run id).
 */
export function approve<I, O, E>(
  options: ApproveOptions<Workflow.Workflow<I, O, E>> & { readonly workflow: Workflow.Workflow<I, O, E> }
): Effect.Effect<Kernel.RunResult<O>, E | Kernel.KernelError | Approval.DecideError, Kernel.Kernel>
export function approve(
  options: ApproveOptions
): Effect.Effect<Kernel.RunResult<Register.ByNameOutput>, Register.ByNameError | Kernel.KernelError | Approval.DecideError, Kernel.Kernel>
export function approve(options: ApproveOptions): Effect.Effect<Kernel.RunResult<unknown>, unknown, Kernel.Kernel> {
  const { workflow, arguments: args, tool, ...ref } = options
  return decideAndResume({ ...ref, decision: "approve", ...(args === undefined ? {} : { arguments: args }), ...(tool === undefined ? {} : { tool }) }, workflow)
}

/** Rejects a pending tool call and continues its run: the model sees `ApprovalRejected` (with `reason`) as the call's result. */
export function reject<I, O, E>(
  options: RejectOptions<Workflow.Workflow<I, O, E>> & { readonly workflow: Workflow.Workflow<I, O, E> }
): Effect.Effect<Kernel.RunResult<O>, E | Kernel.KernelError | Approval.DecideError, Kernel.Kernel>
export function reject(
  options: RejectOptions
): Effect.Effect<Kernel.RunResult<Register.ByNameOutput>, Register.ByNameError | Kernel.KernelError | Approval.DecideError, Kernel.Kernel>
export function reject(options: RejectOptions): Effect.Effect<Kernel.RunResult<unknown>, unknown, Kernel.Kernel> {
  const { workflow, reason, ...ref } = options
  return decideAndResume({ ...ref, decision: "reject", reason }, workflow)
}

/** Checks a run's hash chain: `Kernel.verify`. */
export const verify = (
  run: Kernel.RunRef & { readonly head?: Head | undefined }
): Effect.Effect<VerifyReport, Errors.RunNotFound | Errors.StoreError, Kernel.Kernel> => Effect.flatMap(Kernel.Kernel, (k) => k.verify(run))

/** A run's events, verified: `Kernel.readEvents`. */
export const readEvents = (
  run: Kernel.RunRef
): Effect.Effect<ReadonlyArray<Event>, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered, Kernel.Kernel> =>
  Effect.flatMap(Kernel.Kernel, (k) => k.readEvents(run))

/** The run's record (status, cost, head, lineage). */
export const getRun = (run: Kernel.RunRef): Effect.Effect<RunInfo, Errors.RunNotFound | Errors.StoreError, EventStore.EventStore> =>
  Effect.flatMap(EventStore.EventStore, (s) => s.getRun(run.tenantId, run.runId))

/** The tenant's runs. */
export const listRuns = (
  tenantId: string,
  filter?: EventStore.ListRunsFilter
): Effect.Effect<ReadonlyArray<RunInfo>, Errors.StoreError, EventStore.EventStore> =>
  Effect.flatMap(EventStore.EventStore, (s) => s.listRuns(tenantId, filter))

/**
 * The tenant's runs a page at a time (`EventStore.listRunsPage`): pass the page's `next` as `after` for the one that
 * follows, with the same filter; each page reads an index, however many runs the store keeps.
 */
export const listRunsPage = (
  tenantId: string,
  filter?: EventStore.ListRunsPageFilter
): Effect.Effect<EventStore.RunsPage, Errors.StoreError | Errors.InvalidInput, EventStore.EventStore> =>
  Effect.flatMap(EventStore.EventStore, (s) => s.listRunsPage(tenantId, filter))

/** Where a run stands, read from its log without running anything. */
export type RunState =
  /** Started and not settled: running somewhere, or left by a crash (`run` or `resume` continues it). */
  | { readonly status: "running"; readonly runId: string }
  /** Its output as logged (encoded with the workflow's output schema). */
  | { readonly status: "completed"; readonly runId: string; readonly output: Json.Json }
  /** `encoded`: the error as the workflow's `error` schema encoded it, when it declares one. */
  | { readonly status: "failed"; readonly runId: string; readonly errorTag: string; readonly error: string; readonly encoded?: Json.Json }
  /** It continued as a new run (`ctx.continueAsNew`): `nextRunId` is its successor, where the work goes on. */
  | { readonly status: "continued"; readonly runId: string; readonly nextRunId: string }
  | Stopped

/** The payload tag a run's status is read from: the event that set it (a settled run's end, its pause, its step in doubt). */
const statusEvent = {
  completed: "RunCompleted",
  failed: "RunFailed",
  continued: "RunContinued",
  paused: "PauseRequested",
  needs_reconciliation: "ReconciliationRequired"
} as const

/**
 * Where a run stands (`RunState`): its status with what a caller needs to act on it (a ticket, a step in doubt). Read
 * from the run's record and the one event that set its status (`Kernel.lastEvent`, back from the record's head and
 * verified so): the head event of a finished run, and of a paused run or one in doubt unless events were logged after
 * its pause or its step in doubt (then those too, and no more). O(1) in the run's length.
 */
export const status = (
  run: Kernel.RunRef
): Effect.Effect<RunState, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered, Kernel.Kernel | EventStore.EventStore> =>
  Effect.gen(function*() {
    const info = yield* getRun(run)
    const runId = info.runId
    if (info.status === "running") return { status: "running", runId }
    const kernel = yield* Kernel.Kernel
    const tag = statusEvent[info.status]
    // A run paused for a tool call's approval has its `ApprovalRequested` where a pause has its `PauseRequested`.
    const event = yield* kernel.lastEvent(run, (e) => e.payload._tag === tag || (tag === "PauseRequested" && e.payload._tag === "ApprovalRequested"))
    const payload: EventPayload | undefined = event?.payload
    switch (payload?._tag) {
      case "RunCompleted":
        return { status: "completed", runId, output: payload.output }
      case "RunFailed": {
        const base = { status: "failed", runId, errorTag: payload.errorTag, error: payload.error } as const
        return payload.encoded === undefined ? base : { ...base, encoded: payload.encoded }
      }
      case "RunContinued":
        return { status: "continued", runId, nextRunId: payload.nextRunId }
      case "PauseRequested":
        return { status: "paused", runId, ticket: payload.ticket, reason: payload.reason }
      case "ApprovalRequested": {
        const approval = Approval.requestOf(event?.stepKey ?? "", payload)
        return { status: "paused", runId, ticket: approval.approvalId, reason: Approval.reasonOf(approval), approval }
      }
      case "ReconciliationRequired": {
        const base = { status: "needs_reconciliation", runId, stepKey: event?.stepKey ?? "", tool: payload.tool } as const
        const awaited = payload.waitingOn?.[0]
        if (awaited === undefined) return base
        const store = yield* EventStore.EventStore
        return { ...base, waitingOn: yield* EventStore.reconciliationPath(store, run.tenantId, awaited.runId) }
      }
    }
    // The record says a status its log has no event for: the record was changed (verify reports it).
    return yield* new Errors.LogTampered({ runId, seq: info.headSeq, reason: `the run record says ${info.status}, but its log has no ${tag} event` })
  })

// ------------------------------------------------------------------------------------------------ fork

/**
 * Forks a run and drives the fork on with the current code (`Kernel.fork`): a new run whose log is the run's prefix
 * up to the last step boundary at or before `atSeq` (or step `atStep`'s end), with `overrides` replacing recorded step
 * results. The result is the fork's, under its id (`result.runId`).
 *
 * @example
 * const forked = yield* Artana.fork({ tenantId: "acme", runId: "order-7", atStep: "lookup", overrides: { lookup: { balance: 0 } }, workflow: order })
 */
export function fork<I, O, E>(
  request: Kernel.ForkOptions & { readonly workflow: Workflow.Workflow<I, O, E> }
): Effect.Effect<Kernel.RunResult<O>, E | Kernel.KernelError | Fork.ForkError, Kernel.Kernel>
export function fork(
  request: Kernel.ForkOptions
): Effect.Effect<Kernel.RunResult<Register.ByNameOutput>, Register.ByNameError | Kernel.KernelError | Fork.ForkError, Kernel.Kernel>
export function fork(request: Kernel.ForkOptions): Effect.Effect<Kernel.RunResult<unknown>, unknown, Kernel.Kernel> {
  return Effect.flatMap(Kernel.Kernel, (k) => k.fork(request))
}

/** Writes a fork's log and runs nothing (`Kernel.forkLog`): a worker, or `resume`, drives it on. */
export const forkLog = (request: Fork.ForkRequest): Effect.Effect<Fork.Forked, Fork.ForkError, Kernel.Kernel> =>
  Effect.flatMap(Kernel.Kernel, (k) => k.forkLog(request))

// ------------------------------------------------------------------------------------------------ Promises

/** An Exit as a Promise: its value, or a rejection with the typed error (`error._tag` tells which). */
export const toPromise = <A, E>(exit: Exit.Exit<A, E>): Promise<A> =>
  Exit.isSuccess(exit) ? Promise.resolve(exit.value) : Promise.reject(Cause.squash(exit.cause))

/** Runs effects on a runtime built once from a layer; `close` releases it (closes the database). */
export interface Runner<R> {
  readonly run: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<A>
  readonly close: () => Promise<void>
}

/** A `Runner` over a layer: what `Artana.create` and `AgentClient.create` are built on. */
export const runner = <R>(layer: Layer.Layer<R, unknown>): Runner<R> => {
  const runtime = ManagedRuntime.make(layer)
  return { run: (effect) => runtime.runPromiseExit(effect).then(toPromise), close: () => runtime.dispose() }
}

/** The Promise client: every operation above, with the same names. Errors reject with the kernel's typed errors. */
export interface Client {
  readonly run: <I, O, E>(workflow: Workflow.Workflow<I, O, E>, options: RunOptions<I>) => Promise<Kernel.RunResult<O>>
  readonly chat: <A = string, I = unknown>(options: ChatOptions<A, I>) => Promise<ChatResult<A>>
  readonly callTool: (options: CallToolOptions) => Promise<Kernel.RunResult<Json.Json>>
  readonly resume: {
    <I, O, E>(run: Kernel.RunRef & { readonly response?: unknown; readonly respondedBy?: string | undefined; readonly workflow: Workflow.Workflow<I, O, E> }): Promise<Kernel.RunResult<O>>
    (run: Kernel.RunRef & { readonly response?: unknown; readonly respondedBy?: string | undefined }): Promise<Kernel.RunResult<Register.ByNameOutput>>
  }
  readonly replay: <I, O, E>(workflow: Workflow.Workflow<I, O, E>, run: Kernel.RunRef) => Promise<Kernel.RunResult<O>>
  /** Settles a call in doubt; refused while it may still be running unless `force` (see `Kernel.reconcile`). */
  readonly reconcile: (options: ReconcileOptions) => Promise<void>
  /** Delivers a durable message to a run (`Kernel.signal`). */
  readonly signal: (request: Kernel.SignalRequest) => Promise<Kernel.SignalReceipt>
  readonly verify: (run: Kernel.RunRef & { readonly head?: Head | undefined }) => Promise<VerifyReport>
  readonly status: (run: Kernel.RunRef) => Promise<RunState>
  readonly getRun: (run: Kernel.RunRef) => Promise<RunInfo>
  readonly listRuns: (tenantId: string, filter?: EventStore.ListRunsFilter) => Promise<ReadonlyArray<RunInfo>>
  /** The tenant's runs a page at a time (`Artana.listRunsPage`): `{ runs, next }`; pass `next` as `after`. */
  readonly listRunsPage: (tenantId: string, filter?: EventStore.ListRunsPageFilter) => Promise<EventStore.RunsPage>
  readonly readEvents: (run: Kernel.RunRef) => Promise<ReadonlyArray<Event>>
  /** The run's events, verified a page at a time (`Kernel.events`): `for await (const event of client.events(run))`. */
  readonly events: (run: Kernel.RunRef, options?: Kernel.EventsOptions) => AsyncIterable<Event>
  /** The tenant's pending approvals (`Artana.approvals`). */
  readonly approvals: (filter: Approval.ApprovalsFilter) => Promise<ReadonlyArray<Approval.PendingApproval>>
  /** The inbox a page at a time (`Artana.approvalsPage`): `{ approvals, next }`; pass `next` as `after`. */
  readonly approvalsPage: (filter: Approval.ApprovalsFilter) => Promise<Approval.ApprovalsPage>
  /** Records a decision without continuing the run (`Artana.decide`). */
  readonly decide: (decision: Approval.DecideRequest) => Promise<Approval.Decided>
  /** Approves a pending call and continues its run (`Artana.approve`). */
  readonly approve: {
    <I, O, E>(options: ApproveOptions<Workflow.Workflow<I, O, E>> & { readonly workflow: Workflow.Workflow<I, O, E> }): Promise<Kernel.RunResult<O>>
    (options: ApproveOptions): Promise<Kernel.RunResult<Register.ByNameOutput>>
  }
  /** Rejects a pending call and continues its run (`Artana.reject`). */
  readonly reject: {
    <I, O, E>(options: RejectOptions<Workflow.Workflow<I, O, E>> & { readonly workflow: Workflow.Workflow<I, O, E> }): Promise<Kernel.RunResult<O>>
    (options: RejectOptions): Promise<Kernel.RunResult<Register.ByNameOutput>>
  }
  /**
   * The run as it happens (`Kernel.live`): `for await (const e of client.live(run, { after }))`, each event with the
   * `offset` to reconnect after.
   */
  readonly live: (run: Kernel.RunRef, options?: Kernel.LiveOptions) => AsyncIterable<Live.LiveEvent>
  /** Forks a run and drives the fork on (`Artana.fork`). */
  readonly fork: {
    <I, O, E>(request: Kernel.ForkOptions & { readonly workflow: Workflow.Workflow<I, O, E> }): Promise<Kernel.RunResult<O>>
    (request: Kernel.ForkOptions): Promise<Kernel.RunResult<Register.ByNameOutput>>
  }
  /** Writes a fork's log and runs nothing (`Artana.forkLog`). */
  readonly forkLog: (request: Fork.ForkRequest) => Promise<Fork.Forked>
  /** Releases the store (closes the database). */
  readonly close: () => Promise<void>
}

/** The Promise client over `Artana.layer(options)`. */
export const create = (options: Options): Client => {
  const { run: go, close } = runner(layer(options))
  return {
    run: (w, o) => go(run(w, o)),
    chat: (o) => go(chat(o)),
    callTool: (o) => go(callTool(o)),
    resume: (o: Kernel.ResumeOptions & { readonly workflow?: Workflow.Any }) => go(resume(o)),
    replay: (w, r) => go(replay(w, r)),
    reconcile: (o) => go(reconcile(o)),
    signal: (r) => go(signal(r)),
    verify: (o) => go(verify(o)),
    status: (r) => go(status(r)),
    getRun: (r) => go(getRun(r)),
    listRuns: (tenantId, filter) => go(listRuns(tenantId, filter)),
    listRunsPage: (tenantId, filter) => go(listRunsPage(tenantId, filter)),
    readEvents: (r) => go(readEvents(r)),
    approvals: (f) => go(approvals(f)),
    approvalsPage: (f) => go(approvalsPage(f)),
    decide: (d) => go(decide(d)),
    approve: (o: ApproveOptions) => go(approve(o)),
    reject: (o: RejectOptions) => go(reject(o)),
    events: (r, o) => ({
      async *[Symbol.asyncIterator]() {
        yield* await go(Effect.flatMap(Kernel.Kernel, (k) => Stream.toAsyncIterableEffect(k.events(r, o))))
      }
    }),
    live: (r, o) => ({
      async *[Symbol.asyncIterator]() {
        yield* await go(Effect.flatMap(Kernel.Kernel, (k) => Stream.toAsyncIterableEffect(k.live(r, o))))
      }
    }),
    fork: (o: Kernel.ForkOptions) => go(fork(o)),
    forkLog: (r) => go(forkLog(r)),
    close
  }
}

/** The durable context of a Promise workflow: every method is one logged step. `I`: the workflow's input. */
export interface PromiseContext<I = unknown> {
  readonly runId: string
  readonly tenant: TenantContext
  readonly chat: <A = string, I = unknown>(options: Workflow.ChatOptions<A, I>) => Promise<Workflow.ChatResult<A>>
  readonly tool: <Args, Result>(tool: Tool<Args, Result> | string, args: Args, options?: { readonly key?: string }) => Promise<Result>
  readonly step: <A, I>(name: string, run: () => Promise<A>, schema: Schema.Schema<A, I>, options?: { readonly key?: string }) => Promise<A>
  readonly now: () => Promise<number>
  readonly random: () => Promise<number>
  readonly sleep: (millis: number) => Promise<void>
  readonly pauseForHuman: <A = unknown, AI = unknown>(options: Workflow.PauseOptions<A, AI>) => Promise<A>
  /** Takes a signal sent to the run, waiting for it (see `WorkflowContext.waitForSignal`). */
  readonly waitForSignal: <A, AI = unknown>(name: string, schema: Schema.Schema<A, AI>, options?: Workflow.WaitForSignalOptions) => Promise<A>
  /** Ends the run and continues as a new run with `input` (see `WorkflowContext.continueAsNew`); never resolves. */
  continueAsNew(input: I): Promise<never>
  /** The number of events in the run's log here, logged (see `WorkflowContext.historyLength`). */
  readonly historyLength: () => Promise<number>
  /** Whether the run takes the new path of a change (see `WorkflowContext.patched`). */
  readonly patched: (changeId: string) => Promise<boolean>
  /** The cleanup phase of a `patched` change (see `WorkflowContext.deprecatePatch`). */
  readonly deprecatePatch: (changeId: string) => Promise<void>
}

/**
 * A workflow written with async/await. Each `ctx` call is a durable step; do not catch the errors they
 * throw when the run pauses (`await ctx.pauseForHuman(...)` ends the execution).
 */
export const workflow = <I, II, O, OI>(options: {
  readonly name: string
  /** The workflow's version (see `Workflow.make`); default `Workflow.DEFAULT_VERSION`. */
  readonly version?: string | undefined
  readonly input: Schema.Schema<I, II>
  readonly output: Schema.Schema<O, OI>
  readonly run: (input: I, context: PromiseContext<I>) => Promise<O>
}): Workflow.Workflow<I, O, unknown> =>
  Workflow.make({
    name: options.name,
    version: options.version,
    input: options.input,
    output: options.output,
    run: (input, ctx) =>
      Effect.flatMap(Effect.runtime<never>(), (runtime) => {
        const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Runtime.runPromiseExit(runtime)(effect).then(toPromise)
        const context: PromiseContext<I> = {
          runId: ctx.runId,
          tenant: ctx.tenant,
          chat: (o) => run(ctx.chat(o)),
          tool: (tool, args, o) => run(ctx.tool(tool, args, o)),
          step: (name, f, schema, o) => run(ctx.step(name, Effect.tryPromise({ try: f, catch: (e) => e }), schema, o)),
          now: () => run(ctx.now()),
          random: () => run(ctx.random()),
          sleep: (millis) => run(ctx.sleep(millis)),
          pauseForHuman: (o) => run(ctx.pauseForHuman(o)),
          waitForSignal: (name, schema, o) => run(ctx.waitForSignal(name, schema, o)),
          continueAsNew: (next) => run(ctx.continueAsNew(next)),
          historyLength: () => run(ctx.historyLength()),
          patched: (changeId) => run(ctx.patched(changeId)),
          deprecatePatch: (changeId) => run(ctx.deprecatePatch(changeId))
        }
        return Effect.tryPromise({ try: () => options.run(input, context), catch: (e) => e })
      })
  })
