/**
 * Runs, started and continued. A new run's `RunStarted` creates it; an existing run returns its settled state when
 * it has one (completed, failed, waiting for a person or a response), else its verified log is replayed and its
 * code driven on, live or as a replay.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Errors from "../Errors.js"
import { type Event, RUN_STEP_KEY, type RunInfo } from "../Event.js"
import type { KernelError, RunResult, StartOptions } from "../Kernel.js"
import type { Lease } from "../Lease.js"
import { firstIssue } from "../Tool.js"
import type * as Workflow from "../Workflow.js"
import { chainEnd } from "./chain.js"
import * as ContinueAsNew from "./continueAsNew.js"
import { drive, toJson } from "./drive.js"
import * as Execution from "./execution.js"
import * as Tracing from "./tracing.js"
import * as Lazy from "./lazyPayload.js"
import type { Response } from "./executionOptions.js"
import { headEvent, otherTenant, verifiedPages } from "./ledger.js"
import { readFailure, settled } from "./settledRun.js"

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
 * Events of the first page of the log a replay reads; the pages after it are sized by bytes (`REPLAY_PAGE_BYTES`). A
 * page lives until the code has consumed its steps: a smaller page dies young (in V8's young generation, freed for
 * little) rather than being promoted and swelling the heap.
 */
const REPLAY_PAGE_SIZE = 256

/**
 * The pages after the first: 1 MB of stored payload text at most (an agent's log of ~8 KB events: ~125 events a page),
 * and 512 events. Measured in one process, replays alternated (bench/scale/README.md): pages of 512 short events cut a
 * replay's CPU by 15-30% against 256; pages of 1,000 cut no more, and raised a 100,000-step resume's peak RSS by ~30 MB
 * (a page that lives longer is promoted more often). A count alone would let a page of long events fill a capped heap.
 */
const REPLAY_PAGE_BYTES = { budget: 1 << 20, max: 512 }

const wrongWorkflow = <I, O, E>(info: RunInfo, workflow: Workflow.Workflow<I, O, E>, name: string) =>
  new Errors.NonDeterminism({ runId: info.runId, stepKey: RUN_STEP_KEY, expected: `workflow "${name}"`, actual: `workflow "${workflow.name}"` })

/**
 * The run's first page of verified log (and the pull that reads the rest as the code asks), its `RunStarted`, and
 * the input it logged, decoded: a log without one, of another workflow, or whose input the workflow cannot decode is
 * refused.
 */
const readStart = <I, O, E>(deps: Execution.Deps, workflow: Workflow.Workflow<I, O, E>, info: RunInfo) =>
  Effect.gen(function*() {
    // `ModelRequested` payloads read lazily: the model step compares their stored text (`lazyPayload.ts`).
    const pages = verifiedPages(deps.store, deps.auditKey, info, { pageSize: REPLAY_PAGE_SIZE, pageBytes: REPLAY_PAGE_BYTES })
    const next = Effect.mapError(Effect.locally(pages, Lazy.replayRead, true), readFailure)
    const first = Option.getOrElse(yield* next, (): ReadonlyArray<Event> => [])
    const started = first[0]?.payload
    if (started === undefined || started._tag !== "RunStarted") {
      return yield* new Errors.StoreError({ operation: "readEvents", reason: `run ${info.runId} has no RunStarted event` })
    }
    const stranger = otherTenant(info, first[0]!)
    if (stranger !== undefined) return yield* stranger
    if (started.workflow !== workflow.name) return yield* wrongWorkflow(info, workflow, started.workflow)
    const input = workflow.decodeInput(started.input)
    if (Either.isLeft(input)) {
      return yield* new Errors.InvalidInput({ what: `logged input of run ${info.runId}`, reason: firstIssue(input.left).reason })
    }
    return { next, first, started, input: input.right }
  })

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
  response: Response | undefined,
  lease?: Lease | undefined,
  /** Why this execution takes over a run left running (default: a recovery); a fork's first execution says so. */
  takeover?: string | undefined
): Effect.Effect<RunResult<O>, E | KernelError> =>
  Effect.scoped(Effect.gen(function*() {
    const { deps, lineageSpend } = runtime
    // A run that continued as new: its work goes on in its successor (a replay replays the run, then the successor).
    if (mode === "live" && info.status === "continued") {
      return yield* continueRun(runtime, workflow, yield* chainEnd(deps.store, info), mode, response, lease)
    }
    // The record's workflow is its RunStarted's (checked again below, once that event is read and verified).
    if (info.workflow !== workflow.name) return yield* wrongWorkflow(info, workflow, info.workflow)
    // Why this execution takes the run over, when it must claim it first.
    let resumed: string | undefined = undefined
    if (mode === "live") {
      const state = yield* settled(runtime.deps, workflow, info, response, takeover)
      if ("result" in state) return state.result
      resumed = state.resumed
      if ("signalWait" in state) response = undefined
    }
    const { next, first, started, input } = yield* readStart(deps, workflow, info)
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
    return yield* Tracing.execution(traced, withStatus(drive(runtime.services(), workflow, exec, input, mode, end, continuation)))
  }))

/**
 * Starts a new run under `runId`: its `RunStarted` creates it, as its first owner's. When a run of that id exists
 * already (the store refuses the `RunStarted` at seq 0, as every store does), `existing` goes on with it
 * instead, or fails with `absent` when there is none after all: a new run costs no read that fails first. `ended`
 * runs when the execution of the run it created ends (an execution that created nothing ran nothing live).
 */
export const startRun = <I, O, E>(
  runtime: Runtime,
  workflow: Workflow.Workflow<I, O, E>,
  start: StartOptions<I>,
  runId: string,
  existing: (absent: KernelError) => Effect.Effect<RunResult<O>, E | KernelError>,
  ended: (exit: Exit.Exit<RunResult<O>, E | KernelError>) => Effect.Effect<void>
): Effect.Effect<RunResult<O>, E | KernelError> =>
  Effect.gen(function*() {
    const { deps, lineageSpend } = runtime
    const input = toJson("run input", workflow.encodeInput(start.input))
    // The input of an existing run is its logged one: only a new run needs this one encoded.
    if (Either.isLeft(input)) return yield* existing(input.left)
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
    const created = yield* Effect.either(exec.appendOrFail(RUN_STEP_KEY, [started]))
    if (Either.isLeft(created)) {
      // Refused at seq 0: the run exists (a store that finds it claimed by a later owner says so: `OwnershipLost`).
      const refused = created.left._tag === "SequenceConflict" || created.left._tag === "OwnershipLost"
      return yield* refused ? existing(created.left) : created.left
    }
    const continuation = ContinueAsNew.make(runtime, workflow, exec, { runId, rootRunId, started, recorded: undefined }, "live", start.lease, (next, nextMode) =>
      continueRun(runtime, workflow, next, nextMode, undefined, start.lease))
    const traced = { runId, rootRunId, parentRunId: start.parentRunId, tenant: start.tenant, mode: "live", epoch: 1, workflow: workflow.name } as const
    return yield* Effect.onExit(Tracing.execution(traced, withStatus(drive(runtime.services(), workflow, exec, start.input, "live", undefined, continuation))), ended)
  })

/** The execution's span says how it ended (a failure: its error, as Effect records it). */
const withStatus = <O, E>(driven: Effect.Effect<RunResult<O>, E>): Effect.Effect<RunResult<O>, E> =>
  Effect.tap(driven, (result) => Tracing.annotate(() => ({ "artana.status": result.status })))
