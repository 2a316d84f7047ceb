/**
 * `ModelRequested` events a replay reads without decoding their payloads. Such a payload is the largest of an agent's
 * log (the messages as sent, ~900 characters in `bench/scale`'s), and a replay uses none of it: the model step
 * compares the stored text with the text its own request's `ModelRequested` would have (`modelRecorded.ts`), and the
 * same text is the same payload. Only the replay's own read makes them (`replayRead`, set around the pages a replay
 * or a resume pulls; on SQLite, whose rows name their type); every other read decodes every payload as it always did.
 *
 * The payload is still there for any code that reads it: `payload` is an own enumerable property whose getter parses
 * and guards the stored text on first use, as the read would have, and keeps the value. Equality, spreading,
 * `JSON.stringify` and `structuredClone` read it through the getter, so they see what an eager read gives. A text that
 * differs from what the replayed code would log and fails to decode fails where a replay uses it with the `StoreError`
 * the read would have failed with (`decodeLazy`). A text equal to what the replayed code logs is not guarded again: it
 * replays, as the live run that wrote it ran (only code that builds messages outside `Chat.ChatMessage`, through casts,
 * can write one the guard refuses; `Kernel.verify` and every other read still refuse it). Steps of other kinds tell a
 * lazy event apart undecoded (`payloadUnlessLazy`, `tagOf`); a getter cannot fail an effect, so a direct read of a
 * payload that fails its guard throws that error (a defect).
 */
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import { CORRUPT_ROW, StoreError } from "../Errors.js"
import { decodeStoredPayload, type Event, type EventPayload } from "../Event.js"
import { causeText } from "../SqlErrors.js"
import { StoredText } from "./storedText.js"

/** Set (by a replay, around its reads) when `ModelRequested` events may come back undecoded. */
export const replayRead: FiberRef.FiberRef<boolean> = globalValue("@artana/core/lazyPayload/replayRead", () => FiberRef.unsafeMake(false))

/** The type of the events read lazily, and how their stored text starts (as `JSON.stringify` of the kernel's writes). */
export const LAZY_TYPE = "ModelRequested"
export const LAZY_PREFIX = `{"_tag":"${LAZY_TYPE}",`

/** Why a stored payload's text is not JSON (`cause`: what `JSON.parse` threw). */
export const notJson = (cause: unknown): string => `not JSON (${causeText(cause)})`

/** The error of a read that met a corrupt row (`column` does not hold what it should, `reason`). */
export const corruptRow = (runId: string, seq: unknown, column: string, reason: string): StoreError =>
  new StoreError({ operation: "readEvents", reason: `${CORRUPT_ROW} (run ${runId} seq ${String(seq)}), column ${column}: ${reason}` })

/**
 * A `ModelRequested` read with its stored text only; its payload decoded on first use (see the module's comment). Not a
 * `StoredEvent`, whose `payload` is a data property: made an accessor afterwards, V8 keeps the object in dictionary
 * mode, and every event site of a replay slows down. Its text is a `StoredText`'s, which `StoredEvent.payloadTextOf`
 * reads. Its own properties are an event's, in the same order, `payload` an accessor in its place.
 */
export class LazyRequested extends StoredText implements Event {
  declare readonly eventId: string
  declare readonly runId: string
  declare readonly tenantId: string
  declare readonly seq: number
  declare readonly timestamp: number
  declare readonly type: string
  declare readonly stepKey: string
  declare readonly payload: EventPayload
  declare readonly prevHash: string
  declare readonly hash: string
  #decoded: Either.Either<EventPayload, StoreError> | undefined
  constructor(eventId: string, runId: string, tenantId: string, seq: number, timestamp: number, stepKey: string, prevHash: string, hash: string, text: string) {
    super(text)
    this.eventId = eventId
    this.runId = runId
    this.tenantId = tenantId
    this.seq = seq
    this.timestamp = timestamp
    this.type = LAZY_TYPE
    this.stepKey = stepKey
    Object.defineProperty(this, "payload", PAYLOAD)
    this.prevHash = prevHash
    this.hash = hash
  }

  /** The payload decoded (once), or the read's error for a text that does not decode as a `ModelRequested`. */
  static decode(event: LazyRequested): Either.Either<EventPayload, StoreError> {
    if (event.#decoded === undefined) event.#decoded = decodeText(event, StoredText.of(event) ?? "")
    return event.#decoded
  }
}

/** What the read does with a stored payload (`sqlEventRead.ts`: parsed, then guarded), as an `Either`. */
const decodeText = (event: Event, text: string): Either.Either<EventPayload, StoreError> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (cause) {
    return Either.left(corruptRow(event.runId, event.seq, "payload", notJson(cause)))
  }
  const payload = decodeStoredPayload(LAZY_TYPE, json)
  if (Either.isLeft(payload)) return Either.left(corruptRow(event.runId, event.seq, "payload", payload.left))
  if (payload.right._tag !== LAZY_TYPE) {
    return Either.left(corruptRow(event.runId, event.seq, "payload", `type ${LAZY_TYPE} does not match payload ${payload.right._tag}`))
  }
  return Either.right(payload.right)
}

/** One getter for every lazy event (V8 shares the objects' shape). */
const PAYLOAD: PropertyDescriptor = {
  get(this: LazyRequested): EventPayload {
    const decoded = LazyRequested.decode(this)
    if (Either.isLeft(decoded)) throw decoded.left
    return decoded.right
  },
  enumerable: true,
  configurable: true
}

/** Whether `event` came from a replay's read with its payload not decoded yet (or decoded on demand). */
export const isLazy = (event: Event): event is LazyRequested => event instanceof LazyRequested

/**
 * The payload of a recorded step's first event, as a step of another kind than a model call reads it: undefined for a
 * lazy `ModelRequested` (a model call's, so never that step's), which is then told apart undecoded. A divergence onto a
 * model call whose text would fail its guard stays a `NonDeterminism`, not a defect thrown by the getter.
 */
export const payloadUnlessLazy = (event: Event): EventPayload | undefined => (event instanceof LazyRequested ? undefined : event.payload)

/** The payload's `_tag` without decoding a lazy one (whose read vouched for its type, `ModelRequested`). */
export const tagOf = (event: Event): EventPayload["_tag"] => (event instanceof LazyRequested ? LAZY_TYPE : event.payload._tag)

/** The payload of `event`, decoded now if it is lazy; a text that does not decode fails with the read's error. */
export const decodeLazy = (event: Event): Either.Either<EventPayload, StoreError> =>
  event instanceof LazyRequested ? LazyRequested.decode(event) : Either.right(event.payload)
