/**
 * `ArtanaSession`: the common case without tasks or runs in sight. Submit a workflow, wait for its result,
 * answer the human it paused for; workers (`Worker.run`, in this process or others) do the rest.
 *
 * @since 0.1.0
 */
import { type Approval, Errors, Json, Kernel, TaskQueue, type Tenant, type Workflow } from "@artana/core"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** What `submit` takes: a workflow, its input (decoded), its tenant, and optional scheduling. */
export interface SubmitRequest<I, O, E> {
  readonly workflow: Workflow.Workflow<I, O, E>
  readonly input: I
  readonly tenant: Tenant.TenantContext
  readonly runAt?: number | undefined
  readonly repeatIntervalSeconds?: number | undefined
  readonly idempotencyKey?: string | undefined
  readonly timeoutSeconds?: number | undefined
  readonly retry?: TaskQueue.RetryPolicy | undefined
}

/** Where a submitted workflow stands once it needs nobody but a person, or has ended. */
export type Result =
  | { readonly status: "completed"; readonly taskId: string; readonly runId: string; readonly output: Json.Json }
  | { readonly status: "failed"; readonly taskId: string; readonly runId: string; readonly errorTag: string; readonly error: string }
  /** Waiting for `respond` (a human decision, or a tool call in doubt to reconcile). */
  | { readonly status: "paused"; readonly taskId: string; readonly runId: string; readonly ticket: string; readonly reason: string }
  | { readonly status: "expired" | "cancelled"; readonly taskId: string; readonly runId: string }

/** `waitForResult` gave up before the task settled; the task goes on. */
export class WaitTimeout extends Schema.TaggedError<WaitTimeout>()("WaitTimeout", {
  taskId: Schema.String,
  status: Schema.String,
  timeoutMillis: Schema.Number
}) {
  override get message() {
    return `task ${this.taskId} is still ${this.status} after ${this.timeoutMillis} ms; it goes on: wait again, or cancel it`
  }
}

/** The session was built without a `Kernel` in context, so it cannot read or decide approvals. */
export class ApprovalsUnavailable extends Schema.TaggedError<ApprovalsUnavailable>()("ApprovalsUnavailable", {}) {
  override get message() {
    return "this session has no Kernel: provide Kernel.layer (on the same store) below ArtanaSession.layer to list and decide approvals"
  }
}

export interface WaitOptions {
  /** Default: wait as long as it takes. */
  readonly timeout?: Duration.DurationInput | undefined
  /** How often the queue is read. Default 200 ms. */
  readonly pollInterval?: Duration.DurationInput | undefined
}

export interface Service {
  /** Queues the workflow; returns the task's id. An `idempotencyKey` already used returns the first task's id. */
  readonly submit: <I, O, E>(
    request: SubmitRequest<I, O, E>
  ) => Effect.Effect<string, Errors.InvalidInput | TaskQueue.InvalidTask | Errors.StoreError>
  /**
   * Waits until the tenant's task completed, failed, paused, expired or was cancelled. Every call below acts within
   * the tenant it is given: another tenant's task id is `TaskNotFound`, exactly as an id that never existed.
   */
  readonly waitForResult: (
    tenantId: string,
    taskId: string,
    options?: WaitOptions
  ) => Effect.Effect<Result, WaitTimeout | TaskQueue.TaskNotFound | Errors.StoreError>
  /** The tenant's tasks, newest first. */
  readonly list: (tenantId: string, filter?: TaskQueue.ListFilter) => Effect.Effect<ReadonlyArray<TaskQueue.Task>, Errors.StoreError>
  readonly cancel: (
    tenantId: string,
    taskId: string
  ) => Effect.Effect<void, TaskQueue.TaskNotFound | TaskQueue.InvalidTaskState | Errors.StoreError>
  /**
   * Answers a paused task: the response is stored and the task queued again; a worker resumes the run with it. Name
   * the person with `respondedBy`: the run's log records who responded (`HumanResponded.respondedBy`).
   */
  readonly respond: (
    tenantId: string,
    taskId: string,
    response: Json.Json,
    options?: TaskQueue.RespondOptions
  ) => Effect.Effect<void, TaskQueue.TaskNotFound | TaskQueue.InvalidTaskState | Errors.StoreError>
  /** The tenant's tool calls waiting for a person's decision (the approvals inbox; `Kernel.approvals`). */
  readonly approvals: (
    filter: Approval.ApprovalsFilter
  ) => Effect.Effect<ReadonlyArray<Approval.PendingApproval>, ApprovalsUnavailable | Errors.StoreError | Errors.LogTampered>
  /**
   * Approves (optionally with edited arguments) or rejects a pending call (`Kernel.decideApproval`). The decision is
   * logged in the run's chain and queues the paused task again: a worker continues the run with it.
   */
  readonly decide: (decision: Approval.DecideRequest) => Effect.Effect<Approval.Decided, ApprovalsUnavailable | Approval.DecideError>
  /** The inbox a page at a time, the longest waiting first (`Kernel.approvalsPage`): pass `next` as `after`. */
  readonly approvalsPage: (
    filter: Approval.ApprovalsFilter
  ) => Effect.Effect<Approval.ApprovalsPage, ApprovalsUnavailable | Errors.StoreError | Errors.LogTampered | Errors.InvalidInput>
}

