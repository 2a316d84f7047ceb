/**
 * Continue-as-new: a run ends (`RunContinued`, its last event) and its successor starts (`RunStarted` with
 * `continuedFrom`) in one store transaction, and the kernel drives the successor on. The successor's id is derived
 * from the chain (`continuedRunId`), so a crash and a retry of one handover conflict instead of starting two. The
 * caller of an operation on a run gets the result of the last run of its chain.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Errors from "../Errors.js"
import { continuedRunId, type EventPayload, RUN_STEP_KEY, type RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import type { KernelError, RunResult } from "../Kernel.js"
import type { Lease } from "../Lease.js"
import { firstIssue } from "../Tool.js"
import type * as Workflow from "../Workflow.js"
import { dropDeltas } from "./deltaRetention.js"
import { drive, toJson } from "./drive.js"
import * as Execution from "./execution.js"
import { canonicalJson } from "./hash.js"
import * as Ledger from "./ledger.js"
import type * as Signals from "./signals.js"
import type { Runtime } from "./runs.js"

type RunStarted = Extract<EventPayload, { readonly _tag: "RunStarted" }>
type RunContinued = Extract<EventPayload, { readonly _tag: "RunContinued" }>

/** What `drive` does when the code continues as new; `recorded` is the log's `RunContinued`, for a replay. */
export interface Continuation<O, E> {
  readonly recorded: RunContinued | undefined
  readonly handOver: (input: unknown) => Effect.Effect<RunResult<O>, E | KernelError>
}

/** The signals a run did not take, as its successor's copies (same id, name and payload; where they were sent). */
const carried = (runId: string, untaken: ReadonlyArray<Signals.Pending>): Array<EventPayload> =>
  untaken.map(({ payload, seq }) => ({
    _tag: "SignalSent",
    signalId: payload.signalId,
    name: payload.name,
    payload: payload.payload,
    carriedFrom: { runId, seq }
  }))

/**
 * The continuation of an execution of run `runId` (whose `RunStarted` is `started`): in a live execution, the handover
 * (both events in one transaction) and the successor driven on; in a replay, the handover checked against the log
 * (another input is `NonDeterminism`) and the successor replayed in turn (`continueExisting`).
 */
export const make = <I, O, E>(
  runtime: Runtime,
  workflow: Workflow.Workflow<I, O, E>,
  exec: Execution.Execution,
  run: { readonly runId: string; readonly rootRunId: string; readonly started: RunStarted; readonly recorded: RunContinued | undefined },
  mode: "live" | "replay",
  lease: Lease | undefined,
  continueExisting: (info: RunInfo, mode: "live" | "replay") => Effect.Effect<RunResult<O>, E | KernelError>
): Continuation<O, E> => ({
  recorded: run.recorded,
  handOver: (given) =>
    Effect.gen(function*() {
      const { deps, lineageSpend } = runtime
      const { runId, rootRunId, started } = run
      // The context takes the workflow's input type; the kernel holds every workflow as `Workflow.Any`.
      const untyped: Workflow.Any = workflow
      const input = toJson("the input handed to continueAsNew", untyped.encodeInput(given))
      if (Either.isLeft(input)) return yield* input.left
      const chainRunId = started.continuedFrom?.chainRunId ?? runId
      const generation = (started.continuedFrom?.generation ?? 0) + 1
      const nextRunId = continuedRunId(chainRunId, generation)
      const actual = `continue as new with input ${canonicalJson(input.right)}`
      if (mode === "replay") {
        const recorded = run.recorded
        if (recorded === undefined) return yield* new Errors.NonDeterminism({ runId, stepKey: RUN_STEP_KEY, expected: "the end of the log", actual })
        if (recorded.nextRunId !== nextRunId || canonicalJson(recorded.input) !== canonicalJson(input.right)) {
          return yield* new Errors.NonDeterminism({ runId, stepKey: RUN_STEP_KEY, expected: `continue as new with input ${canonicalJson(recorded.input)}`, actual })
        }
        return yield* continueExisting(yield* deps.store.getRun(started.tenant.tenantId, nextRunId), "replay")
      }
      // The successor's input as its code will see it, on this execution and on any resume: decoded from the log.
      const decoded = workflow.decodeInput(input.right)
      if (Either.isLeft(decoded)) {
        return yield* new Errors.InvalidInput({ what: "the input handed to continueAsNew", reason: firstIssue(decoded.left).reason })
      }
      const successorStarted: RunStarted = {
        _tag: "RunStarted",
        workflow: workflow.name,
        input: input.right,
        tenant: started.tenant,
        ...(started.parentRunId === undefined ? {} : { parentRunId: started.parentRunId }),
        rootRunId,
        continuedFrom: { runId, chainRunId, generation },
        // The chain's version, not the continuing code's: the task that drives the chain stays pinned to it, so the
        // run is counted (`versionCounts`) where its workers are; a chain started before versions records none.
        ...(started.version === undefined ? {} : { version: started.version })
      }
      // The successor's first owner is this execution: its RunStarted creates it with epoch 1, as a new run's does.
      const successor = Ledger.make({
        store: deps.store,
        auditKey: deps.auditKey,
        runId: nextRunId,
        tenantId: started.tenant.tenantId,
        mode: "live",
        ownerEpoch: 1,
        claim: false,
        onRefused: () => undefined
      })
      // Its first batch: the RunStarted, then the signals this run did not take (built again when the handover adopts
      // a signal a sender appended meanwhile), so a signal sent to the chain is offered to its later waits.
      let first: EventStore.AppendRequest | undefined
      const firstBatch: Ledger.Alongside = (timestamp) => {
        first = successor.prepare(RUN_STEP_KEY, [successorStarted, ...carried(runId, exec.untakenSignals())], timestamp)
        return [first]
      }
      // Both or neither: a crash before the commit leaves the run to resume (and continue once), after it the successor.
      yield* exec.appendOrFail(RUN_STEP_KEY, [{ _tag: "RunContinued", nextRunId, input: input.right }], firstBatch)
      const written = first!.events
      // This run ended here: its deltas go now, not when the chain's execution ends (a long chain would keep them all).
      yield* dropDeltas(deps, started.tenant.tenantId, runId)
      const next = Execution.make(deps, {
        runId: nextRunId,
        rootRunId,
        tenant: started.tenant,
        // Its log is the batch just written: nothing to replay, the code runs live after it, with its signals.
        head: { seq: written.length, hash: written[written.length - 1]!.hash },
        written,
        mode: "live",
        spentUsd: yield* lineageSpend(started.tenant.tenantId, rootRunId),
        lineageSpend: lineageSpend(started.tenant.tenantId, rootRunId),
        ownerEpoch: 1,
        lease
      })
      const continuation = make(runtime, workflow, next, { runId: nextRunId, rootRunId, started: successorStarted, recorded: undefined }, "live", lease, continueExisting)
      return yield* drive(runtime.services(), workflow, next, decoded.right, "live", undefined, continuation)
    })
})
