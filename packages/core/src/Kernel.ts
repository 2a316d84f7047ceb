/**
 * The `Kernel`: runs workflows durably. It starts runs, resumes them (after a crash, a pause or a move to
 * another process) by replaying their log, settles in-doubt tool calls, and verifies hash chains.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type * as Stream from "effect/Stream"
import type * as Approval from "./Approval.js"
import * as ApprovalsIndex from "./ApprovalsIndex.js"
import * as Errors from "./Errors.js"
import type { Event, RunInfo, WaitingOn } from "./Event.js"
import type * as EventStore from "./EventStore.js"
import type * as Fork from "./Fork.js"
import { chainEnd } from "./internal/chain.js"
import type * as Execution from "./internal/execution.js"
import * as Tracing from "./internal/tracing.js"
import * as ForkLog from "./internal/fork.js"
import * as KernelDeps from "./internal/kernelDeps.js"
import * as KernelReads from "./internal/kernelReads.js"
import * as KernelSignals from "./internal/kernelSignals.js"
import * as KernelWorkflows from "./internal/kernelWorkflows.js"
import { reconcile } from "./internal/reconcile.js"
import { continueRun, type Runtime, startRun } from "./internal/runs.js"
import type * as Signals from "./internal/signals.js"
import type * as Register from "./Register.js"
import type * as Json from "./Json.js"
import type { Lease } from "./Lease.js"
import type * as Live from "./Live.js"
import type { ModelPort } from "./ModelPort.js"
import type * as Pricing from "./Pricing.js"
import type { TenantContext } from "./Tenant.js"
import type { ToolRegistry } from "./ToolRegistry.js"
import type { Durability } from "./Tool.js"
import type { Head, VerifyReport } from "./Verify.js"
import type * as Workflow from "./Workflow.js"

/** How an execution ended, when it did not fail. */
export type RunResult<O> =
  | { readonly status: "completed"; readonly runId: string; readonly output: O }
  | {
    readonly status: "paused"
    readonly runId: string
    readonly ticket: string
    readonly reason: string
    /** Set when the run waits for a signal until a deadline: resume it then, if no signal woke it before. */
    readonly wakeAt?: number | undefined
    /** Set when the run waits for a tool call's approval (`ticket` is its id): decide it with `Artana.approve`/`reject`. */
    readonly approval?: Approval.ApprovalRequest | undefined
  }
  | {
    readonly status: "needs_reconciliation"
    readonly runId: string
    readonly stepKey: string
    readonly tool: string
    /**
     * Set when the step is not in doubt itself but waits on another run that is (a sub-agent's): the path down to
     * the step that needs a person, its last link. Reconcile that step; resuming this run then drives it on.
     */
    readonly waitingOn?: ReadonlyArray<WaitingOn> | undefined
  }

/** Faults of the kernel itself (the run's own errors come on top). */
export type KernelError =
  | Execution.Fault
  | Errors.RunNotFound
  | Errors.RunFailedError
  | Errors.BudgetExceeded
  | Errors.BudgetUnpriced
  | Errors.WorkflowNotFound
  | Errors.LogTampered

export interface StartOptions<I> {
  /** Id of the run; a new UUID when absent. Executing an existing id continues that run. */
  readonly runId?: string | undefined
  readonly tenant: TenantContext
  readonly input: I
  /** Lineage: the run that started this one (sub-runs draw on their root's budget). */
  readonly parentRunId?: string | undefined
  /** The caller's hold on the run (a worker's lease on its task): no tool handler starts once it is lost. */
  readonly lease?: Lease | undefined
}

/** Options of `Kernel.events`. */
export interface EventsOptions {
  /** Events read per query (default `EventStore.DEFAULT_PAGE_SIZE`). */
  readonly pageSize?: number | undefined
}

