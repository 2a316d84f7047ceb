/**
 * Hash-chained events built without a kernel, for tests of stores and of tools that read logs.
 *
 * @since 0.1.0
 */
import type { Event, EventPayload } from "./Event.js"
import { GENESIS_HASH, newEventHash } from "./internal/hash.js"

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
