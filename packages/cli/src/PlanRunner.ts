/**
 * Runs plans through the kernel. A plan run is a workflow (`artana.plan`) whose input is the plan; each step is a
 * durable tool step with the explicit key `step:<id>`, so a plan run is logged, hash-chained, resumable after a
 * crash and replayable like any other run.
 *
 * - `run` checks the plan against the tools, then executes it (or continues the run, when its id exists).
 * - `replay` re-runs a finished plan run over its log: no tool executes, every result comes from the log; a plan
 *   that does not match the log is a `PlanMismatch`; every step's output hash must equal the logged one.
 * - `loggedSteps` reads a plan run's steps back from its events, `stepsOf` as they stream by (reports use them).
 *
 * @since 0.1.0
 */
import { type Approval, Errors, type Event, EventStore, Json, Kernel, type Tenant, ToolRegistry, Workflow } from "@artana/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { McpTools } from "@artana/mcp"
import * as Plan from "./Plan.js"

/** The workflow name of every plan run. */
export const WORKFLOW = "artana.plan"

/** A file a run was started from, as the log records it: the path given, and the SHA-256 of its bytes. */
export const FileRecord = Schema.Struct({ file: Schema.String, sha256: Schema.String })
export type FileRecord = typeof FileRecord.Type

/** The policy a run ran under, as the log records it: its file, hash, and the policy itself as JSON. */
export const PolicyRecord = Schema.Struct({ file: Schema.String, sha256: Schema.String, document: Json.Json })
export type PolicyRecord = typeof PolicyRecord.Type

/** The input a plan run logs: the plan, and where it and its policy came from. */
export const Input = Schema.Struct({
  plan: Plan.Plan,
  planFile: Schema.optional(FileRecord),
  policy: Schema.optional(PolicyRecord),
  /** The tools the policy's MCP servers offered when the run started, with the decisions on them (`@artana/mcp`). */
  mcp: Schema.optional(McpTools.ToolList)
})
export type Input = typeof Input.Type

/** How a step ended. (`skipped`, in reports, is a step a stopped run never reached.) */
export const StepStatus = Schema.Literal("ok", "denied", "failed")
export type StepStatus = typeof StepStatus.Type

/** One step's outcome; `outputHash` is the SHA-256 of what the step produced (see `outputHash`). */
export const StepOutcome = Schema.Struct({
  id: Schema.String,
  tool: Schema.String,
  status: StepStatus,
  outputHash: Schema.String,
  error: Schema.optional(Schema.String)
})
export type StepOutcome = typeof StepOutcome.Type

/** What a completed plan run logs as its output. */
export const Output = Schema.Struct({ steps: Schema.Array(StepOutcome) })
export type Output = typeof Output.Type

/** What a step produced: the tool's result, or how it failed, exactly as the log's `ToolCompleted` / `ToolFailed` hold it. */
export type Produced =
  | { readonly ok: true; readonly result: Json.Json }
  | { readonly ok: false; readonly kind: Event.ToolFailureKind; readonly error: string }

/**
 * The output hash of a step: SHA-256 of the canonical JSON of its result, or of `{ failed: kind, error }` when it
 * failed. The same function hashes the log and a replay, so equal hashes mean the replay produced the same bytes.
 */
export const outputHash = (produced: Produced): string =>
  produced.ok ? Json.hash(produced.result) : Json.hash({ failed: produced.kind, error: produced.error })

/** A step's status from what it produced: a call a person rejected counts as denied, as a policy's denial does. */
export const stepStatusOf = (produced: Produced): "ok" | "denied" | "failed" =>
  produced.ok ? "ok" : produced.kind === "denied" || produced.kind === "rejected" ? "denied" : "failed"

/** The input hash of a step: SHA-256 of the canonical JSON of its arguments. */
export const inputHash = (args: Json.Json): string => Json.hash(args)

/** A step's failure as the log writes it. */
export const producedOf = (error: Workflow.ToolCallError): Produced & { readonly ok: false } => {
  switch (error._tag) {
    case "PolicyDenied":
      return { ok: false, kind: "denied", error: error.reason }
    case "InvalidToolArguments":
      return { ok: false, kind: "invalid_arguments", error: error.reason }
    case "UnknownTool":
      return { ok: false, kind: "unknown_tool", error: error.message }
    case "ToolError":
      return { ok: false, kind: error.timedOut === true ? "timeout" : "tool_error", error: error.reason }
    case "ApprovalRejected":
      return { ok: false, kind: "rejected", error: error.reason }
  }
}

