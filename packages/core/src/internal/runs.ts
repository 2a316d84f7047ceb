/**
 * Runs, started and continued. A new run's `RunStarted` creates it; an existing run returns its settled state when
 * it has one (completed, failed, waiting for a person or a response), else its verified log is replayed and its
 * code driven on, live or as a replay.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Approval from "../Approval.js"
import * as Errors from "../Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY, type RunInfo } from "../Event.js"
import { reconciliationPath } from "../EventStore.js"
import type { KernelError, RunResult, StartOptions } from "../Kernel.js"
import type { Lease } from "../Lease.js"
import { firstIssue } from "../Tool.js"
import type * as Workflow from "../Workflow.js"
import * as ContinueAsNew from "./continueAsNew.js"
import { decodeKernelFailure, drive, toJson } from "./drive.js"
import * as Execution from "./execution.js"
import * as Signals from "./signals.js"
import * as Tracing from "./tracing.js"
import { headEvent, lastEventOf, lastOf, ownHeadEvent, type ReadError, verifiedPages } from "./ledger.js"

/** What the kernel's operations on runs share. */
export interface Runtime {
  readonly deps: Execution.Deps
  /** The lineage's spend, read from the store. */
  readonly lineageSpend: (tenantId: string, rootRunId: string) => Effect.Effect<number, Errors.StoreError>
  /**
   * The services workflow code runs with: the kernel's own, and the kernel itself, so a workflow that needs one (an
   * agent: the kernel, the model, its memory) reads it at run time and stays a plain value.
   */
  readonly services: () => Context.Context<never>
}

/**
 * A live run's state when nothing is to run (`{ result }`), or why this execution takes it over (`{ resumed }`,
 * undefined when it need not claim it first). A settled run's state is read from its head event (`headEvent`: O(1)
 * in the run's length), or, when the event it needs is not the head, from its verified log read a page at a time.
 */
const settled = <I, O, E>(
  runtime: Runtime,
  workflow: Workflow.Workflow<I, O, E>,
  info: RunInfo,
  response: { readonly payload: unknown } | undefined,
  takeover: string | undefined
) =>
  Effect.gen(function*() {
    const { store, auditKey } = runtime.deps
    const lastEvent = <T extends EventPayload["_tag"]>(tag: T) => Effect.mapError(lastEventOf(store, auditKey, info, tag), readFailure)
    // A finished run's end is its head event: a record whose status its head does not say was edited (LogTampered).
    const endEvent = <T extends "RunCompleted" | "RunFailed">(tag: T) =>
      Effect.mapError(
        Effect.flatMap(headEvent(store, auditKey, info), (head) =>
          head.payload._tag === tag
            ? Effect.succeed(lastOf([head], tag)!)
            : Effect.fail(new Errors.LogTampered({ runId: info.runId, seq: head.seq, reason: `the run record says ${info.status}, but its log ends with ${head.type}` }))),
        readFailure
      )
    const resumed = info.status === "running" ? takeover ?? "recovery: the run was left running" : undefined
    switch (info.status) {
      case "completed": {
        const output = workflow.decodeOutput((yield* endEvent("RunCompleted")).payload.output)
        if (Either.isLeft(output)) return yield* new Errors.InvalidInput({ what: `logged output of run ${info.runId}`, reason: firstIssue(output.left).reason })
        return { result: { status: "completed", runId: info.runId, output: output.right } as const }
      }
      case "failed": {
        const failed = (yield* endEvent("RunFailed")).payload
        // The original typed error, when the workflow (or the kernel, for a budget) logged it encoded.
        const original = failed?.encoded === undefined ? undefined : workflow.decodeError(failed.encoded)
        if (original !== undefined && Either.isRight(original)) return yield* Effect.fail(original.right)
        const kernelFailure = failed?.encoded === undefined ? undefined : decodeKernelFailure(failed.encoded)
        if (kernelFailure !== undefined && Either.isRight(kernelFailure)) return yield* Effect.fail(kernelFailure.right)
        return yield* new Errors.RunFailedError({ runId: info.runId, errorTag: failed?.errorTag ?? "Error", reason: failed?.error ?? "unknown" })
      }
      case "needs_reconciliation": {
        const required = yield* lastEvent("ReconciliationRequired")
        const awaited = required?.payload.waitingOn?.[0]
        if (required !== undefined && awaited !== undefined) {
          // The step waits on another run in doubt. Once that run is settled, the run goes on (its step runs
          // again and drives that run on); until then it still waits, and nothing is written.
          const waitingOn = yield* reconciliationPath(store, info.tenantId, awaited.runId)
          if (waitingOn.length === 0) {
            return { resumed: `the run its step ${required.event.stepKey} waited on (${awaited.runId}) no longer needs reconciliation` }
          }
          return { result: { status: "needs_reconciliation", runId: info.runId, stepKey: required.event.stepKey, tool: required.payload.tool, waitingOn } as const }
        }
        return { result: { status: "needs_reconciliation", runId: info.runId, stepKey: required?.event.stepKey ?? "", tool: required?.payload.tool ?? "" } as const }
      }
      case "paused": {
        // A head that cannot be read (a log cut or broken) is reported by the read that follows, as before.
        const read = yield* Effect.either(ownHeadEvent(store, auditKey, info))
        const head = Either.isRight(read) ? read.right : undefined
        if (head?.payload._tag === "ApprovalRequested") {
          // Waiting for a decision on a tool call, which `decideApproval` writes; a response answers no approval.
          const approval = Approval.requestOf(head.stepKey, head.payload)
          // (`resume` of a paused run without a response brings a null one.)
          if (response !== undefined && response.payload !== null) {
            return yield* new Errors.InvalidRunState({
              runId: info.runId,
              status: `paused for approval ${approval.approvalId} (a call to tool "${approval.tool}")`,
              expected: "paused for a human response (decide an approval with approve or reject)"
            })
          }
          return { result: { status: "paused", runId: info.runId, ticket: approval.approvalId, reason: Approval.reasonOf(approval), approval } as const }
        }
        // The head is the pause, as a rule (read once: O(1) in the run's length).
        const pause = head?.payload._tag === "PauseRequested" ? { event: head, payload: head.payload } : yield* lastEvent("PauseRequested")
        const paused = { status: "paused", runId: info.runId, ticket: pause?.payload.ticket ?? "", reason: pause?.payload.reason ?? "" } as const
        // A run paused at a signal wait goes on once a signal of its name came or its deadline passed; a resume before
        // that writes nothing (see `Signals.pausedWait`).
        const wait = pause === undefined ? undefined : yield* Signals.pausedWait(store, info, pause.event)
        if (wait !== undefined) {
          // `resume` without a response brings `null` to a paused run: only a real one is refused.
          if (response !== undefined && response.payload !== null) {
            return yield* new Errors.InvalidRunState({
              runId: info.runId,
              status: `paused, waiting for signal "${wait.name}"`,
              expected: "paused for a person (send the signal with Kernel.signal, then resume without a response)"
            })
          }
          if (wait.wake === undefined) return { result: wait.deadline === undefined ? paused : { ...paused, wakeAt: wait.deadline } }
          // Not a person's answer: no later pause may take it.
          return { resumed: wait.wake, signalWait: true }
        }
        if (response === undefined) return { result: paused }
        return { resumed }
      }
      case "running":
        if (response !== undefined) {
          return yield* new Errors.InvalidRunState({ runId: info.runId, status: info.status, expected: "paused (only a paused run takes a response)" })
        }
    }
    return { resumed }
  })

