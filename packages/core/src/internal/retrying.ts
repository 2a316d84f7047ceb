/**
 * A model call's failed attempts and their retries, shared by `ModelTransport` (which exports them) and the delta
 * pump (`deltaPump.ts`): here so that neither imports the other.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Schedule from "effect/Schedule"
import type { Usage } from "../Chat.js"
import { ModelError } from "../Errors.js"
import type { ProviderNote } from "../ModelPort.js"

/** A failed attempt: the error (its `retryable` flag decides a retry), and the wait the server asked for, if any. */
export interface Failure {
  readonly error: ModelError
  readonly retryAfterMs: number | undefined
}

/** A failed attempt of `kind`, with the reason a person can act on. */
export const failure = (
  kind: ModelError["kind"],
  reason: string,
  retryable: boolean,
  cause?: unknown,
  retryAfterMs?: number
): Failure => ({
  error: new ModelError(cause === undefined ? { kind, reason, retryable } : { kind, reason, retryable, cause }),
  retryAfterMs
})

/** How one model call is retried. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly maxRetries: number
  /** Delay before the first retry; each next one doubles, with ±20% jitter. */
  readonly baseDelay: Duration.Duration
  /** No delay, computed or asked for by `retry-after`, exceeds this. */
  readonly maxDelay: Duration.Duration
  /** The `source` of the `retry` notes (the adapter's name: `openai`, `anthropic`). */
  readonly source: string
}

/** The policy of the adapter options every adapter shares (`maxRetries`, `retryBaseDelay`, `retryMaxDelay`). */
export const retryPolicy = (source: string, options: {
  readonly maxRetries?: number | undefined
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  readonly retryMaxDelay?: Duration.DurationInput | undefined
}): RetryPolicy => ({
  source,
  maxRetries: Math.max(0, options.maxRetries ?? 3),
  baseDelay: Duration.decode(options.retryBaseDelay ?? Duration.millis(500)),
  maxDelay: Duration.decode(options.retryMaxDelay ?? Duration.seconds(30))
})

/**
 * Asked before a failure that was billed (a reply the model answered and the adapter refused) is retried: with what
 * the call's failed attempts billed so far, whether another attempt may be made. The kernel sets it for a call whose
 * estimate it holds against a budget: another attempt must first fit the budget (`modelBudget.ts`). Unset, every
 * retry the policy allows is made.
 */
export const billedRetry = FiberRef.unsafeMake<((billed: Usage) => Effect.Effect<boolean>) | undefined>(undefined)

const schedule = (policy: RetryPolicy, notes: Array<ProviderNote>, mayRetry: (failure: Failure) => Effect.Effect<boolean>) => {
  let attempt = 0
  return Schedule.exponential(policy.baseDelay, 2).pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(policy.maxRetries)),
    Schedule.check((failure: Failure) => failure.error.retryable),
    Schedule.checkEffect((failure: Failure) => mayRetry(failure)),
    Schedule.passthrough,
    Schedule.modifyDelayEffect((failure: Failure, backoff) =>
      Effect.sync(() => {
        attempt++
        const wanted = failure.retryAfterMs === undefined ? backoff : Duration.millis(failure.retryAfterMs)
        const delay = Duration.min(wanted, policy.maxDelay)
        const delayMs = Math.round(Duration.toMillis(delay))
        notes.push({ source: policy.source, note: "retry", data: { attempt, kind: failure.error.kind, delayMs } })
        return Duration.millis(delayMs)
      })
    )
  )
}

/** A failed attempt whose reply was answered, and billed, as `usage` says: the kernel charges it (`ModelError.usage`). */
export const billedFailure = (failed: Failure, usage: Usage): Failure => ({
  retryAfterMs: failed.retryAfterMs,
  error: new ModelError({
    kind: failed.error.kind,
    reason: failed.error.reason,
    retryable: failed.error.retryable,
    ...(failed.error.cause === undefined ? {} : { cause: failed.error.cause }),
    usage
  })
})

/** Two usages added up (cached input tokens counted when either has them). */
export const addUsage = (a: Usage, b: Usage): Usage => {
  const cached = (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0)
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(a.cachedInputTokens === undefined && b.cachedInputTokens === undefined ? {} : { cachedInputTokens: cached })
  }
}

/**
 * Runs `attempt`, retrying retryable failures under `policy`. Succeeds with the value, the notes of the retries that
 * happened, and `billed`: what the failed attempts that were answered reported (`ModelError.usage`: a reply refused
 * as malformed and asked again was billed all the same), for the adapter to add to the reply's usage. A final failure
 * says how many attempts were made and carries every attempt's billed usage.
 */
export const retrying = <A>(
  attempt: Effect.Effect<A, Failure>,
  policy: RetryPolicy
): Effect.Effect<{ readonly value: A; readonly notes: ReadonlyArray<ProviderNote>; readonly billed: Usage | undefined }, Failure> =>
  Effect.suspend(() => {
    const notes: Array<ProviderNote> = []
    let billed: Usage | undefined
    let overBudget = false
    const counted = Effect.tapError(attempt, (failure) =>
      Effect.sync(() => {
        const usage = failure.error.usage
        if (usage !== undefined) billed = billed === undefined ? usage : addUsage(billed, usage)
      }))
    // A billed failure is asked for again only once the budget has room for another attempt (`billedRetry`).
    const mayRetry = (failure: Failure): Effect.Effect<boolean> =>
      failure.error.usage === undefined || billed === undefined
        ? Effect.succeed(true)
        : Effect.flatMap(FiberRef.get(billedRetry), (ask) =>
          ask === undefined ? Effect.succeed(true) : Effect.tap(ask(billed!), (fits) => Effect.sync(() => void (overBudget = !fits))))
    return counted.pipe(
      Effect.retry(schedule(policy, notes, mayRetry)),
      Effect.map((value) => ({ value, notes, billed })),
      Effect.mapError((failure): Failure => {
        if (notes.length === 0 && !overBudget) return failure
        const { cause, kind, reason, retryable } = failure.error
        const tried = notes.length > 0 ? `gave up after ${notes.length + 1} attempts` : "not asked again"
        const error = new ModelError({
          kind,
          reason: `${reason} (${overBudget ? `${tried}: another attempt would pass the budget` : tried})`,
          // Over budget, asking again later would spend past it too.
          retryable: retryable && !overBudget,
          ...(cause === undefined ? {} : { cause }),
          ...(billed === undefined ? {} : { usage: billed })
        })
        return { error, retryAfterMs: failure.retryAfterMs }
      })
    )
  })
