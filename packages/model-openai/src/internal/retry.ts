/**
 * Transport retry of one model call: bounded exponential backoff with jitter, a server's `retry-after` honoured
 * (capped), and every retry written down as a provider note, so the kernel logs it with the model step.
 */
import { Errors, type ModelPort } from "@artana/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type { Failure } from "./errors.js"

export interface Policy {
  /** Retries after the first attempt. */
  readonly maxRetries: number
  /** Delay before the first retry; each next one doubles, with ±20% jitter. */
  readonly baseDelay: Duration.Duration
  /** No delay, computed or asked for by `retry-after`, exceeds this. */
  readonly maxDelay: Duration.Duration
}

const schedule = (policy: Policy, notes: Array<ModelPort.ProviderNote>) => {
  let attempt = 0
  return Schedule.exponential(policy.baseDelay, 2).pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(policy.maxRetries)),
    Schedule.check((failure: Failure) => failure.error.retryable),
    Schedule.passthrough,
    Schedule.modifyDelayEffect((failure: Failure, backoff) =>
      Effect.sync(() => {
        attempt++
        const wanted = failure.retryAfterMs === undefined ? backoff : Duration.millis(failure.retryAfterMs)
        const delay = Duration.min(wanted, policy.maxDelay)
        const delayMs = Math.round(Duration.toMillis(delay))
        notes.push({ source: "openai", note: "retry", data: { attempt, kind: failure.error.kind, delayMs } })
        return Duration.millis(delayMs)
      })
    )
  )
}

/**
 * Runs `attempt`, retrying retryable failures under `policy`. Succeeds with the value and the notes of the
 * retries that happened; a final failure says how many attempts were made.
 */
export const retrying = <A>(
  attempt: Effect.Effect<A, Failure>,
  policy: Policy
): Effect.Effect<{ readonly value: A; readonly notes: ReadonlyArray<ModelPort.ProviderNote> }, Failure> =>
  Effect.suspend(() => {
    const notes: Array<ModelPort.ProviderNote> = []
    return attempt.pipe(
      Effect.retry(schedule(policy, notes)),
      Effect.map((value) => ({ value, notes })),
      Effect.mapError((failure): Failure => {
        if (notes.length === 0) return failure
        const { cause, kind, reason, retryable } = failure.error
        const error = new Errors.ModelError({
          kind,
          reason: `${reason} (gave up after ${notes.length + 1} attempts)`,
          retryable,
          ...(cause === undefined ? {} : { cause })
        })
        return { error, retryAfterMs: failure.retryAfterMs }
      })
    )
  })