const TOOL_CALL_ERRORS = new Set(["PolicyDenied", "InvalidToolArguments", "UnknownTool", "ToolError", "ApprovalRejected"])

/** True for the errors a plan step fails with. */
export const isToolCallError = (u: unknown): u is Workflow.ToolCallError =>
  Predicate.hasProperty(u, "_tag") && typeof u._tag === "string" && TOOL_CALL_ERRORS.has(u._tag)

/** Called as steps start and finish (live and in a replay): progress displays use it. */
export interface Observer {
  readonly started?: ((step: Plan.Step, index: number, total: number) => Effect.Effect<void>) | undefined
  readonly finished?: ((outcome: StepOutcome, index: number, total: number) => Effect.Effect<void>) | undefined
}

export interface WorkflowOptions {
  /** The tools steps call (the kernel's registry). */
  readonly tools: ToolRegistry.Service
  /** Run this plan instead of the one in the run's input (a replay checks a plan file against a log this way). */
  readonly plan?: Plan.Plan | undefined
  readonly observer?: Observer | undefined
}

/**
 * The plan workflow. Steps run in order, each as `ctx.tool(tool, args, { key: "step:<id>" })`. A denied or failed
 * step ends the run with its error under `on_error: stop` (the run fails), and is recorded and passed over under
 * `on_error: continue` (the run completes; its output lists every step's status).
 */
export const workflow = (options: WorkflowOptions): Workflow.Workflow<Input, Output, Workflow.ToolCallError> =>
  Workflow.make({
    name: WORKFLOW,
    input: Input,
    output: Output,
    run: (input, ctx) =>
      Effect.gen(function*() {
        const plan = options.plan ?? input.plan
        const total = plan.steps.length
        const outcomes: Array<StepOutcome> = []
        for (const [index, step] of plan.steps.entries()) {
          if (options.observer?.started !== undefined) yield* options.observer.started(step, index, total)
          const key = Plan.stepKey(step.id)
          const tool = options.tools.get(step.tool)
          const args = tool === undefined ? Either.left(undefined) : tool.decodeArguments(JSON.stringify(step.args))
          // Arguments that do not decode were refused by `Plan.check` before the run; by name, the kernel logs the refusal.
          const called = yield* Effect.either(
            tool === undefined || Either.isLeft(args) ? ctx.tool(step.tool, step.args, { key }) : ctx.tool(tool, args.right, { key })
          )
          // A call by name (no such tool) never succeeds: the kernel refuses it as an unknown tool.
          const encoded = Either.flatMap(called, (result) => tool?.encodeResult(result) ?? Either.right(null))
          const produced: Produced = Either.isRight(encoded) ? { ok: true, result: encoded.right } : producedOf(encoded.left)
          const outcome: StepOutcome = {
            id: step.id,
            tool: step.tool,
            status: stepStatusOf(produced),
            outputHash: outputHash(produced),
            ...(produced.ok ? {} : { error: produced.error })
          }
          outcomes.push(outcome)
          if (options.observer?.finished !== undefined) yield* options.observer.finished(outcome, index, total)
          if (Either.isLeft(encoded) && plan.onError === "stop") return yield* Effect.fail(encoded.left)
        }
        return { steps: outcomes }
      })
  })

// -------------------------------------------------------------------------------------------------- errors

/** A plan that does not match a run's log: the step where they part, what the log holds and what the plan asks. */
export class PlanMismatch extends Schema.TaggedError<PlanMismatch>()("PlanMismatch", {
  runId: Schema.String,
  stepKey: Schema.String,
  expected: Schema.String,
  actual: Schema.String
}) {
  override get message() {
    return `the plan does not match the log of run ${this.runId} at ${this.stepKey}: the log holds ${this.expected}, ` +
      `the plan asks for ${this.actual}`
  }
}

/** A run that is not a plan run (another workflow's), where a plan run was needed. */
export class NotAPlanRun extends Schema.TaggedError<NotAPlanRun>()("NotAPlanRun", {
  runId: Schema.String,
  workflow: Schema.String
}) {
  override get message() {
    return `run ${this.runId} is a "${this.workflow}" run, not a plan run (${WORKFLOW})`
  }
}

// ------------------------------------------------------------------------------------------------ the log

