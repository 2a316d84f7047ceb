/**
 * The texts of the objects a model request holds, rendered once across an execution's requests: an object that the
 * next request holds again (the system prompt, an agent's window, a chat's growing conversation, the offered tools)
 * is looked up, not rendered again. Each entry holds the object's canonical JSON (what the request's hash covers,
 * `requestHash.ts`) and, once asked for, its `JSON.stringify` text (how a `ModelRequested` stores a message,
 * `modelRequested.ts`): a replayed model step finds both texts of a message with one lookup. A model step keeps one per
 * execution (`stepEnv.ts`); a call without one renders every part.
 *
 * Only the objects of the request before are remembered, not every object ever rendered (which a `WeakMap` by
 * identity did until November 2026): V8's young collector treats a weak map's keys as weak but its values as strong,
 * so each young collection copied every text rendered since the one before, whether or not its object was still
 * alive. In a replay of an agent's log that was about two thirds of what the young collections copied
 * (bench/scale/README.md, "the young collector and the request's renders"). Requests of one execution follow each
 * other, so the request before is the one that shares objects with this one. Objects are immutable values here (the
 * request's types are readonly): an object changed in place between two requests would keep its first rendering.
 */
import { canonicalJson } from "./hash.js"

/** The texts of an object of a request: its canonical JSON, and `JSON.stringify`'s once asked for. */
export interface Rendered {
  readonly canonical: string
  stored: string | undefined
}

export class Renders {
  /** What the request before rendered. */
  private last = new Map<object, Rendered>()
  /** What this request rendered so far. */
  private next = new Map<object, Rendered>()

  /** The texts of `value`: the request before's or this one's entry, else a new one with its canonical JSON. */
  of(value: object): Rendered {
    let entry = this.last.get(value) ?? this.next.get(value)
    if (entry === undefined) entry = { canonical: canonicalJson(value), stored: undefined }
    this.next.set(value, entry)
    return entry
  }

  /** The request is rendered: what it rendered is what the next one looks up. */
  done(): void {
    const last = this.last
    this.last = this.next
    last.clear()
    this.next = last
  }
}
