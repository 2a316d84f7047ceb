/**
 * PII scrubber: finds personal data and credentials in text and replaces each value by a numbered
 * placeholder (`<EMAIL_1>`, `<CARD_1>`, `<OPENAI_KEY_1>`), so a model never sees the raw value.
 *
 * - `scrub(text)` for one text; `makeScrubber()` when numbering must hold across texts (one value, one
 *   placeholder); `restore(text, map)` puts values back.
 * - `middleware()` scrubs every message of every model request of a run, notes what it found (kinds and
 *   counts, never values) in the log, and can restore placeholders in tool-call arguments so tools work on
 *   the real values.
 *
 * Detection is precision-first: checksums where the format has one (Luhn for cards, mod 97 for IBANs),
 * issuer prefixes, number shapes, and a few context words (a bare `555-0132` is a phone only after "call
 * me at"). Dates, versions, amounts, order and tracking numbers pass untouched.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { type Chat, Errors, type Json, type Middleware } from "@artana/core"
import { detect } from "./internal/pii/detect.js"
import { mapJson } from "./internal/pii/json.js"
import { deltaHook } from "./internal/pii/stream.js"
import * as internal from "./internal/pii/kinds.js"

/**
 * A kind of PII: `email`, `phone`, `card`, `iban`, `ssn`, `ipv4`, `ipv6`, `openai_key`, `aws_access_key`,
 * `aws_secret_key`, `github_token`, `jwt`, `private_key`. Its placeholder is the kind in capitals:
 * `<AWS_ACCESS_KEY_1>`.
 */
export type Kind = internal.Kind

/** Every kind the scrubber knows. */
export const kinds: ReadonlyArray<Kind> = internal.kinds

/** One value found in a text. */
export interface Finding {
  readonly kind: Kind
  /** Offset of the value in the original text (UTF-16 units, as `String.prototype.slice` counts). */
  readonly start: number
  /** Offset just past the value in the original text. */
  readonly end: number
  /** What replaced it, e.g. `<EMAIL_1>`. */
  readonly placeholder: string
  /** The value itself; absent when `includeValues` is false. */
  readonly value?: string
}

/** A scrubbed text and what was taken out of it. */
export interface ScrubResult {
  readonly text: string
  readonly findings: ReadonlyArray<Finding>
}

export interface ScrubOptions {
  /** Kinds to detect; default all. */
  readonly kinds?: ReadonlyArray<Kind> | undefined
  /** Whether findings carry the raw value (default true; the middleware never logs them either way). */
  readonly includeValues?: boolean | undefined
}

/** Placeholder -> original value, in order of first appearance. */
export type PlaceholderMap = ReadonlyMap<string, string>

/**
 * Scrubs text with numbering that holds across calls: a value keeps its placeholder every time it comes
 * back (two spellings of one value, `415-555-0132` and `(415) 555-0132`, share it), and each new value gets
 * the next number of its kind.
 *
 * @example
 * ```ts
 * const scrubber = Pii.makeScrubber()
 * scrubber.scrub("mail ann@example.com").text   // "mail <EMAIL_1>"
 * scrubber.scrub("cc ann@example.com, bo@example.org").text // "cc <EMAIL_1>, <EMAIL_2>"
 * scrubber.restore("sent to <EMAIL_2>")          // "sent to bo@example.org"
 * ```
 */
export interface Scrubber {
  readonly scrub: (text: string) => ScrubResult
  /** Puts back the values of placeholders this scrubber issued; any other text is left as it is. */
  readonly restore: (text: string) => string
  /** Every placeholder issued so far, with its value (the first spelling seen). */
  readonly placeholders: PlaceholderMap
}

const placeholderOf = (kind: Kind, n: number): string => `<${kind.toUpperCase()}_${n}>`
const PLACEHOLDER = /<[A-Z][A-Z0-9_]*_\d+>/g
const kindOfLabel: ReadonlyMap<string, Kind> = new Map(internal.kinds.map((k) => [k.toUpperCase(), k]))

/** The kind a placeholder names (`<EMAIL_3>` -> `email`), if it is one. */
const kindOfPlaceholder = (placeholder: string): Kind | undefined =>
  kindOfLabel.get(placeholder.slice(1, placeholder.lastIndexOf("_")))