/** A plan step read back from the log. */
export interface LoggedStep {
  readonly id: string
  readonly key: string
  readonly tool: string
  /** The arguments as logged (JSON text parsed; the text itself when it is not JSON). */
  readonly args: Json.Json
  readonly inputHash: string
  /** Undefined while the step is in doubt (requested, no outcome logged). */
  readonly produced: Produced | undefined
  readonly outputHash: string | undefined
  /** Set when the call was denied: why, and by which middleware or capability. */
  readonly denial: { readonly reason: string; readonly middleware?: string | undefined; readonly capability?: string | undefined } | undefined
  /** The outcome was settled by a person (`artana reconcile`, `Kernel.reconcile`) after the step was in doubt. */
  readonly reconciled: boolean
  readonly startedAt: number
  readonly finishedAt: number | undefined
  /** Every event of the step, in order (middleware notes included). */
  readonly events: ReadonlyArray<Event.Event>
  /** The step's call waits for a person's approval (`approval: required`): no decision is logged yet. */
  readonly awaitingApproval?: boolean | undefined
}

const parseArgs = (text: string): Json.Json => {
  try {
    const parsed: unknown = JSON.parse(text)
    const checked = Json.fromUnknown(parsed)
    return checked.ok ? checked.json : text
  } catch {
    return text
  }
}

/**
 * A plan step from its events (those logged under its key, in order), or undefined when they hold no `ToolRequested`
 * (a stretch of the log that starts after the step's request).
 */
export const loggedStep = (key: string, stepEvents: ReadonlyArray<Event.Event>): LoggedStep | undefined => {
  const id = Plan.stepIdOf(key)
  // A call that waited for approval: its request is its `ToolRequested` once approved, else its `ApprovalRequested`.
  const requested = stepEvents.find((e) => e.payload._tag === "ToolRequested") ?? stepEvents.find((e) => e.payload._tag === "ApprovalRequested")
  if (id === undefined || requested === undefined || (requested.payload._tag !== "ToolRequested" && requested.payload._tag !== "ApprovalRequested")) return undefined
  const awaitingApproval = requested.payload._tag === "ApprovalRequested" && !stepEvents.some((e) => e.payload._tag === "ApprovalDecided")
  let produced: Produced | undefined
  let finishedAt: number | undefined
  let denial: LoggedStep["denial"]
  let reconciled = false
  for (const e of stepEvents) {
    const p = e.payload
    if (p._tag === "ToolCompleted") {
      produced = { ok: true, result: p.result }
      finishedAt = e.timestamp
      reconciled = p.reconciled === true
    } else if (p._tag === "ToolFailed") {
      produced = { ok: false, kind: p.kind, error: p.error }
      finishedAt = e.timestamp
      reconciled = p.reconciled === true
    } else if (p._tag === "PolicyDenied") {
      denial = { reason: p.reason, middleware: p.middleware, capability: p.capability }
    }
  }
  const args = parseArgs(requested.payload.arguments)
  return {
    id,
    key,
    tool: requested.payload.tool,
    args,
    inputHash: inputHash(args),
    produced,
    outputHash: produced === undefined ? undefined : outputHash(produced),
    denial,
    reconciled,
    startedAt: requested.timestamp,
    finishedAt,
    events: stepEvents,
    ...(awaitingApproval ? { awaitingApproval } : {})
  }
}

/** The steps of a plan run, in the order they were logged. */
export const loggedSteps = (events: ReadonlyArray<Event.Event>): ReadonlyArray<LoggedStep> => {
  const byKey = new Map<string, Array<Event.Event>>()
  for (const event of events) {
    if (Plan.stepIdOf(event.stepKey) === undefined) continue
    const list = byKey.get(event.stepKey)
    if (list === undefined) byKey.set(event.stepKey, [event])
    else list.push(event)
  }
  return [...byKey].flatMap(([key, stepEvents]) => loggedStep(key, stepEvents) ?? [])
}

/**
 * The steps of a plan run as its events stream by (a page at a time, say): each step once the next step's events
 * begin, or the stream ends. A plan runs one step at a time, so a step's events follow one another (the run's own
 * events, a resume, may come between them); memory holds one step's events, however long the run.
 *
 * @example
 * const steps = PlanRunner.stepsOf(kernel.events({ tenantId, runId }))
 */
export const stepsOf = <E, R>(events: Stream.Stream<Event.Event, E, R>): Stream.Stream<LoggedStep, E, R> =>
  events.pipe(
    Stream.filter((event) => Plan.stepIdOf(event.stepKey) !== undefined),
    Stream.groupAdjacentBy((event) => event.stepKey),
    Stream.filterMap(([key, stepEvents]) => Option.fromNullable(loggedStep(key, Chunk.toReadonlyArray(stepEvents))))
  )