/** Options of `Kernel.live`. */
export interface LiveOptions {
  /** The last offset the reader saw: the stream starts right after it. Absent: from the run's start. */
  readonly after?: string | undefined
  /** Events and deltas read per query (default `EventStore.DEFAULT_PAGE_SIZE`). */
  readonly pageSize?: number | undefined
  /**
   * Wait for a run that does not exist yet (a caller that starts a run and watches it at once) instead of failing
   * with `RunNotFound`. Another tenant's run is waited for too, like one that never started: nothing is told.
   */
  readonly waitForStart?: boolean | undefined
}

export interface RunRef {
  readonly tenantId: string
  readonly runId: string
}

/** How a person settles an in-doubt tool call: what really happened. */
export type ReconcileOutcome =
  | { readonly ok: true; readonly result: Json.Json }
  | { readonly ok: false; readonly error: string }

/** What `resume` takes: the run, the response to its open pause (if paused), the caller's lease. */
export interface ResumeOptions extends RunRef {
  readonly response?: unknown
  /**
   * Who responds (the person or system the application authenticated): logged with the response
   * (`HumanResponded.respondedBy`), as an approval logs its approver. Only with a `response`.
   */
  readonly respondedBy?: string | undefined
  readonly lease?: Lease | undefined
}

/** What `Kernel.signal` takes: the run, the signal's name, and its payload (JSON; the waiting code decodes it). */
export interface SignalRequest extends RunRef {
  readonly name: string
  readonly payload: unknown
  /**
   * The signal's de-duplication key (its `signalId`; a UUID when absent): a signal whose id the run's log already
   * holds is not written again, and the receipt names the one written first. A sender that retries after a timeout
   * (or a webhook delivered twice) passes the same id, and the run takes the message once.
   */
  readonly id?: string | undefined
}

/** Where a signal was written: its id and its seq in the run's log. */
export interface SignalReceipt {
  readonly signalId: string
  /**
   * The run whose log holds the signal: the run addressed, or, when it continued as new, the last run of its chain
   * (a signal follows the chain as `resume` and `execute` do).
   */
  readonly runId: string
  readonly seq: number
  /** True when a signal of this id was already in the run's log: nothing was written, `seq` is the first one's. */
  readonly duplicate?: boolean | undefined
}

/** What `Kernel.signal` may fail with: the run has ended (`SignalRefused`), is another tenant's or none, ... */
export type SignalError = Signals.SendError

export interface ChatRunOptions<A, I = unknown> extends Workflow.ChatOptions<A, I> {
  readonly runId?: string | undefined
  readonly tenant: TenantContext
}

