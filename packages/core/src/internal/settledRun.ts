/**
 * An existing run's state when a live execution reaches it (`continueRun`): the result it settled on (completed,
 * failed, waiting for a person, a signal or a run in doubt), or why this execution takes it over. A settled run's state
 * is read from its head event (`headEvent`: O(1) in the run's length), or, when the event it needs is not the head,
 * from its verified log read a page at a time.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Approval from "../Approval.js"
import * as Errors from "../Errors.js"
import type { EventPayload, RunInfo } from "../Event.js"
import { reconciliationPath } from "../EventStore.js"
import { firstIssue } from "../Tool.js"
import type * as Workflow from "../Workflow.js"
import { decodeKernelFailure } from "./drive.js"
import type { Deps, Response } from "./executionOptions.js"
import { headEvent, lastEventOf, lastOf, ownHeadEvent, type ReadError } from "./ledger.js"
import * as Signals from "./signals.js"

/** A failure to read a run's log as a kernel error: a run removed meanwhile is a store failure. */
export const readFailure = (error: ReadError) =>
  error._tag === "RunNotFound" ? new Errors.StoreError({ operation: "readEvents", reason: error.message }) : error

const lastEvent = <T extends EventPayload["_tag"]>(deps: Deps, info: RunInfo, tag: T) =>
  Effect.mapError(lastEventOf(deps.store, deps.auditKey, info, tag), readFailure)

/** A finished run's end is its head event: a record whose status its head does not say was edited (LogTampered). */
const endEvent = <T extends "RunCompleted" | "RunFailed">(deps: Deps, info: RunInfo, tag: T) =>
  Effect.mapError(
    Effect.flatMap(headEvent(deps.store, deps.auditKey, info), (head) =>
      head.payload._tag === tag
        ? Effect.succeed(lastOf([head], tag)!)
        : Effect.fail(new Errors.LogTampered({ runId: info.runId, seq: head.seq, reason: `the run record says ${info.status}, but its log ends with ${head.type}` }))),
    readFailure
  )

/** A completed run's result: its logged output. */
const completed = <I, O, E>(deps: Deps, workflow: Workflow.Workflow<I, O, E>, info: RunInfo) =>
  Effect.gen(function*() {
    const output = workflow.decodeOutput((yield* endEvent(deps, info, "RunCompleted")).payload.output)
    if (Either.isLeft(output)) return yield* new Errors.InvalidInput({ what: `logged output of run ${info.runId}`, reason: firstIssue(output.left).reason })
    return { result: { status: "completed", runId: info.runId, output: output.right } as const }
  })

/** A failed run's failure: the original typed error when it was logged encoded, else `RunFailedError`. */
const failed = <I, O, E>(deps: Deps, workflow: Workflow.Workflow<I, O, E>, info: RunInfo) =>
  Effect.gen(function*() {
    const failed = (yield* endEvent(deps, info, "RunFailed")).payload
    // The original typed error, when the workflow (or the kernel, for a budget) logged it encoded.
    const original = failed?.encoded === undefined ? undefined : workflow.decodeError(failed.encoded)
    if (original !== undefined && Either.isRight(original)) return yield* Effect.fail(original.right)
    const kernelFailure = failed?.encoded === undefined ? undefined : decodeKernelFailure(failed.encoded)
    if (kernelFailure !== undefined && Either.isRight(kernelFailure)) return yield* Effect.fail(kernelFailure.right)
    return yield* new Errors.RunFailedError({ runId: info.runId, errorTag: failed?.errorTag ?? "Error", reason: failed?.error ?? "unknown" })
  })

/** A run in doubt: its step to reconcile, or, when that step waited on another run now settled, why it goes on. */
const inDoubt = (deps: Deps, info: RunInfo) =>
  Effect.gen(function*() {
    const required = yield* lastEvent(deps, info, "ReconciliationRequired")
    const awaited = required?.payload.waitingOn?.[0]
    if (required !== undefined && awaited !== undefined) {
      // The step waits on another run in doubt. Once that run is settled, the run goes on (its step runs
      // again and drives that run on); until then it still waits, and nothing is written.
      const waitingOn = yield* reconciliationPath(deps.store, info.tenantId, awaited.runId)
      if (waitingOn.length === 0) {
        return { resumed: `the run its step ${required.event.stepKey} waited on (${awaited.runId}) no longer needs reconciliation` }
      }
      return { result: { status: "needs_reconciliation", runId: info.runId, stepKey: required.event.stepKey, tool: required.payload.tool, waitingOn } as const }
    }
    return { result: { status: "needs_reconciliation", runId: info.runId, stepKey: required?.event.stepKey ?? "", tool: required?.payload.tool ?? "" } as const }
  })

/**
 * A paused run: still paused (waiting for an approval, a person or a signal), or going on (a response came, a signal
 * came or its wait's deadline passed).
 */
const paused = (deps: Deps, info: RunInfo, response: Response | undefined) =>
  Effect.gen(function*() {
    // A head that cannot be read (a log cut or broken) is reported by the read that follows, as before.
    const read = yield* Effect.either(ownHeadEvent(deps.store, deps.auditKey, info))
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
    const pause = head?.payload._tag === "PauseRequested" ? { event: head, payload: head.payload } : yield* lastEvent(deps, info, "PauseRequested")
    const paused = { status: "paused", runId: info.runId, ticket: pause?.payload.ticket ?? "", reason: pause?.payload.reason ?? "" } as const
    // A run paused at a signal wait goes on once a signal of its name came or its deadline passed; a resume before
    // that writes nothing (see `Signals.pausedWait`).
    const wait = pause === undefined ? undefined : yield* Signals.pausedWait(deps.store, info, pause.event)
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
    return { resumed: undefined }
  })

/**
 * A live run's state when nothing is to run (`{ result }`), or why this execution takes it over (`{ resumed }`,
 * undefined when it need not claim it first; `signalWait` when a signal, not a person's response, wakes it).
 */
export const settled = <I, O, E>(
  deps: Deps,
  workflow: Workflow.Workflow<I, O, E>,
  info: RunInfo,
  response: Response | undefined,
  takeover: string | undefined
) =>
  Effect.gen(function*() {
    switch (info.status) {
      case "completed":
        return yield* completed(deps, workflow, info)
      case "failed":
        return yield* failed(deps, workflow, info)
      case "needs_reconciliation":
        return yield* inDoubt(deps, info)
      case "paused":
        return yield* paused(deps, info, response)
      case "running":
        if (response !== undefined) {
          return yield* new Errors.InvalidRunState({ runId: info.runId, status: info.status, expected: "paused (only a paused run takes a response)" })
        }
        return { resumed: takeover ?? "recovery: the run was left running" }
    }
    return { resumed: undefined }
  })
