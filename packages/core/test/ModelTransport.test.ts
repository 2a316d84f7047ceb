import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { Errors, ModelTransport } from "@artana/core"

const { retryAfterMs, retrying } = ModelTransport

const failing = (kinds: ReadonlyArray<Errors.ModelError["kind"]>, retryAfterMs?: number) => {
  let calls = 0
  const attempt = Effect.suspend(() => {
    const kind = kinds[calls++]
    if (kind === undefined) return Effect.succeed(`ok after ${calls} calls`)
    const error = new Errors.ModelError({ kind, reason: `${kind} #${calls}`, retryable: kind !== "authentication" })
    return Effect.fail<ModelTransport.Failure>({ error, retryAfterMs })
  })
  return { attempt, calls: () => calls }
}

const policy = { source: "openai", maxRetries: 3, baseDelay: Duration.millis(100), maxDelay: Duration.millis(300) }

describe("transport retry", () => {
  it.effect("backs off exponentially with jitter, capped, and notes every retry", () =>
    Effect.gen(function*() {
      const { attempt, calls } = failing(["rate_limited", "server_error", "timeout"])
      const fiber = yield* Effect.fork(retrying(attempt, policy))
      yield* TestClock.adjust("1 second")
      const { notes, value } = yield* Fiber.join(fiber)
      expect(value).toBe("ok after 4 calls")
      expect(calls()).toBe(4)
      const delays = notes.map((n) => (typeof n.data === "object" && n.data !== null && "delayMs" in n.data ? n.data["delayMs"] : undefined))
      // 100 ms, 200 ms, 400 ms, each ±20%, the last capped at 300 ms.
      expect(delays[0]).toBeGreaterThanOrEqual(80)
      expect(delays[0]).toBeLessThanOrEqual(120)
      expect(delays[1]).toBeGreaterThanOrEqual(160)
      expect(delays[1]).toBeLessThanOrEqual(240)
      expect(delays[2]).toBe(300)
      expect(notes.map((n) => n.data)).toMatchObject([
        { attempt: 1, kind: "rate_limited" },
        { attempt: 2, kind: "server_error" },
        { attempt: 3, kind: "timeout" }
      ])
    }))

  it.effect("does not wait longer than the clock says: nothing happens before the delay", () =>
    Effect.gen(function*() {
      const { attempt, calls } = failing(["rate_limited"], 250)
      const fiber = yield* Effect.fork(retrying(attempt, policy))
      yield* TestClock.adjust("249 millis")
      expect(calls()).toBe(1)
      yield* TestClock.adjust("1 millis")
      const { notes } = yield* Fiber.join(fiber)
      expect(calls()).toBe(2)
      expect(notes).toEqual([{ source: "openai", note: "retry", data: { attempt: 1, kind: "rate_limited", delayMs: 250 } }])
    }))

  it.effect("stops at once on a failure that is not retryable, and after maxRetries otherwise", () =>
    Effect.gen(function*() {
      const auth = failing(["rate_limited", "authentication", "rate_limited"])
      const fiber = yield* Effect.fork(Effect.flip(retrying(auth.attempt, policy)))
      yield* TestClock.adjust("1 second")
      const failure = yield* Fiber.join(fiber)
      expect(failure.error.kind).toBe("authentication")
      expect(failure.error.reason).toBe("authentication #2 (gave up after 2 attempts)")
      expect(auth.calls()).toBe(2)

      const busy = failing(["server_error", "server_error", "server_error", "server_error", "server_error"])
      const fiber2 = yield* Effect.fork(Effect.flip(retrying(busy.attempt, policy)))
      yield* TestClock.adjust("2 seconds")
      expect((yield* Fiber.join(fiber2)).error.reason).toBe("server_error #4 (gave up after 4 attempts)")
      expect(busy.calls()).toBe(4)
    }))

  it("reads retry-after-ms, retry-after in seconds, and retry-after as an HTTP date", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "1500", "retry-after": "9" }))).toBe(1500)
    expect(retryAfterMs(new Headers({ "retry-after": "2" }))).toBe(2000)
    const inFiveSeconds = new Date(Date.now() + 5_000).toUTCString()
    const fromDate = retryAfterMs(new Headers({ "retry-after": inFiveSeconds }))
    expect(fromDate).toBeGreaterThan(3_000)
    expect(fromDate).toBeLessThanOrEqual(5_000)
    expect(retryAfterMs(new Headers({ "retry-after": "soon" }))).toBeUndefined()
    expect(retryAfterMs(new Headers())).toBeUndefined()
  })
})