/** A scrubber with its own numbering. */
export const makeScrubber = (options: ScrubOptions = {}): Scrubber => {
  const enabled = options.kinds ?? internal.kinds
  const includeValues = options.includeValues ?? true
  const byKey = new Map<string, string>()
  const values = new Map<string, string>()
  const counters = new Map<Kind, number>()

  const placeholderFor = (kind: Kind, key: string, value: string): string => {
    const id = `${kind}\u0000${key}`
    const known = byKey.get(id)
    if (known !== undefined) return known
    const n = (counters.get(kind) ?? 0) + 1
    counters.set(kind, n)
    const placeholder = placeholderOf(kind, n)
    byKey.set(id, placeholder)
    values.set(placeholder, value)
    return placeholder
  }

  /**
   * Placeholders already in a text (a reply scrubbed earlier, sent back in the conversation) keep their numbers:
   * numbering goes on after them, so a process that rebuilds it from the messages never hands one out twice.
   */
  const reserve = (text: string) => {
    for (const placeholder of text.match(PLACEHOLDER) ?? []) {
      const kind = kindOfPlaceholder(placeholder)
      const n = Number(placeholder.slice(placeholder.lastIndexOf("_") + 1, -1))
      if (kind !== undefined && n > (counters.get(kind) ?? 0)) counters.set(kind, n)
    }
  }

  return {
    scrub: (text) => {
      if (text.includes("<")) reserve(text)
      const found = detect(text, enabled)
      if (found.length === 0) return { text, findings: [] }
      const findings: Array<Finding> = []
      let out = ""
      let last = 0
      for (const c of found) {
        const value = text.slice(c.start, c.end)
        const placeholder = placeholderFor(c.kind, c.key, value)
        out += text.slice(last, c.start) + placeholder
        last = c.end
        findings.push(
          includeValues
            ? { kind: c.kind, start: c.start, end: c.end, placeholder, value }
            : { kind: c.kind, start: c.start, end: c.end, placeholder }
        )
      }
      return { text: out + text.slice(last), findings }
    },
    restore: (text) => restore(text, values),
    placeholders: values
  }
}

/**
 * Scrubs one text, numbering from 1.
 *
 * @example
 * ```ts
 * Pii.scrub("Card 4111 1111 1111 1111, call +44 20 7946 0958").text
 * // "Card <CARD_1>, call <PHONE_1>"
 * ```
 */
export const scrub = (text: string, options: ScrubOptions = {}): ScrubResult => makeScrubber(options).scrub(text)

/** `text` with every placeholder found in `map` replaced by its value; unknown placeholders stay. */
export const restore = (text: string, map: PlaceholderMap): string =>
  text.replace(PLACEHOLDER, (placeholder) => map.get(placeholder) ?? placeholder)

// ------------------------------------------------------------------------------------------ middleware

export interface Options {
  /** Kinds to scrub; default all. */
  readonly kinds?: ReadonlyArray<Kind> | undefined
  /**
   * Replace placeholders in tool-call arguments by the run's real values before the tool runs (default
   * false): the model works with `<EMAIL_1>`, the tool receives the address. Only values the run's own
   * messages held are restored.
   */
  readonly restoreToolArguments?: boolean | undefined
  /**
   * Scrub the model's replies too (default false): the logged reply (`ModelCompleted`) holds placeholders, and so
   * does every delta of a streamed reply, a value split across deltas included (see the README). For a model that
   * may write personal data of its own (from its training, or a tool's result it was given unscrubbed).
   */
  readonly scrubReplies?: boolean | undefined
  /** Runs whose numbering is cached in this process (least recently used first out). Default 1,000. */
  readonly maxCachedRuns?: number | undefined
}

const NAME = "pii"

/** Per-request counts, for the note. */
interface Tally {
  readonly counts: Map<Kind, number>
  readonly distinct: Map<Kind, Set<string>>
}

const makeTally = (): Tally => ({ counts: new Map(), distinct: new Map() })

const count = (tally: Tally, kind: Kind, placeholder: string): void => {
  tally.counts.set(kind, (tally.counts.get(kind) ?? 0) + 1)
  const seen = tally.distinct.get(kind) ?? new Set<string>()
  seen.add(placeholder)
  tally.distinct.set(kind, seen)
}

