/**
 * A chat message scrubbed field by field (system, user and assistant text, tool-call arguments and tool results as
 * JSON), with a tally of what was found for the middleware's notes (kinds and counts, never values).
 *
 * @internal
 */
import type { Chat, Json } from "@artana/core"
import { mapJson } from "./json.js"
import type { Kind } from "./kinds.js"

/** What scrubbing one text gives: the text with placeholders, and what each finding became. */
export interface TextScrubber {
  readonly scrub: (text: string) => {
    readonly text: string
    readonly findings: ReadonlyArray<{ readonly kind: Kind; readonly start: number; readonly end: number; readonly placeholder: string }>
  }
}

/** Per-request counts, for the note. */
export interface Tally {
  readonly counts: Map<Kind, number>
  readonly distinct: Map<Kind, Set<string>>
}

export const makeTally = (): Tally => ({ counts: new Map(), distinct: new Map() })

export const count = (tally: Tally, kind: Kind, placeholder: string): void => {
  tally.counts.set(kind, (tally.counts.get(kind) ?? 0) + 1)
  const seen = tally.distinct.get(kind) ?? new Set<string>()
  seen.add(placeholder)
  tally.distinct.set(kind, seen)
}

export const summary = (tally: Tally): { readonly total: number; readonly data: Json.Json } => {
  const counts: Record<string, number> = {}
  const distinct: Record<string, number> = {}
  let total = 0
  for (const [kind, n] of tally.counts) {
    counts[kind] = n
    distinct[kind] = tally.distinct.get(kind)?.size ?? 0
    total += n
  }
  return { total, data: { total, counts, distinct } }
}

export const scrubText = (scrubber: TextScrubber, text: string, tally: Tally): string => {
  const result = scrubber.scrub(text)
  for (const f of result.findings) count(tally, f.kind, f.placeholder)
  return result.text
}

/**
 * A JSON text (tool-call arguments, a tool's result) scrubbed string by string, so it stays valid JSON; a
 * value outside any string (a card number written as a JSON number) becomes a string placeholder. Text
 * that is not JSON is scrubbed as text.
 */
export const scrubJsonText = (scrubber: TextScrubber, text: string, tally: Tally): string =>
  mapJson(
    text,
    (value) => scrubText(scrubber, value, tally),
    (segment) => {
      const result = scrubber.scrub(segment)
      let out = ""
      let last = 0
      for (const f of result.findings) {
        count(tally, f.kind, f.placeholder)
        out += segment.slice(last, f.start) + JSON.stringify(f.placeholder)
        last = f.end
      }
      return out + segment.slice(last)
    }
  ) ?? scrubText(scrubber, text, tally)

export const scrubMessage = (scrubber: TextScrubber, message: Chat.ChatMessage, tally: Tally): Chat.ChatMessage => {
  switch (message.role) {
    case "system":
    case "user": {
      const content = scrubText(scrubber, message.content, tally)
      return content === message.content ? message : { ...message, content }
    }
    case "tool": {
      const content = scrubJsonText(scrubber, message.content, tally)
      return content === message.content ? message : { ...message, content }
    }
    case "assistant": {
      const content = message.content === null ? null : scrubText(scrubber, message.content, tally)
      const toolCalls = message.toolCalls?.map((call) => {
        const args = scrubJsonText(scrubber, call.arguments, tally)
        return args === call.arguments ? call : { ...call, arguments: args }
      })
      if (content === message.content && (toolCalls ?? []).every((call, i) => call === message.toolCalls?.[i])) return message
      return toolCalls === undefined ? { ...message, content } : { ...message, content, toolCalls }
    }
  }
}

/** Every text of a message (its content, its tool calls' arguments), for reading the placeholders it holds. */
export const textsOf = (message: Chat.ChatMessage): ReadonlyArray<string> =>
  message.role === "assistant"
    ? [...(message.content === null ? [] : [message.content]), ...(message.toolCalls ?? []).map((call) => call.arguments)]
    : [message.content]

/** `value` with every string in it (not the keys of its objects) passed through `f`; the same object when none changed. */
const mapStrings = (value: Json.Json, f: (text: string) => string): Json.Json => {
  if (typeof value === "string") return f(value)
  if (Array.isArray(value)) {
    const items = value.map((item: Json.Json) => mapStrings(item, f))
    return items.every((item, i) => item === value[i]) ? value : items
  }
  if (typeof value !== "object" || value === null) return value
  const object = value as { readonly [key: string]: Json.Json }
  let changed = false
  const out: Record<string, Json.Json> = {}
  for (const [key, item] of Object.entries(object)) {
    out[key] = mapStrings(item, f)
    changed ||= out[key] !== item
  }
  return changed ? out : value
}

/**
 * A tool as the model sees it, scrubbed: its description and every string of its parameters' JSON Schema (descriptions,
 * titles, examples, defaults, enum values); property names are the tool's interface and stay.
 */
export const scrubToolSpec = (scrubber: TextScrubber, spec: Chat.ToolSpec, tally: Tally): Chat.ToolSpec => {
  const description = scrubText(scrubber, spec.description, tally)
  const parameters = mapStrings(spec.parameters, (text) => scrubText(scrubber, text, tally)) as Json.JsonObject
  return description === spec.description && parameters === spec.parameters ? spec : { ...spec, description, parameters }
}