export interface Service {
  /**
   * Starts a run, or continues it when `runId` exists (a crashed run resumes from its log). A run that continues as
   * new (`ctx.continueAsNew`) is followed: the result is its chain's last run's, under that run's id.
   */
  readonly execute: <I, O, E>(
    workflow: Workflow.Workflow<I, O, E>,
    options: StartOptions<I>
  ) => Effect.Effect<RunResult<O>, E | KernelError>
  /**
   * Resumes a paused run with a human response (or a crashed run). Given its `workflow`, it runs that one (the run's
   * workflow name must match) and is typed by it: its output, and its declared error; else it finds the workflow by
   * name among those the kernel was given.
   */
  readonly resume: {
    <I, O, E>(run: ResumeOptions & { readonly workflow: Workflow.Workflow<I, O, E> }): Effect.Effect<RunResult<O>, E | KernelError>
    /** By name: typed by the workflows the application declares in `Register` (`unknown` without that declaration). */
    (run: ResumeOptions): Effect.Effect<RunResult<Register.ByNameOutput>, Register.ByNameError | KernelError>
  }
  /** Re-runs the code over the log without executing or writing anything; any divergence is `NonDeterminism`. */
  readonly replay: <I, O, E>(workflow: Workflow.Workflow<I, O, E>, run: RunRef) => Effect.Effect<RunResult<O>, E | KernelError>
  /** Settles an in-doubt, non-idempotent tool call; `execute`/`resume` then continues the run. */
  /**
   * `stepKey`, when given, is the step the caller checked: if the step in doubt is another one (the run moved on
   * since), nothing is written and the call fails with `InvalidRunState`. While the call may still be running in
   * the process that started it (its task's lease has not expired, or the tool's timeout has not passed since its
   * `ToolRequested`), nothing is written and the call fails with `StepMayBeRunning`, unless `force` is set.
   */
  readonly reconcile: (
    run: RunRef & { readonly outcome: ReconcileOutcome; readonly stepKey?: string | undefined; readonly force?: boolean | undefined }
  ) => Effect.Effect<void, KernelError | Errors.StepMayBeRunning>
  /**
   * The run's events, verified: every event's hash over its stored bytes, the links between them, and the head its
   * run record holds. A broken chain is `LogTampered`, naming the first broken seq.
   */
  readonly readEvents: (run: RunRef) => Effect.Effect<ReadonlyArray<Event>, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered>
  /**
   * The run's events as `readEvents` verifies them, read a page at a time (`pageSize` events, default
   * `EventStore.DEFAULT_PAGE_SIZE`): memory holds a page, however long the run. Each page is verified before any of
   * its events is emitted; the record's head (a truncated log) is checked when the stream ends, so a consumer that
   * must know the whole log is intact acts only once the stream completed.
   */
  readonly events: (run: RunRef, options?: EventsOptions) => Stream.Stream<Event, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered>
  /**
   * The run's last event that `matches`, or undefined: read back from the run record's head a page at a time and
   * verified on the way back (the record's head hash, each event's hash over its stored bytes, its link to the event
   * after it). It costs the events from the head back to the one found: one when it is the head event, whatever the
   * run's length. `Artana.status` reads a settled run's end, its pause or its step in doubt so. A log cut before its
   * record's head, or a broken link, is `LogTampered`.
   */
  readonly lastEvent: (run: RunRef, matches: (event: Event) => boolean) => Effect.Effect<Event | undefined, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered>
  /**
   * The run as it happens: its log events and its streamed model calls' deltas (`Live.LiveEvent`), in order, after the
   * offset `after`, following the run until it completes, fails or continues as new (a paused run's stream waits).
   * A reader that reconnects with the last offset it saw gets everything after it, once. Deltas are kept in the
   * `LiveStore` while the run is live; after that the logged reply (`ModelCompleted`) stands for them. The log part is
   * verified as `events` verifies it.
   */
  readonly live: (run: RunRef, options?: LiveOptions) => Stream.Stream<Live.LiveEvent, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered | Errors.InvalidInput>
  /** Checks the run's hash chain against its store record and, if given, an exported head. */
  readonly verify: (run: RunRef & { readonly head?: Head | undefined }) => Effect.Effect<VerifyReport, Errors.RunNotFound | Errors.StoreError>
  /**
   * Delivers a durable message to a run that is running, paused, or not yet at the `ctx.waitForSignal` that takes it:
   * a `SignalSent` appended to the run's own chain (see the core README's "Signals"). A run that continued as new
   * passes it on to the last run of its chain (the receipt's `runId`); one that completed or failed refuses it with
   * `SignalRefused`; another tenant's run is `RunNotFound`. Nothing resumes here:
   * an execution waiting in some process takes it at its next read of the log; a run paused for a person or left by a
   * crash takes it once resumed and at the wait.
   */
  readonly signal: (request: SignalRequest) => Effect.Effect<SignalReceipt, SignalError>
  /**
   * When the kernel shares its store with a `TaskQueue`: queues the task that drives `run` if the run is paused at a
   * signal wait that may go on now (a signal came, its deadline passed). `signal` does it after writing; a worker does
   * it after it finished a task whose run paused at a wait. A task still running keeps the wake-up for its finish
   * (`TaskQueue.wake`). True when a task was woken (or will be, at its finish); false without a queue.
   */
  readonly wake: (run: RunRef) => Effect.Effect<boolean, Errors.RunNotFound | Errors.StoreError>
  /** A run of one chat: model step(s), tool steps, structured output. */
  readonly chat: <A = string, I = unknown>(
    options: ChatRunOptions<A, I>
  ) => Effect.Effect<RunResult<Workflow.ChatResult<A>>, Workflow.ChatError | KernelError>
  /**
   * Decides a pending approval (`Tool.make({ needsApproval })`): approve, optionally with edited arguments (checked
   * against the tool's parameters: the kernel's registered tool, or `tool`), or reject with a reason the model sees.
   * Writes one batch at the run's head (`ApprovalDecided`, and for a rejection the call's `ToolFailed`) and runs no
   * code: `resume` then continues the run with the decision (`Artana.approve`/`reject` do both). Of two deciding at
   * once, exactly one is written; the other fails with `ApprovalNotPending`. Nothing is written on any failure.
   */
  readonly decideApproval: (decision: Approval.DecideRequest) => Effect.Effect<Approval.Decided, Approval.DecideError>
  /**
   * The tenant's pending approvals (the inbox), filtered by run, tool, or age, the longest waiting first: the tenant's
   * paused runs in the order they paused (`ApprovalsIndex`), whose head event is a pending approval. A paused run whose
   * log does not verify is left out (logged as a warning; `approvalsPage` lists it as `unreadable`): one broken log does
   * not hide every other run's approvals.
   */
  readonly approvals: (filter: Approval.ApprovalsFilter) => Effect.Effect<ReadonlyArray<Approval.PendingApproval>, Errors.StoreError | Errors.LogTampered>
  /** `approvals` a page at a time: `next` is the cursor of the page after (`after`), absent on the last page. */
  readonly approvalsPage: (filter: Approval.ApprovalsFilter) => Effect.Effect<Approval.ApprovalsPage, Errors.StoreError | Errors.LogTampered | Errors.InvalidInput>
  /** A run of one tool call. */
  readonly callTool: (options: {
    readonly runId?: string | undefined
    readonly tenant: TenantContext
    readonly tool: string
    readonly args: Json.Json
  }) => Effect.Effect<RunResult<Json.Json>, Workflow.ToolCallError | KernelError>
  /**
   * Writes a fork of a run and runs nothing (see `fork`): the new run's log is the source's prefix up to the last step
   * boundary at or before `atSeq` (or step `atStep`'s end), copied and re-chained under the fork's id in one
   * transaction, with `overrides` in place. The source is not touched. The same request again returns the same fork.
   */
  readonly forkLog: (request: Fork.ForkRequest) => Effect.Effect<Fork.Forked, Fork.ForkError>
  /**
   * Forks a run (`forkLog`) and drives the fork on with the current code (given `workflow`, else the one registered
   * under the source's name): it replays the copied prefix and runs live from its end. The result is the fork's, under
   * its id. A fork that exists already (the same request again) is continued as `resume` would continue it.
   */
  readonly fork: {
    <I, O, E>(request: ForkOptions & { readonly workflow: Workflow.Workflow<I, O, E> }): Effect.Effect<RunResult<O>, E | KernelError | Fork.ForkError>
    (request: ForkOptions): Effect.Effect<RunResult<Register.ByNameOutput>, Register.ByNameError | KernelError | Fork.ForkError>
  }
}

