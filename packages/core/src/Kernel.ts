/**
 * The `Kernel`: runs workflows durably. It starts runs, resumes them (after a crash, a pause or a move to
 * another process) by replaying their log, settles in-doubt tool calls, and verifies hash chains.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { AssistantMessage, ChatMessage, Usage } from "./Chat.js"
import * as Errors from "./Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY, type RunInfo, type WaitingOn } from "./Event.js"
import { EventStore, lineageCostUsd, reconciliationPath } from "./EventStore.js"
import * as Execution from "./internal/execution.js"
import { canonicalJson } from "./internal/hash.js"
import * as Json from "./Json.js"
import type { Lease } from "./Lease.js"
import { Middleware } from "./Middleware.js"
import { ModelPort } from "./ModelPort.js"
import * as Pricing from "./Pricing.js"
import * as Tasks from "./internal/taskQueue.js"
import { TaskQueue, type Service as TaskQueueService } from "./TaskQueue.js"
import type { TenantContext } from "./Tenant.js"
import { firstIssue } from "./Tool.js"
import { ToolRegistry } from "./ToolRegistry.js"
import { type Head, verifyEvents, type VerifyReport } from "./Verify.js"
import * as Workflow from "./Workflow.js"

/** How an execution ended, when it did not fail. */
export type RunResult<O> =
  | { readonly status: "completed"; readonly runId: string; readonly output: O }
  | { readonly status: "paused"; readonly runId: string; readonly ticket: string; readonly reason: string }
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
  readonly lease?: Lease | undefined
}

export interface ChatRunOptions<A, I = unknown> extends Workflow.ChatOptions<A, I> {
  readonly runId?: string | undefined
  readonly tenant: TenantContext
}

export interface Service {
  /** Starts a run, or continues it when `runId` exists (a crashed run resumes from its log). */
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
    (run: ResumeOptions): Effect.Effect<RunResult<unknown>, unknown>
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
  /** Checks the run's hash chain against its store record and, if given, an exported head. */
  readonly verify: (run: RunRef & { readonly head?: Head | undefined }) => Effect.Effect<VerifyReport, Errors.RunNotFound | Errors.StoreError>
  /** A run of one chat: model step(s), tool steps, structured output. */
  readonly chat: <A = string, I = unknown>(
    options: ChatRunOptions<A, I>
  ) => Effect.Effect<RunResult<Workflow.ChatResult<A>>, Workflow.ChatError | KernelError>
  /** A run of one tool call. */
  readonly callTool: (options: {
    readonly runId?: string | undefined
    readonly tenant: TenantContext
    readonly tool: string
    readonly args: Json.Json
  }) => Effect.Effect<RunResult<Json.Json>, Workflow.ToolCallError | KernelError>
}

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
}

const errorTag = (e: unknown): string => (Predicate.hasProperty(e, "_tag") && typeof e._tag === "string" ? e._tag : "Error")
const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : typeof e === "string" ? e : JSON.stringify(e) ?? String(e))

const toJson = (what: string, encoded: Either.Either<unknown, ParseResult.ParseError>) => {
  if (Either.isLeft(encoded)) return Either.left(new Errors.InvalidInput({ what, reason: firstIssue(encoded.left).reason }))
  const checked = Json.fromUnknown(encoded.right)
  return checked.ok ? Either.right(checked.json) : Either.left(new Errors.InvalidInput({ what, reason: checked.error }))
}

/** The run's failures the kernel itself decides (a budget): logged encoded, so a resume fails with them typed. */
const KernelFailure = Schema.Union(Errors.BudgetExceeded, Errors.BudgetUnpriced)
const encodeKernelFailure = Schema.encodeEither(KernelFailure)
const decodeKernelFailure = Schema.decodeUnknownEither(KernelFailure)

/** A `RunFailed` event: the error's tag and message, and the error encoded when it encodes to JSON. */
const runFailed = (error: unknown, encoded: Either.Either<unknown, ParseResult.ParseError>): EventPayload => {
  const json = Either.isRight(encoded) ? Json.fromUnknown(encoded.right) : undefined
  return { _tag: "RunFailed", errorTag: errorTag(error), error: errorMessage(error), ...(json?.ok === true ? { encoded: json.json } : {}) }
}

