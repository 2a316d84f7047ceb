/**
 * Hash-chained events built without a kernel, for tests of stores and of tools that read logs.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Errors from "./Errors.js"
import { type Event, type EventPayload, RUN_STEP_KEY } from "./Event.js"
import type * as EventStore from "./EventStore.js"
import { GENESIS_HASH, newEventHash } from "./internal/hash.js"
import type { TenantContext } from "./Tenant.js"
import * as Workflow from "./Workflow.js"

/** Milliseconds; each run's events are stamped `start + seq`. */
export const T0 = 1_700_000_000_000

/**
 * The events that follow `before` in a run's log, hash-chained as the kernel writes them (no audit key), each
 * stamped `start + seq`: for store tests that need a valid log without running the kernel. Event ids are
 * `<runId>-event-<seq>` unless `eventId` makes them (the kernel's are UUIDs).
 */
export const chain = (
  runId: string,
  tenantId: string,
  before: ReadonlyArray<Event>,
  payloads: ReadonlyArray<EventPayload>,
  start = T0,
  eventId: (runId: string, seq: number) => string = (runId, seq) => `${runId}-event-${seq}`
): Array<Event> => {
  const out: Array<Event> = []
  let prevHash = before[before.length - 1]?.hash ?? GENESIS_HASH
  for (const payload of payloads) {
    const seq = before.length + out.length + 1
    const unhashed = {
      eventId: eventId(runId, seq),
      runId,
      tenantId,
      seq,
      timestamp: start + seq,
      type: payload._tag,
      stepKey: payload._tag === "RunStarted" || payload._tag === "RunCompleted" ? "run" : `step:${seq}`,
      payload,
      prevHash
    }
    const hash = newEventHash(unhashed, undefined)
    out.push({ ...unhashed, hash })
    prevHash = hash
  }
  return out
}

/**
 * Appends a log of `events` events to the new run `runId`, through the store's own `append` in large batches (one
 * transaction each on a SQL store), hash-chained as the kernel writes it (no audit key; UUID event ids; event `seq`
 * stamped `Date.now() + seq`): `event(seq)` gives each one's step key and payload, the first a `RunStarted`. Memory
 * holds a batch, however many events: for tests and benchmarks of long runs of any shape (200,000 events in seconds).
 */
export const write = (
  store: EventStore.Service,
  options: {
    readonly runId: string
    readonly tenantId: string
    readonly events: number
    readonly event: (seq: number) => { readonly stepKey: string; readonly payload: EventPayload }
    readonly batch?: number | undefined
  }
): Effect.Effect<void, Errors.SequenceConflict | Errors.OwnershipLost | Errors.StoreError> =>
  Effect.gen(function*() {
    const { runId, tenantId, events: total } = options
    const batch = Math.max(1, options.batch ?? 10_000)
    let prevHash = GENESIS_HASH
    let seq = 0
    const start = Date.now()
    while (seq < total) {
      const events: Array<Event> = []
      const expectedSeq = seq
      while (seq < total && events.length < batch) {
        seq++
        const { stepKey, payload } = options.event(seq)
        const unhashed = { eventId: crypto.randomUUID(), runId, tenantId, seq, timestamp: start + seq, type: payload._tag, stepKey, payload, prevHash }
        const hash = newEventHash(unhashed, undefined)
        events.push({ ...unhashed, hash })
        prevHash = hash
      }
      yield* store.append({ runId, tenantId, expectedSeq, events, ownerEpoch: 1 })
    }
  })

/**
 * A long run, written fast: `LongRun.workflow` takes `{ steps }` and runs that many memoized steps (`ctx.step("n", i)`,
 * keys `step:0`, `step:1`, ...), then pauses for a person, then completes with the sum of its steps and the response.
 * `LongRun.write` appends, through the store's own `append` in large batches (one transaction each on a SQL store),
 * a log of that run paused after its steps, hash-chained as the kernel writes it (no audit key): resuming it with a
 * response replays every step and completes. For tests and benchmarks of long runs (200,000 events in seconds).
 */
export const LongRun = {
  workflow: Workflow.make({
    name: "test.long-run",
    input: Schema.Struct({ steps: Schema.Int }),
    output: Schema.Struct({ sum: Schema.Number, response: Schema.Unknown }),
    run: (input, ctx) =>
      Effect.gen(function*() {
        let sum = 0
        for (let i = 0; i < input.steps; i++) sum += yield* ctx.step("n", Effect.succeed(i), Schema.Number)
        const response = yield* ctx.pauseForHuman({ reason: "approve the sum" })
        return { sum, response }
      })
  }),
  /** The sum the run completes with. */
  sumOf: (steps: number): number => (steps * (steps - 1)) / 2,
  /** Appends the paused run `runId` of `steps` steps; its events are `steps + 2` (start, steps, the pause). */
  write: (
    store: EventStore.Service,
    options: { readonly runId: string; readonly tenant: TenantContext; readonly steps: number; readonly batch?: number | undefined }
  ): Effect.Effect<void, Errors.SequenceConflict | Errors.OwnershipLost | Errors.StoreError> => {
    const { runId, tenant, steps } = options
    const total = steps + 2
    return write(store, {
      runId,
      tenantId: tenant.tenantId,
      events: total,
      batch: options.batch,
      event: (seq) =>
        seq === 1
          ? { stepKey: RUN_STEP_KEY, payload: { _tag: "RunStarted", workflow: "test.long-run", input: { steps }, tenant } }
          : seq === total
          ? { stepKey: `pause:${steps}`, payload: { _tag: "PauseRequested", reason: "approve the sum", ticket: `${runId}-ticket` } }
          : { stepKey: `step:${seq - 2}`, payload: { _tag: "StepCompleted", name: "n", value: seq - 2 } }
    })
  }
}