/**
 * Events per page of the log a replay reads. A page lives until the code has consumed its steps: a smaller page dies
 * young (in V8's young generation, freed for little) rather than being promoted and swelling the heap; a query per
 * 256 events costs a replay little.
 */
const REPLAY_PAGE_SIZE = 256

/** A failure to read a run's log as a kernel error: a run removed meanwhile is a store failure. */
const readFailure = (error: ReadError) =>
  error._tag === "RunNotFound" ? new Errors.StoreError({ operation: "readEvents", reason: error.message }) : error

/**
 * Continues an existing run: returns its settled state, or replays its log and drives its code on. The log is read a
 * page at a time as the code asks for steps, each page verified before any of its events is used, and the run
 * record's head checked when the log ends, before anything runs live (see `replayCursor`).
 */
export const continueRun = <I, O, E>(
  runtime: Runtime,
  workflow: Workflow.Workflow<I, O, E>,
  info: RunInfo,
  mode: "live" | "replay",
  response: { readonly payload: unknown } | undefined,
  lease?: Lease | undefined,
  /** Why this execution takes over a run left running (default: a recovery); a fork's first execution says so. */
  takeover?: string | undefined
): Effect.Effect<RunResult<O>, E | KernelError> =>
  Effect.scoped(Effect.gen(function*() {
    const { deps, lineageSpend } = runtime
    // A run that continued as new: its work goes on in its successor (a replay replays the run, then the successor).
    if (mode === "live" && info.status === "continued") {
      return yield* continueRun(runtime, workflow, yield* ContinueAsNew.chainEnd(deps.store, info), mode, response, lease)
    }
    const wrongWorkflow = (name: string) =>
      new Errors.NonDeterminism({ runId: info.runId, stepKey: RUN_STEP_KEY, expected: `workflow "${name}"`, actual: `workflow "${workflow.name}"` })
    // The record's workflow is its RunStarted's (checked again below, once that event is read and verified).
    if (info.workflow !== workflow.name) return yield* wrongWorkflow(info.workflow)
    // Why this execution takes the run over, when it must claim it first.
    let resumed: string | undefined = undefined
    if (mode === "live") {
      const state = yield* settled(runtime, workflow, info, response, takeover)
      if ("result" in state) return state.result
      resumed = state.resumed
      if ("signalWait" in state) response = undefined
    }
    const next = Effect.mapError(verifiedPages(deps.store, deps.auditKey, info, { pageSize: REPLAY_PAGE_SIZE }), readFailure)
    const first = Option.getOrElse(yield* next, (): ReadonlyArray<Event> => [])
    const started = first[0]?.payload
    if (started === undefined || started._tag !== "RunStarted") {
      return yield* new Errors.StoreError({ operation: "readEvents", reason: `run ${info.runId} has no RunStarted event` })
    }
    if (started.workflow !== workflow.name) return yield* wrongWorkflow(started.workflow)
    const input = workflow.decodeInput(started.input)
    if (Either.isLeft(input)) {
      return yield* new Errors.InvalidInput({ what: `logged input of run ${info.runId}`, reason: firstIssue(input.left).reason })
    }
    // A replay compares how its code ends with how the log says the run ended: the output with a completed run's, the
    // failure with a failed run's, the handover with a continued run's (each run's head event).
    const recorded = mode === "replay" && (info.status === "completed" || info.status === "failed" || info.status === "continued")
      ? yield* Effect.mapError(headEvent(deps.store, deps.auditKey, info), readFailure)
      : undefined
    const exec = Execution.make(deps, {
      runId: info.runId,
      rootRunId: info.rootRunId,
      tenant: started.tenant,
      log: { first, next },
      head: { seq: info.headSeq, hash: info.headHash },
      resumed,
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
    const continuation = ContinueAsNew.make(runtime, workflow, exec, {
      runId: info.runId,
      rootRunId: info.rootRunId,
      started,
      recorded: recorded?.payload._tag === "RunContinued" ? recorded.payload : undefined
    }, mode, lease, (next, nextMode) => continueRun(runtime, workflow, next, nextMode, undefined, lease))
    const end = recorded?.payload._tag === "RunCompleted" || recorded?.payload._tag === "RunFailed" ? recorded.payload : undefined
    const traced = {
      runId: info.runId,
      rootRunId: info.rootRunId,
      parentRunId: started.parentRunId,
      tenant: started.tenant,
      mode,
      epoch: mode === "live" ? info.ownerEpoch + 1 : info.ownerEpoch,
      workflow: workflow.name,
      resumed: resumed ?? (response === undefined ? undefined : "response")
    }
    return yield* Tracing.execution(traced, withStatus(drive(runtime.services(), workflow, exec, input.right, mode, end, continuation)))
  }))

/** Starts a new run under `runId`: its `RunStarted` creates it, as its first owner's. */
export const startRun = <I, O, E>(
  runtime: Runtime,
  workflow: Workflow.Workflow<I, O, E>,
  start: StartOptions<I>,
  runId: string
): Effect.Effect<RunResult<O>, E | KernelError> =>
  Effect.gen(function*() {
    const { deps, lineageSpend } = runtime
    const input = toJson("run input", workflow.encodeInput(start.input))
    if (Either.isLeft(input)) return yield* input.left
    let rootRunId = runId
    if (start.parentRunId !== undefined) {
      const parent = yield* deps.store.getRun(start.tenant.tenantId, start.parentRunId)
      rootRunId = parent.rootRunId
    }
    const exec = Execution.make(deps, {
      runId,
      rootRunId,
      tenant: start.tenant,
      mode: "live",
      spentUsd: rootRunId === runId ? 0 : yield* lineageSpend(start.tenant.tenantId, rootRunId),
      lineageSpend: lineageSpend(start.tenant.tenantId, rootRunId),
      // The run's first owner: its RunStarted creates the run with this epoch.
      ownerEpoch: 1,
      lease: start.lease
    })
    const started = {
      _tag: "RunStarted",
      workflow: workflow.name,
      input: input.right,
      tenant: start.tenant,
      version: workflow.version,
      ...(start.parentRunId === undefined ? {} : { parentRunId: start.parentRunId, rootRunId })
    } as const
    yield* exec.appendOrFail(RUN_STEP_KEY, [started])
    const continuation = ContinueAsNew.make(runtime, workflow, exec, { runId, rootRunId, started, recorded: undefined }, "live", start.lease, (next, nextMode) =>
      continueRun(runtime, workflow, next, nextMode, undefined, start.lease))
    const traced = { runId, rootRunId, parentRunId: start.parentRunId, tenant: start.tenant, mode: "live", epoch: 1, workflow: workflow.name } as const
    return yield* Tracing.execution(traced, withStatus(drive(runtime.services(), workflow, exec, start.input, "live", undefined, continuation)))
  })

/** The execution's span says how it ended (a failure: its error, as Effect records it). */
const withStatus = <O, E>(driven: Effect.Effect<RunResult<O>, E>): Effect.Effect<RunResult<O>, E> =>
  Effect.tap(driven, (result) => Tracing.annotate(() => ({ "artana.status": result.status })))