/** The input a plan run logged, decoded; undefined when the first event is not a plan run's `RunStarted`. */
export const loggedInput = (events: ReadonlyArray<Event.Event>): Input | undefined => {
  const first = events[0]?.payload
  if (first === undefined || first._tag !== "RunStarted" || first.workflow !== WORKFLOW) return undefined
  return Either.getOrUndefined(Schema.decodeUnknownEither(Input)(first.input))
}

// ------------------------------------------------------------------------------------------ run and replay

/** Why a run failed: the error's tag and message. */
export interface Failure {
  readonly tag: string
  readonly message: string
}

/** How a plan run ended. */
export interface RunOutcome {
  readonly runId: string
  readonly status: Event.RunStatus
  /** The steps this execution ran or read back, in order. */
  readonly steps: ReadonlyArray<StepOutcome>
  /** Set when the run failed: the step error that stopped it, or the logged error of a run that had failed before. */
  readonly failure?: Failure | undefined
  /** Set when the run needs reconciliation: the step in doubt that waits for a person (`artana reconcile`). */
  readonly inDoubt?: { readonly stepKey: string; readonly tool: string } | undefined
  /** Set when the run is paused for a step's approval (`approval: required` in the policy): `artana approve` / `reject`. */
  readonly approval?: Approval.ApprovalRequest | undefined
}

export interface RunOptions {
  /** The run's id; a new UUID when absent. An existing id continues that run (after a crash), if its plan is the same. */
  readonly runId?: string | undefined
  readonly tenant: Tenant.TenantContext
  readonly input: Input
  readonly observer?: Observer | undefined
}

/** A plan as canonical JSON text, to compare two plans. */
const planText = (plan: Plan.Plan): string => {
  const json = Json.fromUnknown(Schema.encodeSync(Plan.Plan)(plan))
  return json.ok ? Json.canonical(json.json) : JSON.stringify(plan)
}

const collecting = (observer: Observer | undefined, into: Array<StepOutcome>): Observer => ({
  started: observer?.started,
  finished: (outcome, index, total) => {
    into.push(outcome)
    return observer?.finished?.(outcome, index, total) ?? Effect.void
  }
})

/**
 * Checks the plan against the registered tools, then runs it. Nothing is written when the check fails. A step that
 * stops the run is not an error of this effect: the outcome says `failed`, with the step's error.
 *
 * @example
 * const outcome = yield* PlanRunner.run({ tenant, input: { plan } })
 * // { runId, status: "completed", steps: [{ id: "read", tool: "fs.read", status: "ok", outputHash: "…" }] }
 */
export const run = Effect.fn("PlanRunner.run")(function*(options: RunOptions) {
  const tools = yield* ToolRegistry.ToolRegistry
  const kernel = yield* Kernel.Kernel
  const store = yield* EventStore.EventStore
  yield* Plan.check(options.input.plan, tools, options.input.planFile?.file)
  const runId = options.runId ?? crypto.randomUUID()
  if (options.runId !== undefined) {
    // The plan the run started with is in its first event.
    const existing = yield* Effect.either(store.readEvents(options.tenant.tenantId, runId, 1, 1))
    if (Either.isRight(existing)) {
      const logged = loggedInput(existing.right)
      if (logged === undefined) {
        const started = existing.right[0]?.payload
        return yield* new NotAPlanRun({ runId, workflow: started?._tag === "RunStarted" ? started.workflow : "unknown" })
      }
      if (planText(logged.plan) !== planText(options.input.plan)) {
        return yield* new PlanMismatch({ runId, stepKey: "run", expected: "another plan (the one the run started with)", actual: "this plan" })
      }
    } else if (existing.left._tag !== "RunNotFound") return yield* existing.left
  }
  const steps: Array<StepOutcome> = []
  const flow = workflow({ tools, observer: collecting(options.observer, steps) })
  const result = yield* Effect.either(kernel.execute(flow, { runId, tenant: options.tenant, input: options.input }))
  if (Either.isRight(result)) {
    const r = result.right
    if (r.status === "needs_reconciliation") return { runId, status: r.status, steps, inDoubt: { stepKey: r.stepKey, tool: r.tool } } satisfies RunOutcome
    if (r.status === "paused" && r.approval !== undefined) return { runId, status: r.status, steps, approval: r.approval } satisfies RunOutcome
    return { runId, status: r.status, steps: r.status === "completed" && steps.length === 0 ? r.output.steps : steps } satisfies RunOutcome
  }
  const error = result.left
  if (isToolCallError(error)) return { runId, status: "failed", steps, failure: { tag: error._tag, message: error.message } } satisfies RunOutcome
  if (error._tag === "RunFailedError") return { runId, status: "failed", steps, failure: { tag: error.errorTag, message: error.reason } } satisfies RunOutcome
  return yield* Effect.fail(error)
})

