/**
 * Drives an execution: runs the workflow's code over it and turns how it ended into the run's result or error,
 * writing the run's final event (`RunCompleted`, `RunFailed`) when it runs live.
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Errors from "../Errors.js"
import { type EventPayload, RUN_STEP_KEY } from "../Event.js"
import * as Json from "../Json.js"
import type { KernelError, RunResult } from "../Kernel.js"
import { firstIssue } from "../Tool.js"
import type * as Workflow from "../Workflow.js"
import type { Continuation } from "./continueAsNew.js"
import type { Execution } from "./execution.js"
import { canonicalJson } from "./hash.js"

const errorTag = (e: unknown): string => (Predicate.hasProperty(e, "_tag") && typeof e._tag === "string" ? e._tag : "Error")
const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : typeof e === "string" ? e : JSON.stringify(e) ?? String(e))

/** An encoded value as JSON, or `InvalidInput` naming `what` did not encode. */
export const toJson = (what: string, encoded: Either.Either<unknown, ParseResult.ParseError>) => {
  if (Either.isLeft(encoded)) return Either.left(new Errors.InvalidInput({ what, reason: firstIssue(encoded.left).reason }))
  const checked = Json.fromUnknown(encoded.right)
  return checked.ok ? Either.right(checked.json) : Either.left(new Errors.InvalidInput({ what, reason: checked.error }))
}

/** The run's failures the kernel itself decides (a budget): logged encoded, so a resume fails with them typed. */
const KernelFailure = Schema.Union(Errors.BudgetExceeded, Errors.BudgetUnpriced)
const encodeKernelFailure = Schema.encodeEither(KernelFailure)
export const decodeKernelFailure = Schema.decodeUnknownEither(KernelFailure)

/** A `RunFailed` event: the error's tag and message, and the error encoded when it encodes to JSON. */
const runFailed = (error: unknown, encoded: Either.Either<unknown, ParseResult.ParseError>): EventPayload => {
  const json = Either.isRight(encoded) ? Json.fromUnknown(encoded.right) : undefined
  return { _tag: "RunFailed", errorTag: errorTag(error), error: errorMessage(error), ...(json?.ok === true ? { encoded: json.json } : {}) }
}

/** How the log says a run ended: its `RunCompleted` or `RunFailed` (a replay compares its own end with it). */
export type RecordedEnd = Extract<EventPayload, { readonly _tag: "RunCompleted" | "RunFailed" }>

/** A failure as a replay compares it: its tag, and its encoded form when it has one, else its message. */
const failureText = (failed: EventPayload): string =>
  failed._tag !== "RunFailed"
    ? ""
    : `failure ${failed.errorTag}: ${failed.encoded === undefined ? JSON.stringify(failed.error) : canonicalJson(failed.encoded)}`

/** The end the log records, as the replay's own end is described, or undefined when the log records none. */
const loggedEnd = (recorded: RecordedEnd | undefined, continuation: Continuation<unknown, unknown> | undefined): string | undefined => {
  const continued = continuation?.recorded
  if (continued !== undefined) return `continue as new with input ${canonicalJson(continued.input)}`
  if (recorded === undefined) return undefined
  return recorded._tag === "RunCompleted" ? `output ${canonicalJson(recorded.output)}` : failureText(recorded)
}

/** Runs the code of an execution (with `services`) and turns how it ended into a result or an error. */
export const drive = <I, O, E>(
  services: Context.Context<never>,
  workflow: Workflow.Workflow<I, O, E>,
  exec: Execution,
  input: I,
  mode: "live" | "replay",
  recordedEnd: RecordedEnd | undefined,
  continuation?: Continuation<O, E> | undefined
): Effect.Effect<RunResult<O>, E | KernelError> =>
  Effect.gen(function*() {
    const runId = exec.context.runId
    const exit = yield* Effect.exit(exec.runCode(workflow.run(input, exec.context).pipe(Effect.provide(services))))
    const halted = exec.halted()
    if (halted !== undefined) {
      switch (halted._tag) {
        case "Paused":
          return {
            status: "paused",
            runId,
            ticket: halted.ticket,
            reason: halted.reason,
            ...(halted.wakeAt === undefined ? {} : { wakeAt: halted.wakeAt }),
            ...(halted.approval === undefined ? {} : { approval: halted.approval })
          } as const
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
        case "Continued": {
          if (continuation === undefined) {
            return yield* new Errors.InvalidRunState({ runId, status: "continuing as new", expected: "a run of the kernel's execute, resume or replay" })
          }
          // The rest of the log is read: its signals reach the inbox the handover carries, however little of the log
          // the code's steps needed. A step after the last one the code consumed is a divergence, as before an end;
          // steps before it the code did not ask for are a concurrent branch's, interrupted by the halt (reviews found
          // both: a skipped charge run again by the successor, and such branches refused).
          const skipped = yield* exec.skippedAtHandover()
          if (skipped !== undefined) {
            return yield* new Errors.NonDeterminism({ runId, stepKey: skipped.key, expected: skipped.description, actual: "a continue-as-new" })
          }
          return yield* continuation.handOver(halted.input)
        }
      }
    }
    if (Exit.isSuccess(exit)) {
      const next = yield* exec.unconsumed()
      if (next !== undefined) {
        return yield* new Errors.NonDeterminism({ runId, stepKey: next.key, expected: next.description, actual: "the end of the code" })
      }
      const output = toJson("workflow output", workflow.encodeOutput(exit.value))
      if (Either.isLeft(output)) return yield* output.left
      if (mode === "replay") {
        const actual = `output ${canonicalJson(output.right)}`
        const expected = loggedEnd(recordedEnd, continuation)
        if (expected !== undefined && expected !== actual) {
          return yield* new Errors.NonDeterminism({ runId, stepKey: RUN_STEP_KEY, expected, actual })
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
    if (Option.isSome(failure) && mode === "replay") {
      // A run whose log says it completed, continued, or failed otherwise: the code diverged from it.
      const expected = loggedEnd(recordedEnd, continuation)
      const actual = failureText(runFailed(failure.value, workflow.encodeError(failure.value)))
      if (expected !== undefined && expected !== actual) {
        return yield* new Errors.NonDeterminism({ runId, stepKey: RUN_STEP_KEY, expected, actual })
      }
    }
    // Defects (bugs in the code) are not written: fix the code and resume, as with Temporal's task failures.
    return yield* Effect.failCause(exit.cause)
  })