/** What `Kernel.fork` takes: the fork's request, and optionally the workflow that drives it (else found by name). */
export type ForkOptions = Fork.ForkRequest & { readonly workflow?: Workflow.Any | undefined }

/** The durable kernel. */
export class Kernel extends Context.Tag("@artana/core/Kernel")<Kernel, Service>() {}

/**
 * The kernel's options. Budgets are the kernel's own: every model step is priced (see `Pricing`) and held to the
 * tenant's `budgetUsdLimit` across the run's lineage, with no middleware named. `prices`, `unknownModelPrice` and
 * `defaultMaxOutputTokens` tune the pricing per deployment.
 */
export interface Options extends Pricing.Options {
  /** Workflows `resume` can find by name (runs started in another process). */
  readonly workflows?: ReadonlyArray<Workflow.Any> | undefined
  /** HMAC key for the hash chain, kept outside the database. */
  readonly auditKey?: Redacted.Redacted<string> | undefined
  /**
   * `false` turns the budget off: calls are priced where a price is known (else cost 0) but never refused, and every
   * model step writes a `budget_not_enforced` note, so the opt-out shows in code and in the log. Default true.
   */
  readonly enforceBudget?: boolean | undefined
  /**
   * How idempotent tools' calls are logged when the tool does not say (`Tool.make({ durability })`): `"two-phase"`
   * (default: the request is durable before the handler, so the log shows every attempt) or `"one-commit"` (request
   * and outcome in one commit after the handler; a crash mid-handler runs the call again with the same key).
   */
  readonly idempotentToolDurability?: Durability | undefined
  /** How often an execution waiting in `ctx.waitForSignal` reads its run's log for new signals. Default 200 ms. */
  readonly signalPollInterval?: Duration.DurationInput | undefined
  /**
   * How long an execution waits in its process in `ctx.waitForSignal` before it pauses the run (which then costs
   * nothing until a resume: a worker's, once a signal wakes its task or the wait's deadline comes). Default 0: it pauses
   * at once. `Duration.infinity`: it never pauses (it waits in its process, as `ctx.sleep` does).
   */
  readonly signalWaitHold?: Duration.DurationInput | undefined
  /**
   * How long a model call's estimate stays held against its lineage's budget in a store shared by processes
   * (`BudgetHolds`: the SQL stores) when nothing releases it: a process that died mid-call holds the estimate that
   * long. Default 15 minutes; a call that runs longer is held no longer, and its cost counts once logged.
   */
  readonly budgetHoldTtl?: Duration.DurationInput | undefined
  /**
   * How often `live` reads a run again when nothing woke it (a run written by another process). Default 200 ms; a
   * run written in this process wakes its readers at once.
   */
  readonly livePollInterval?: Duration.DurationInput | undefined
}

