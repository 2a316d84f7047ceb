/**
 * Texts of the objects a model request holds, rendered once across an execution's requests: an object that the next
 * request holds again (the system prompt, an agent's window, a chat's growing conversation, the offered tools) is
 * looked up, not rendered again. `requestHash.ts` (the canonical text the request's hash covers) and
 * `modelRequested.ts` (the text a `ModelRequested` is stored as) each keep one per execution (`stepEnv.ts`).
 *
 * Only the objects of the request before are remembered, not every object ever rendered (which a `WeakMap` by
 * identity did until November 2026): V8's young collector treats a weak map's keys as weak but its values as strong,
 * so each young collection copied every text rendered since the one before, whether or not its object was still
 * alive. In a replay of an agent's log that was about two thirds of what the young collections copied
 * (bench/scale/README.md, "The young collector and the request's renders"). Requests of one execution follow each
 * other, so the request before is the one that shares objects with this one. Objects are immutable values here (the
 * request's types are readonly): an object changed in place between two requests would keep its first rendering.
 */
export class Renders {
  /** What the request before rendered. */
  private last = new Map<object, string>()
  /** What this request rendered so far. */
  private next = new Map<object, string>()

  /** The text of `value`: the request before's or this one's, else `render(value)`. */
  of<A extends object>(value: A, render: (value: A) => string): string {
    let text = this.last.get(value) ?? this.next.get(value)
    if (text === undefined) text = render(value)
    this.next.set(value, text)
    return text
  }

  /** The request is rendered: what it rendered is what the next one looks up. */
  done(): void {
    const last = this.last
    this.last = this.next
    last.clear()
    this.next = last
  }
}