const summary = (tally: Tally): { readonly total: number; readonly data: Json.Json } => {
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

const scrubText = (scrubber: Scrubber, text: string, tally: Tally): string => {
  const result = scrubber.scrub(text)
  for (const f of result.findings) count(tally, f.kind, f.placeholder)
  return result.text
}

/**
 * A JSON text (tool-call arguments, a tool's result) scrubbed string by string, so it stays valid JSON; a
 * value outside any string (a card number written as a JSON number) becomes a string placeholder. Text
 * that is not JSON is scrubbed as text.
 */
const scrubJsonText = (scrubber: Scrubber, text: string, tally: Tally): string =>
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

const scrubMessage = (scrubber: Scrubber, message: Chat.ChatMessage, tally: Tally): Chat.ChatMessage => {
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

/**
 * The PII middleware, named `"pii"`.
 *
 * - `beforeModel` scrubs every message (system, user, assistant text and tool-call arguments, tool
 *   results), so the request the model gets, and the `ModelRequested` event, hold placeholders only. When it
 *   found something it writes a `MiddlewareNote` `scrubbed` with `{ total, counts, distinct }` per kind.
 * - Numbering is derived from the run's messages: values are numbered in order of first appearance across
 *   the message list. A chat's list only grows, so a process resuming the run after a crash numbers exactly
 *   as the first one did. The per-run map kept in memory is a cache of that derivation.
 * - With `restoreToolArguments`, `beforeTool` puts the real values back into the call's JSON arguments
 *   (string by string) and notes `restored` with counts. It restores only placeholders issued for this run.
 *   If the run resumed in this process after its last model call (no map yet) and the arguments hold
 *   placeholders, the call is denied (`PolicyDenied`) rather than run on placeholders: the model gets the
 *   error, and its next request rebuilds the map.
 *
 * @example
 * ```ts
 * Middleware.layer([Pii.middleware({ restoreToolArguments: true }), CapabilityGuard.middleware()])
 * ```
 */
export const middleware = (options: Options = {}): Middleware.Interceptor => {
  const maxRuns = Math.max(1, options.maxCachedRuns ?? 1000)
  const scrubOptions: ScrubOptions = { kinds: options.kinds, includeValues: false }
  const runs = new Map<string, Scrubber>()
  const keyOf = (ctx: Middleware.CallContext) => `${ctx.tenant.tenantId}\u0000${ctx.runId}`

  const cached = (ctx: Middleware.CallContext): Scrubber | undefined => {
    const key = keyOf(ctx)
    const scrubber = runs.get(key)
    if (scrubber !== undefined) {
      // Most recently used last: eviction takes the first key.
      runs.delete(key)
      runs.set(key, scrubber)
    }
    return scrubber
  }

  const scrubberFor = (ctx: Middleware.CallContext): Scrubber => {
    const known = cached(ctx)
    if (known !== undefined) return known
    const scrubber = makeScrubber(scrubOptions)
    runs.set(keyOf(ctx), scrubber)
    while (runs.size > maxRuns) {
      const oldest = runs.keys().next()
      if (oldest.done === true) break
      runs.delete(oldest.value)
    }
    return scrubber
  }

  const beforeModel: NonNullable<Middleware.Interceptor["beforeModel"]> = (request, ctx) =>
    Effect.gen(function*() {
      const scrubber = scrubberFor(ctx)
      const tally = makeTally()
      const messages = request.messages.map((m) => scrubMessage(scrubber, m, tally))
      const { data, total } = summary(tally)
      if (total === 0) return request
      yield* ctx.note(NAME, "scrubbed", data)
      return { ...request, messages }
    })

  const beforeTool: NonNullable<Middleware.Interceptor["beforeTool"]> = (call, ctx) =>
    Effect.gen(function*() {
      const wanted = call.arguments.match(PLACEHOLDER)
      if (wanted === null) return call
      const scrubber = cached(ctx)
      if (scrubber === undefined) {
        return yield* new Errors.PolicyDenied({
          tool: call.tool,
          reason: `pii: the arguments hold placeholders (${[...new Set(wanted)].join(", ")}) but this process has not ` +
            `seen the run's messages since it resumed, so it cannot restore them; ask again and they will be restored`
        })
      }
      const tally = makeTally()
      const restored = mapJson(
        call.arguments,
        (value) =>
          value.replace(PLACEHOLDER, (placeholder) => {
            const original = scrubber.placeholders.get(placeholder)
            const kind = kindOfPlaceholder(placeholder)
            if (original === undefined || kind === undefined) return placeholder
            count(tally, kind, placeholder)
            return original
          }),
        (segment) => segment
      )
      const { data, total } = summary(tally)
      if (restored === undefined || total === 0) return call
      yield* ctx.note(NAME, "restored", data)
      return { ...call, arguments: restored }
    })

  const afterModel: NonNullable<Middleware.Interceptor["afterModel"]> = (_request, response, ctx) =>
    Effect.gen(function*() {
      const tally = makeTally()
      const message = scrubMessage(scrubberFor(ctx), response.message, tally)
      const { data, total } = summary(tally)
      if (total === 0 || message.role !== "assistant") return response
      yield* ctx.note(NAME, "scrubbed_reply", data)
      return { ...response, message }
    })

  const modelDeltas: NonNullable<Middleware.Interceptor["modelDeltas"]> = (_request, ctx) =>
    Effect.sync(() => {
      const scrubber = scrubberFor(ctx)
      return deltaHook((text) => scrub(text, scrubOptions), (text) => scrubber.scrub(text).text, (json) => scrubJsonText(scrubber, json, makeTally()))
    })

  return {
    name: NAME,
    beforeModel,
    ...(options.restoreToolArguments === true ? { beforeTool } : {}),
    ...(options.scrubReplies === true ? { afterModel, modelDeltas } : {})
  }
}