const lastOf = <T extends EventPayload["_tag"]>(events: ReadonlyArray<Event>, tag: T) => {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!
    if (e.payload._tag === tag) return { event: e, payload: e.payload as Extract<EventPayload, { _tag: T }> }
  }
  return undefined
}

const chatOutput = <A, I>(outputSchema: Schema.Schema<A, I> | undefined) =>
  Schema.Struct({
    output: outputSchema ?? Schema.Unknown,
    message: AssistantMessage,
    messages: Schema.Array(ChatMessage),
    usage: Usage,
    costUsd: Schema.Number
  })

/** Builds the kernel from its ports. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const store = yield* EventStore
    const model = yield* ModelPort
    const tools = yield* ToolRegistry
    const middleware = yield* Effect.serviceOption(Middleware)
    // The queue whose tasks drive runs, when the kernel shares its store: `reconcile` asks it whether a worker holds one.
    const queue = yield* Effect.serviceOption(TaskQueue)
    // The services the kernel was built with, and the kernel itself: workflow code runs with them, so a workflow that
    // needs one (an agent: the kernel, the model, its memory) reads it at run time and stays a plain value.
    const built = yield* Effect.context<never>()
    const deps: Execution.Deps = {
      store,
      model,
      tools,
      interceptors: Option.match(middleware, { onNone: () => [], onSome: (m) => m.interceptors }),
      auditKey: options.auditKey === undefined ? undefined : Redacted.value(options.auditKey),
      priceOf: Pricing.resolver(options, model.prices),
      defaultMaxOutputTokens: options.defaultMaxOutputTokens ?? 1024,
      enforceBudget: options.enforceBudget ?? true
    }
    const workflows = new Map<string, Workflow.Any>()
    for (const w of options.workflows ?? []) workflows.set(w.name, w)

    const lineageSpend = (tenantId: string, rootRunId: string) =>
      Effect.map(store.listRuns(tenantId, { rootRunId }), lineageCostUsd)

    /** Runs the code of an execution and turns how it ended into a result or an error. */
    const drive = <I, O, E>(
      workflow: Workflow.Workflow<I, O, E>,
      exec: Execution.Execution,
      input: I,
      mode: "live" | "replay",
      recordedOutput: Json.Json | undefined
    ): Effect.Effect<RunResult<O>, E | KernelError> =>
      Effect.gen(function*() {
        const runId = exec.context.runId
        const exit = yield* Effect.exit(workflow.run(input, exec.context).pipe(Effect.provide(Context.add(built, Kernel, service))))
        const halted = exec.halted()
        if (halted !== undefined) {
          switch (halted._tag) {
            case "Paused":
              return { status: "paused", runId, ticket: halted.ticket, reason: halted.reason } as const
            case "NeedsReconciliation":
              return {
                status: "needs_reconciliation",
                runId,
                stepKey: halted.stepKey,
                tool: halted.tool,
                ...(halted.waitingOn === undefined ? {} : { waitingOn: halted.waitingOn })
              } as const
            case "Fault":
              return yield* Effect.fail(halted.error)
            case "Failed":
              if (mode === "live") {
                yield* exec.appendOrFail(RUN_STEP_KEY, [runFailed(halted.error, encodeKernelFailure(halted.error))])
              }
              return yield* Effect.fail(halted.error)
          }
        }
        if (Exit.isSuccess(exit)) {
          const next = exec.unconsumed()
          if (next !== undefined) {
            return yield* new Errors.NonDeterminism({ runId, stepKey: next, expected: exec.describeKey(next), actual: "the end of the code" })
          }
          const output = toJson("workflow output", workflow.encodeOutput(exit.value))
          if (Either.isLeft(output)) return yield* output.left
          if (mode === "replay") {
            if (recordedOutput !== undefined && canonicalJson(recordedOutput) !== canonicalJson(output.right)) {
              return yield* new Errors.NonDeterminism({ runId, stepKey: RUN_STEP_KEY, expected: `output ${canonicalJson(recordedOutput)}`, actual: `output ${canonicalJson(output.right)}` })
            }
          } else {
            yield* exec.appendOrFail(RUN_STEP_KEY, [{ _tag: "RunCompleted", output: output.right }])
          }
          return { status: "completed", runId, output: exit.value } as const
        }
        const failure = Cause.failureOption(exit.cause)
        if (Option.isSome(failure) && mode === "live") {
          yield* exec.appendOrFail(RUN_STEP_KEY, [runFailed(failure.value, workflow.encodeError(failure.value))])
        }
        // Defects (bugs in the code) are not written: fix the code and resume, as with Temporal's task failures.
        return yield* Effect.failCause(exit.cause)
      })

    /**
     * A run's log, verified as it is read: each event's hash over its stored bytes, the links, and the run record's
     * head. A log cut before that head is `InvalidRunState` (truncated), as before; any other break is `LogTampered`.
     */
    const readVerified = (info: RunInfo) =>
      Effect.gen(function*() {
        const events = yield* store.readEvents(info.tenantId, info.runId)
        // The log ends before the head the run's record vouches for: events were removed (by hand, or a partial
        // restore). Going on would run the removed steps again, side effects included, and hide the cut.
        const logEnd = events.length === 0 ? 0 : events[events.length - 1]!.seq
        if (info.headSeq > logEnd) {
          return yield* new Errors.InvalidRunState({
            runId: info.runId,
            status: `truncated (its log ends at seq ${logEnd}, its run record at seq ${info.headSeq})`,
            expected: `a whole log (restore the missing events; \`artana verify ${info.runId}\` shows where the log breaks)`
          })
        }
        const report = verifyEvents(info.runId, events, {
          auditKey: deps.auditKey,
          heads: [{ source: "store's run record", seq: info.headSeq, hash: info.headHash }],
          record: info
        })
        if (!report.ok) {
          return yield* new Errors.LogTampered({ runId: info.runId, seq: report.firstBrokenSeq ?? 0, reason: report.reason ?? "broken" })
        }
        return events
      })

    /** Continues an existing run: returns its settled state, or replays its log and drives its code on. */
    const continueRun = <I, O, E>(
      workflow: Workflow.Workflow<I, O, E>,
      info: RunInfo,
      mode: "live" | "replay",
      response: { readonly payload: unknown } | undefined,
      lease?: Lease | undefined
    ): Effect.Effect<RunResult<O>, E | KernelError> =>
      Effect.gen(function*() {
        const events = yield* readVerified(info)
        const started = events[0]?.payload
        if (started === undefined || started._tag !== "RunStarted") {
          return yield* new Errors.StoreError({ operation: "readEvents", reason: `run ${info.runId} has no RunStarted event` })
        }
        if (started.workflow !== workflow.name) {
          return yield* new Errors.NonDeterminism({ runId: info.runId, stepKey: RUN_STEP_KEY, expected: `workflow "${started.workflow}"`, actual: `workflow "${workflow.name}"` })
        }
        const recordedOutput = lastOf(events, "RunCompleted")?.payload.output
        // Why this execution takes the run over, when it must claim it first.
        let resumed: string | undefined = info.status === "running" ? "recovery: the run was left running" : undefined
        if (mode === "live") {
          switch (info.status) {
            case "completed": {
              const output = workflow.decodeOutput(recordedOutput)
              if (Either.isLeft(output)) return yield* new Errors.InvalidInput({ what: `logged output of run ${info.runId}`, reason: firstIssue(output.left).reason })
              return { status: "completed", runId: info.runId, output: output.right } as const
            }
            case "failed": {
              const failed = lastOf(events, "RunFailed")?.payload
              // The original typed error, when the workflow (or the kernel, for a budget) logged it encoded.
              const original = failed?.encoded === undefined ? undefined : workflow.decodeError(failed.encoded)
              if (original !== undefined && Either.isRight(original)) return yield* Effect.fail(original.right)
              const kernelFailure = failed?.encoded === undefined ? undefined : decodeKernelFailure(failed.encoded)
              if (kernelFailure !== undefined && Either.isRight(kernelFailure)) return yield* Effect.fail(kernelFailure.right)
              return yield* new Errors.RunFailedError({ runId: info.runId, errorTag: failed?.errorTag ?? "Error", reason: failed?.error ?? "unknown" })
            }
            case "needs_reconciliation": {
              const required = lastOf(events, "ReconciliationRequired")
              const awaited = required?.payload.waitingOn?.[0]
              if (required !== undefined && awaited !== undefined) {
                // The step waits on another run in doubt. Once that run is settled, the run goes on (its step runs
                // again and drives that run on); until then it still waits, and nothing is written.
                const waitingOn = yield* reconciliationPath(store, info.tenantId, awaited.runId)
                if (waitingOn.length === 0) {
                  resumed = `the run its step ${required.event.stepKey} waited on (${awaited.runId}) no longer needs reconciliation`
                  break
                }
                return { status: "needs_reconciliation", runId: info.runId, stepKey: required.event.stepKey, tool: required.payload.tool, waitingOn } as const
              }
              return { status: "needs_reconciliation", runId: info.runId, stepKey: required?.event.stepKey ?? "", tool: required?.payload.tool ?? "" } as const
            }
            case "paused": {
              if (response === undefined) {
                const pause = lastOf(events, "PauseRequested")?.payload
                return { status: "paused", runId: info.runId, ticket: pause?.ticket ?? "", reason: pause?.reason ?? "" } as const
              }
              break
            }
            case "running":
              if (response !== undefined) {
                return yield* new Errors.InvalidRunState({ runId: info.runId, status: info.status, expected: "paused (only a paused run takes a response)" })
              }
          }
        }
        const input = workflow.decodeInput(started.input)
        if (Either.isLeft(input)) {
          return yield* new Errors.InvalidInput({ what: `logged input of run ${info.runId}`, reason: firstIssue(input.left).reason })
        }
        const exec = Execution.make(deps, {
          runId: info.runId,
          rootRunId: info.rootRunId,
          tenant: started.tenant,
          log: events,
          mode,
          // A replay spends nothing, so it skips the lineage query.
          spentUsd: mode === "replay" ? 0 : yield* lineageSpend(info.tenantId, info.rootRunId),
          lineageSpend: lineageSpend(info.tenantId, info.rootRunId),
          response,
          // A live execution claims the run with its first batch: from then on, the previous owners are fenced.
          ownerEpoch: mode === "live" ? info.ownerEpoch + 1 : info.ownerEpoch,
          claim: mode === "live",
          lease
        })
        if (mode === "live" && resumed !== undefined) {
          // Claims the run: of two processes resuming it at once, the second fails here before any step.
          yield* exec.appendOrFail(RUN_STEP_KEY, [{ _tag: "RunResumed", reason: resumed }])
        }
        return yield* drive(workflow, exec, input.right, mode, recordedOutput)
      })

    const findRun = (tenantId: string, runId: string) =>
      Effect.either(store.getRun(tenantId, runId)).pipe(
        Effect.flatMap((r) =>
          Either.isRight(r)
            ? Effect.succeed(Option.some(r.right))
            : r.left._tag === "RunNotFound"
            ? Effect.succeed(Option.none<RunInfo>())
            : Effect.fail(r.left)
        )
      )

    const execute = <I, O, E>(workflow: Workflow.Workflow<I, O, E>, start: StartOptions<I>): Effect.Effect<RunResult<O>, E | KernelError> =>
      Effect.gen(function*() {
        const runId = start.runId ?? crypto.randomUUID()
        const existing = yield* findRun(start.tenant.tenantId, runId)
        if (Option.isSome(existing)) return yield* continueRun(workflow, existing.value, "live", undefined, start.lease)
        const input = toJson("run input", workflow.encodeInput(start.input))
        if (Either.isLeft(input)) return yield* input.left
        let rootRunId = runId
        if (start.parentRunId !== undefined) {
          const parent = yield* store.getRun(start.tenant.tenantId, start.parentRunId)
          rootRunId = parent.rootRunId
        }
        const exec = Execution.make(deps, {
          runId,
          rootRunId,
          tenant: start.tenant,
          log: [],
          mode: "live",
          spentUsd: rootRunId === runId ? 0 : yield* lineageSpend(start.tenant.tenantId, rootRunId),
          lineageSpend: lineageSpend(start.tenant.tenantId, rootRunId),
          // The run's first owner: its RunStarted creates the run with this epoch.
          ownerEpoch: 1,
          lease: start.lease
        })
        yield* exec.appendOrFail(RUN_STEP_KEY, [{
          _tag: "RunStarted",
          workflow: workflow.name,
          input: input.right,
          tenant: start.tenant,
          ...(start.parentRunId === undefined ? {} : { parentRunId: start.parentRunId, rootRunId })
        }])
        return yield* drive(workflow, exec, start.input, "live", undefined)
      }).pipe(Effect.withSpan("Kernel.execute", { attributes: { workflow: workflow.name } }))

    /**
     * Fails with `StepMayBeRunning` while the call in doubt at `stepKey` may still be running where it started: a
     * worker holds the run's task under a live lease, or the tool's timeout has not passed since its request. A tool
     * with no timeout, or one this kernel does not know, gives no bound: only the lease is checked for it.
     */
    const mayBeRunning = (info: RunInfo, events: ReadonlyArray<Event>, stepKey: string, tool: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const refuse = (reason: string, until: number) => new Errors.StepMayBeRunning({ runId: info.runId, stepKey, tool, reason, until })
        if (Option.isSome(queue)) {
          const task = yield* findTask(queue.value, info)
          if (task !== undefined && task.status === "running" && task.leaseExpiresAt !== undefined && task.leaseExpiresAt > now) {
            return yield* refuse(`worker ${task.workerId ?? "?"} holds its task ${task.taskId} under a lease until ${new Date(task.leaseExpiresAt).toISOString()}`, task.leaseExpiresAt)
          }
        }
        const requested = events.find((e) => e.stepKey === stepKey && e.payload._tag === "ToolRequested")
        const timeout = deps.tools.get(tool)?.timeout
        if (requested !== undefined && timeout !== undefined) {
          const until = requested.timestamp + Duration.toMillis(timeout)
          if (now < until) {
            return yield* refuse(`it was requested at ${new Date(requested.timestamp).toISOString()} and its timeout (${Duration.format(timeout)}) has not passed`, until)
          }
        }
      })

    /** The task driving the run, if the run is a task's (its id is `TaskQueue.runIdOf` the task's). */
    const findTask = (tasks: TaskQueueService, info: RunInfo) => {
      const taskId = Tasks.taskIdOf(info.runId)
      if (taskId === undefined) return Effect.succeed(undefined)
      return tasks.get(info.tenantId, taskId).pipe(
        Effect.map((task) => (task.runId === info.runId && task.tenantId === info.tenantId ? task : undefined)),
        Effect.catchTag("TaskNotFound", () => Effect.succeed(undefined))
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
      const response = info.status === "paused" ? { payload: run.response === undefined ? null : run.response } : undefined
      return continueRun(workflow, info, "live", response, run.lease)
    }
    function resume<I, O, E>(run: ResumeOptions & { readonly workflow: Workflow.Workflow<I, O, E> }): Effect.Effect<RunResult<O>, E | KernelError>
    function resume(run: ResumeOptions): Effect.Effect<RunResult<unknown>, unknown>
    function resume(run: ResumeOptions & { readonly workflow?: Workflow.Any }): Effect.Effect<RunResult<unknown>, unknown> {
      return Effect.gen(function*() {
        const info = yield* store.getRun(run.tenantId, run.runId)
        // A given workflow is checked by name like a registered one (continueRun: NonDeterminism on another name).
        return yield* resumeWith(info, run.workflow ?? (yield* workflowFor(info)), run)
      }).pipe(Effect.withSpan("Kernel.resume"))
    }

    const service: Service = {
      execute,
      resume,
      replay: (workflow, run) =>
        Effect.flatMap(store.getRun(run.tenantId, run.runId), (info) => continueRun(workflow, info, "replay", undefined)).pipe(
          Effect.withSpan("Kernel.replay")
        ),
      reconcile: Effect.fn("Kernel.reconcile")(function*(run) {
        const info = yield* store.getRun(run.tenantId, run.runId)
        if (info.status !== "needs_reconciliation") {
          return yield* new Errors.InvalidRunState({ runId: run.runId, status: info.status, expected: "needs_reconciliation" })
        }
        const events = yield* readVerified(info)
        const required = lastOf(events, "ReconciliationRequired")
        const started = events[0]?.payload
        if (required === undefined || started?._tag !== "RunStarted") {
          return yield* new Errors.StoreError({ operation: "reconcile", reason: "the log has no ReconciliationRequired event" })
        }
        const awaited = required.payload.waitingOn?.[0]
        if (awaited !== undefined) {
          // Not in doubt itself: its step waits on another run. The step in doubt is settled there, never here.
          const path = yield* reconciliationPath(store, run.tenantId, run.runId)
          const last = path[path.length - 1]
          const waiting = `waiting at step ${required.event.stepKey} on run ${awaited.runId}`
          return yield* new Errors.InvalidRunState(
            last === undefined
              ? { runId: run.runId, status: `${waiting}, settled since`, expected: `in doubt itself (resume it: its step runs again)` }
              : {
                runId: run.runId,
                status: `${waiting}, whose lineage is in doubt at step ${last.stepKey} (tool ${last.tool}) of run ${last.runId}`,
                expected: `in doubt itself: reconcile run ${last.runId} at step ${last.stepKey}, then resume run ${run.runId}`
              }
          )
        }
        if (run.stepKey !== undefined && run.stepKey !== required.event.stepKey) {
          return yield* new Errors.InvalidRunState({
            runId: run.runId,
            status: `in doubt at step ${required.event.stepKey}`,
            expected: `in doubt at step ${run.stepKey}`
          })
        }
        if (run.force !== true) yield* mayBeRunning(info, events, required.event.stepKey, required.payload.tool)
        // Written as the run's current owner, without claiming it: an execution that claims it meanwhile wins.
        const exec = Execution.make(deps, { runId: run.runId, rootRunId: info.rootRunId, tenant: started.tenant, log: events, mode: "live", spentUsd: 0, ownerEpoch: info.ownerEpoch })
        const tool = required.payload.tool
        const payload: EventPayload = run.outcome.ok
          ? { _tag: "ToolCompleted", tool, result: run.outcome.result, reconciled: true }
          : { _tag: "ToolFailed", tool, kind: "tool_error", error: run.outcome.error, reconciled: true }
        yield* exec.appendOrFail(required.event.stepKey, [payload])
      }),
      readEvents: (run) =>
        Effect.flatMap(store.getRun(run.tenantId, run.runId), (info) =>
          Effect.catchTag(readVerified(info), "InvalidRunState", (cut) =>
            Effect.fail(new Errors.LogTampered({ runId: run.runId, seq: info.headSeq, reason: cut.status })))).pipe(
          Effect.withSpan("Kernel.readEvents")
        ),
      verify: Effect.fn("Kernel.verify")(function*(run) {
        const info = yield* store.getRun(run.tenantId, run.runId)
        const events = yield* store.readEvents(run.tenantId, run.runId)
        return verifyEvents(run.runId, events, {
          auditKey: deps.auditKey,
          heads: [
            { source: "store's run record", seq: info.headSeq, hash: info.headHash },
            ...(run.head === undefined ? [] : [{ source: "exported", ...run.head }])
          ],
          record: info
        })
      }),
      chat: <A, I>(options: ChatRunOptions<A, I>) => {
        const { runId, tenant, ...chatOptions } = options
        const workflow = Workflow.make({
          name: "artana.chat",
          input: Schema.Struct({ messages: Schema.Array(ChatMessage) }),
          output: chatOutput(chatOptions.outputSchema),
          run: (input, ctx) => ctx.chat({ ...chatOptions, messages: input.messages })
        })
        return execute(workflow, { runId, tenant, input: { messages: chatOptions.messages } }) as Effect.Effect<
          RunResult<Workflow.ChatResult<A>>,
          Workflow.ChatError | KernelError
        >
      },
      callTool: (options) =>
        execute(
          Workflow.make({
            name: "artana.callTool",
            input: Schema.Struct({ tool: Schema.String, args: Json.Json }),
            output: Json.Json,
            run: (input, ctx) => Effect.map(ctx.tool(input.tool, input.args), (r) => r as Json.Json)
          }),
          { runId: options.runId, tenant: options.tenant, input: { tool: options.tool, args: options.args } }
        )
    }
    return service
  })

/** The kernel layer; needs an `EventStore`, a `ModelPort` and a `ToolRegistry` (and optionally `Middleware`). */
export const layer = (options: Options = {}): Layer.Layer<Kernel, never, EventStore | ModelPort | ToolRegistry> =>
  Layer.effect(Kernel, make(options))