/** A replayed step: its outcome in the replay, and the output hash the log holds for it. */
export interface ReplayedStep extends StepOutcome {
  readonly loggedOutputHash: string | undefined
}

/** How a replay ended: the same status as the run, and each step's replayed and logged output hash (equal). */
export interface ReplayOutcome {
  readonly runId: string
  readonly status: "completed" | "failed"
  readonly steps: ReadonlyArray<ReplayedStep>
  readonly failure?: Failure | undefined
}

export interface ReplayOptions {
  readonly tenantId: string
  readonly runId: string
  /** A plan to check against the log; default the plan the run logged. */
  readonly plan?: Plan.Plan | undefined
  readonly observer?: Observer | undefined
}

/**
 * Replays a finished plan run over its log through `kernel.replay`: no tool runs and nothing is written. Fails with
 * `PlanMismatch` when the plan asks for another step than the log holds, or a step's replayed output hash differs
 * from the logged one; with `NotAPlanRun` for another workflow's run; with `InvalidRunState` for an unfinished run.
 */
export const replay = Effect.fn("PlanRunner.replay")(function*(options: ReplayOptions) {
  const tools = yield* ToolRegistry.ToolRegistry
  const kernel = yield* Kernel.Kernel
  const store = yield* EventStore.EventStore
  const { runId, tenantId } = options
  const info = yield* store.getRun(tenantId, runId)
  if (info.workflow !== WORKFLOW) return yield* new NotAPlanRun({ runId, workflow: info.workflow })
  if (info.status !== "completed" && info.status !== "failed") {
    return yield* new Errors.InvalidRunState({ runId, status: info.status, expected: "completed or failed (only a finished run replays)" })
  }
  if (options.plan !== undefined) yield* Plan.check(options.plan, tools)
  // The logged output hash of each step, read from the verified log a page at a time.
  const logged = new Map<string, string | undefined>()
  yield* Stream.runForEach(stepsOf(kernel.events({ tenantId, runId })), (step) => Effect.sync(() => void logged.set(step.id, step.outputHash)))
  const steps: Array<StepOutcome> = []
  const flow = workflow({ tools, plan: options.plan, observer: collecting(options.observer, steps) })
  const result = yield* Effect.either(kernel.replay(flow, { tenantId, runId }))
  let failure: Failure | undefined
  if (Either.isLeft(result)) {
    const error = result.left
    if (error._tag === "NonDeterminism") {
      return yield* new PlanMismatch({ runId, stepKey: error.stepKey, expected: error.expected, actual: error.actual })
    }
    if (!isToolCallError(error)) return yield* Effect.fail(error)
    // How the log says the run failed: its last event, read alone.
    const runFailed = (yield* kernel.lastEvent({ tenantId, runId }, (e) => e.payload._tag === "RunFailed"))?.payload
    if (info.status !== "failed" || runFailed?._tag !== "RunFailed" || runFailed.errorTag !== error._tag) {
      const last = steps[steps.length - 1]
      return yield* new PlanMismatch({
        runId,
        stepKey: last === undefined ? "run" : Plan.stepKey(last.id),
        expected: runFailed?._tag === "RunFailed" ? `the run failing with ${runFailed.errorTag}` : "a completed run",
        actual: `the run failing with ${error._tag}`
      })
    }
    failure = { tag: error._tag, message: error.message }
  }
  const replayed: Array<ReplayedStep> = []
  for (const step of steps) {
    const loggedHash = logged.get(step.id)
    if (loggedHash !== step.outputHash) {
      return yield* new PlanMismatch({
        runId,
        stepKey: Plan.stepKey(step.id),
        expected: `output hash ${loggedHash ?? "(none)"}`,
        actual: `output hash ${step.outputHash} in the replay`
      })
    }
    replayed.push({ ...step, loggedOutputHash: loggedHash })
  }
  return { runId, status: failure === undefined ? "completed" : "failed", steps: replayed, ...(failure === undefined ? {} : { failure }) } satisfies ReplayOutcome
})
