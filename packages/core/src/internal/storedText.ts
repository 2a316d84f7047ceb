/**
 * The stored text of an event's payload, carried by an event that is not a `StoredEvent` (`hash.ts`): a replay's
 * lazily read `ModelRequested` (`lazyPayload.ts`), whose class extends this one. A module of its own, importing
 * nothing: `hash.ts` reads the text (`StoredEvent.payloadTextOf`) without importing the lazy event's decoding.
 */
export class StoredText {
  readonly #text: string
  constructor(text: string) {
    this.#text = text
  }

  /** The stored text `event` carries, when it is a `StoredText`. */
  static of(event: object): string | undefined {
    return event instanceof StoredText ? event.#text : undefined
  }
}
