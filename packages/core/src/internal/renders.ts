/**
 * The texts of the objects a model request holds, rendered once across an execution's requests: an object that the
 * next request holds again (the system prompt, an agent's window, a chat's growing conversation, the offered tools)
 * is looked up, not rendered again. Each entry holds the object's canonical JSON (what the request's hash covers,
 * `requestHash.ts`) and, once asked for, its `JSON.stringify` text (how a `ModelRequested` stores a message,
 * `modelRequested.ts`): a replayed model step finds both texts of a message with one lookup. A model step keeps one per
 * execution (`stepEnv.ts`); a call without one renders every part.
 *
 * Only the objects of the last few requests are remembered (an entry not used by any of the last `GENERATIONS`
 * requests is dropped), not every object ever rendered, which a `WeakMap` by identity did until November 2026: V8's
 * young collector treats a weak map's keys as weak but its values as strong, so each young collection copied every
 * text rendered since the one before, whether or not its object was still alive. In a replay of an agent's log that
 * was about two thirds of what the young collections copied (bench/scale/README.md, "the young collector and the
 * request's renders"). A few requests, not one: an execution may take turns between conversations (a side call to a
 * judge or a classifier each turn, an agent's compaction summary, agents run with `Effect.all`), and each would
 * otherwise clear the other's entries and render its whole conversation again every turn. Objects are immutable values
 * here (the request's types are readonly): an object changed in place between two requests would keep its first
 * rendering.
 */
import { canonicalJson } from "./hash.js"

/** The texts of an object of a request: its canonical JSON, and `JSON.stringify`'s once asked for. */
export interface Rendered {
  readonly canonical: string
  stored: string | undefined
}

/** Requests after which an entry no request used is dropped: up to this many conversations can take turns. */
const GENERATIONS = 4

export class Renders {
  /** The entries each of the last requests used, this request's first. */
  private readonly used: Array<Map<object, Rendered>> = Array.from({ length: GENERATIONS }, () => new Map())
  /** The names of the tools array used last, as `JSON.stringify` writes them (`modelRequested.ts`). */
  private tools: { readonly of: object; readonly names: string } | undefined
  /** What a request's hash covers after its messages, for the model and tools array used last (`modelRequested.ts`). */
  private tail: { readonly model: string; readonly of: object; readonly text: string } | undefined

  /** The texts of `value`: a recent request's entry, else a new one with its canonical JSON. */
  of(value: object): Rendered {
    const current = this.used[0]!
    let entry = current.get(value)
    if (entry !== undefined) return entry
    for (let g = 1; g < GENERATIONS && entry === undefined; g++) entry = this.used[g]!.get(value)
    entry ??= { canonical: canonicalJson(value), stored: undefined }
    current.set(value, entry)
    return entry
  }

  /** `render(tools)`, kept for the next request that offers the same array. */
  toolNames<A extends object>(tools: A, render: (tools: A) => string): string {
    if (this.tools?.of !== tools) this.tools = { of: tools, names: render(tools) }
    return this.tools.names
  }

  /**
   * `render(model, tools, this)`, kept for the next request that names the same model and offers the same array: an
   * agent's requests end alike every turn (the model, the offered tools' specs), and a replayed one hashes that text.
   */
  requestTail<A extends object>(model: string, tools: A, render: (model: string, tools: A, renders: Renders) => string): string {
    const kept = this.tail
    if (kept !== undefined && kept.of === tools && kept.model === model) return kept.text
    const text = render(model, tools, this)
    this.tail = { model, of: tools, text }
    return text
  }

  /** The request is rendered: the next one starts a generation, and the oldest is dropped. */
  done(): void {
    const oldest = this.used.pop()!
    oldest.clear()
    this.used.unshift(oldest)
  }
}