/** The session API over the task queue. */
export class ArtanaSession extends Context.Tag("@artana/worker/ArtanaSession")<ArtanaSession, Service>() {}

/** The result a task shows, or undefined while it is queued or running. */
export const resultOf = (task: TaskQueue.Task): Result | undefined => {
  const ids = { taskId: task.taskId, runId: task.runId }
  const outcome = task.outcome
  switch (task.status) {
    case "queued":
    case "running":
      return undefined
    case "expired":
    case "cancelled":
      return { status: task.status, ...ids }
    case "completed":
      return outcome?._tag === "completed" ? { status: "completed", ...ids, output: outcome.output } : undefined
    case "failed":
      return outcome?._tag === "failed" ? { status: "failed", ...ids, errorTag: outcome.errorTag, error: outcome.error } : undefined
    case "paused":
      if (outcome?._tag === "paused") return { status: "paused", ...ids, ticket: outcome.ticket, reason: outcome.reason }
      if (outcome?._tag === "needs_reconciliation") {
        // A step that waits on another run in doubt is settled there (the last run of the path), never here.
        const path = outcome.waitingOn ?? []
        const awaited = path[0]
        const doubt = path[path.length - 1]
        return {
          status: "paused",
          ...ids,
          ticket: outcome.stepKey,
          reason: awaited === undefined || doubt === undefined
            ? `the call to tool "${outcome.tool}" at step ${outcome.stepKey} is in doubt: settle it with Kernel.reconcile, then respond`
            : `step ${outcome.stepKey} waits on run ${awaited.runId}, whose lineage has the call to tool "${doubt.tool}" ` +
              `at step ${doubt.stepKey} of run ${doubt.runId} in doubt: settle that one with Kernel.reconcile, then respond`
        }
      }
      return undefined
  }
}

/**
 * Builds the session on the `TaskQueue` in context; with a `Kernel` in context too (a worker process has one), it also
 * lists and decides approvals. A process that only submits needs no kernel.
 */
export const make: Effect.Effect<Service, never, TaskQueue.TaskQueue> = Effect.gen(function*() {
  const queue = yield* TaskQueue.TaskQueue
  const kernel = yield* Effect.serviceOption(Kernel.Kernel)
  const withKernel = <A, E>(f: (k: Kernel.Service) => Effect.Effect<A, E>): Effect.Effect<A, E | ApprovalsUnavailable> =>
    Option.match(kernel, { onNone: () => Effect.fail(new ApprovalsUnavailable()), onSome: f })
  const service: Service = {
    submit: Effect.fn("ArtanaSession.submit")(function*(request) {
      const encoded = request.workflow.encodeInput(request.input)
      const json = Either.isRight(encoded) ? Json.fromUnknown(encoded.right) : undefined
      if (json === undefined || !json.ok) {
        const reason = Either.isLeft(encoded) ? encoded.left.message : json !== undefined && !json.ok ? json.error : "not JSON"
        return yield* new Errors.InvalidInput({ what: `input of workflow "${request.workflow.name}"`, reason })
      }
      const { workflow, input: _input, ...rest } = request
      const task = yield* queue.enqueue({ ...rest, workflow: workflow.name, input: json.json })
      return task.taskId
    }),
    waitForResult: (tenantId, taskId, options = {}) => {
      const interval = Duration.decode(options.pollInterval ?? Duration.millis(200))
      const poll: Effect.Effect<Result, TaskQueue.TaskNotFound | Errors.StoreError> = Effect.flatMap(queue.get(tenantId, taskId), (task) => {
        const result = resultOf(task)
        return result === undefined ? Effect.zipRight(Effect.sleep(interval), poll) : Effect.succeed(result)
      })
      if (options.timeout === undefined) return poll
      const timeout = Duration.decode(options.timeout)
      return Effect.timeoutOption(poll, timeout).pipe(
        Effect.flatMap(Option.match({
          onSome: Effect.succeed,
          onNone: () =>
            Effect.flatMap(queue.get(tenantId, taskId), (task) =>
              Effect.fail(new WaitTimeout({ taskId, status: task.status, timeoutMillis: Duration.toMillis(timeout) })))
        }))
      )
    },
    list: (tenantId, filter) => queue.list(tenantId, filter),
    cancel: (tenantId, taskId) => Effect.asVoid(queue.cancel(tenantId, taskId)),
    respond: (tenantId, taskId, response, options) => Effect.asVoid(queue.respond(tenantId, taskId, response, options)),
    approvals: (filter) => withKernel((k) => k.approvals(filter)),
    decide: (decision) => withKernel((k) => k.decideApproval(decision)),
    approvalsPage: (filter) => withKernel((k) => k.approvalsPage(filter))
  }
  return service
})

/** `ArtanaSession` on the `TaskQueue` (and, for approvals, the `Kernel`) in context. */
export const layer: Layer.Layer<ArtanaSession, never, TaskQueue.TaskQueue> = Layer.effect(ArtanaSession, make)