/** Builds the kernel from its ports. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const { built, deps, queue } = yield* KernelDeps.make(options)
    const { store } = deps
    const workflows = new Map<string, Workflow.Any>()
    for (const w of options.workflows ?? []) workflows.set(w.name, w)

    // Built for every run but run only by a model step's budget check: the query is made when it runs.
    const lineageSpend = (tenantId: string, rootRunId: string) => Effect.suspend(() => store.lineageCostUsd(tenantId, rootRunId))
    const runtime: Runtime = { deps, lineageSpend, services: () => Context.add(built, Kernel, service) }
    // The inbox's index of paused runs, when the store has one (SQL stores do).
    const approvalsIndex = yield* Effect.serviceOption(ApprovalsIndex.ApprovalsIndex)

    const dropDeltasAfter = KernelReads.deltaCleanup(deps)

    const execute = <I, O, E>(workflow: Workflow.Workflow<I, O, E>, start: StartOptions<I>): Effect.Effect<RunResult<O>, E | KernelError> => {
      const runId = start.runId ?? crypto.randomUUID()
      // A new run is created by its RunStarted; an existing one (its RunStarted refused) is continued.
      const existing = (absent: KernelError) =>
        store.getRun(start.tenant.tenantId, runId).pipe(
          Effect.catchTag("RunNotFound", () => Effect.fail(absent)),
          Effect.flatMap((info) => continueRun(runtime, workflow, info, "live", undefined, start.lease)),
          Effect.onExit(dropDeltasAfter(start.tenant.tenantId, runId))
        )
      return startRun(runtime, workflow, start, runId, existing, dropDeltasAfter(start.tenant.tenantId, runId, true)).pipe(
        Tracing.spanned("Kernel.execute", { attributes: { workflow: workflow.name }, captureStackTrace: false })
      )
    }

    const workflowFor = (info: RunInfo) => {
      const w = workflows.get(info.workflow)
      return w === undefined
        ? Effect.fail(new Errors.WorkflowNotFound({ workflow: info.workflow, available: [...workflows.keys()] }))
        : Effect.succeed(w)
    }

    const resumeWith = <I, O, E>(info: RunInfo, workflow: Workflow.Workflow<I, O, E>, run: ResumeOptions): Effect.Effect<RunResult<O>, E | KernelError> => {
      if (run.response !== undefined && info.status !== "paused") {
        return Effect.fail(new Errors.InvalidRunState({ runId: run.runId, status: info.status, expected: "paused (only a paused run takes a response)" }))
      }
      const response = info.status === "paused"
        ? { payload: run.response === undefined ? null : run.response, ...(run.respondedBy === undefined ? {} : { by: run.respondedBy }) }
        : undefined
      return continueRun(runtime, workflow, info, "live", response, run.lease)
    }
    function resume<I, O, E>(run: ResumeOptions & { readonly workflow: Workflow.Workflow<I, O, E> }): Effect.Effect<RunResult<O>, E | KernelError>
    function resume(run: ResumeOptions): Effect.Effect<RunResult<Register.ByNameOutput>, Register.ByNameError | KernelError>
    function resume(run: ResumeOptions & { readonly workflow?: Workflow.Any }): Effect.Effect<RunResult<unknown>, unknown> {
      return Effect.gen(function*() {
        // A run that continued as new is resumed where its work goes on: the last run of its chain.
        const info = yield* chainEnd(store, yield* store.getRun(run.tenantId, run.runId))
        // A given workflow is checked by name like a registered one (continueRun: NonDeterminism on another name).
        return yield* Effect.onExit(resumeWith(info, run.workflow ?? (yield* workflowFor(info)), run), dropDeltasAfter(info.tenantId, info.runId))
      }).pipe(Tracing.spanned("Kernel.resume"))
    }

    const forkLog = (request: Fork.ForkRequest) => ForkLog.write(store, deps.auditKey, request).pipe(Tracing.spanned("Kernel.forkLog"))
    function fork<I, O, E>(request: ForkOptions & { readonly workflow: Workflow.Workflow<I, O, E> }): Effect.Effect<RunResult<O>, E | KernelError | Fork.ForkError>
    function fork(request: ForkOptions): Effect.Effect<RunResult<Register.ByNameOutput>, Register.ByNameError | KernelError | Fork.ForkError>
    function fork(request: ForkOptions): Effect.Effect<RunResult<unknown>, unknown> {
      return Effect.gen(function*() {
        const forked = yield* forkLog(request)
        const info = yield* store.getRun(request.tenantId, forked.runId)
        const workflow = request.workflow ?? (yield* workflowFor(info))
        const takeover = forked.created ? `fork of run ${forked.forkedFrom.runId} at seq ${forked.forkedFrom.seq}: its first execution` : undefined
        // A fork already driven elsewhere to its end (or a pause) is returned as it stands, as `resume` would.
        return yield* Effect.onExit(continueRun(runtime, workflow, info, "live", undefined, undefined, takeover), dropDeltasAfter(info.tenantId, info.runId))
      }).pipe(Tracing.spanned("Kernel.fork", { attributes: { runId: request.runId } }))
    }

    const service: Service = {
      execute,
      resume,
      replay: (workflow, run) =>
        Effect.flatMap(store.getRun(run.tenantId, run.runId), (info) => continueRun(runtime, workflow, info, "replay", undefined)).pipe(
          Tracing.spanned("Kernel.replay")
        ),
      reconcile: Effect.fn("Kernel.reconcile")(function*(run) {
        return yield* reconcile(runtime, queue, run)
      }),
      ...KernelReads.make(deps, options),
      ...KernelWorkflows.make(execute),
      ...KernelSignals.make(runtime, queue, approvalsIndex),
      forkLog,
      fork
    }
    return service
  })

/** The kernel layer; needs an `EventStore`, a `ModelPort` and a `ToolRegistry` (and optionally `Middleware`). */
export const layer = (options: Options = {}): Layer.Layer<Kernel, never, EventStore.EventStore | ModelPort | ToolRegistry> =>
  Layer.effect(Kernel, make(options))
