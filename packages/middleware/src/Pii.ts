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
import { type Chat, Errors, type Middleware } from "@artana/core"
import { substitute } from "./internal/pii/detect.js"
import { mapJson } from "./internal/pii/json.js"
import * as internal from "./internal/pii/kinds.js"
import { count, makeTally, scrubJsonText, scrubMessage, scrubToolSpec, summary, textsOf } from "./internal/pii/messages.js"
import * as Numbering from "./internal/pii/numbering.js"
import { learn } from "./internal/pii/rebuild.js"
import { deltaHook } from "./internal/pii/stream.js"

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

/** A scrubber numbering into `numbering`. */
const scrubberOf = (numbering: Numbering.Numbering, options: ScrubOptions): Scrubber => {
  const enabled = options.kinds ?? internal.kinds
  const includeValues = options.includeValues ?? true
  return {
    scrub: (text) => {
      // Placeholders already in a text (a reply scrubbed earlier, sent back in the conversation) keep their numbers.
      numbering.reserve(text)
      const { findings, text: scrubbed } = substitute(text, enabled, (c, value) => numbering.issue(c.kind, c.key, value))
      return {
        text: scrubbed,
        findings: findings.map(({ end, kind, placeholder, start, value }) =>
          includeValues ? { kind, start, end, placeholder, value } : { kind, start, end, placeholder })
      }
    },
    restore: (text) => restore(text, numbering.values),
    placeholders: numbering.values
  }
}

/** A scrubber with its own numbering. */
export const makeScrubber = (options: ScrubOptions = {}): Scrubber => scrubberOf(Numbering.make(), options)

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
  text.replace(Numbering.PLACEHOLDER, (placeholder) => map.get(placeholder) ?? placeholder)

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

/** What the middleware keeps of a run: its numbering, a scrubber numbering into it, the replayed messages read. */
interface RunNumbering {
  readonly numbering: Numbering.Numbering
  readonly scrubber: Scrubber
  readonly learned: WeakMap<Chat.ChatMessage, string>
}

/**
 * The PII middleware, named `"pii"`.
 *
 * - `beforeModel` scrubs every message (system, user, assistant text and tool-call arguments, tool
 *   results) and every offered tool's description and parameter schema (its strings; not property names), so the
 *   request the model gets, and the `ModelRequested` event, hold placeholders only. When it
 *   found something it writes a `MiddlewareNote` `scrubbed` with `{ total, counts, distinct }` per kind.
 * - Numbering: a value keeps its placeholder for the whole run, and a new value gets the next number of its kind,
 *   after every placeholder the request already holds (one scrubbed earlier, or another run's), so no placeholder
 *   ever stands for two values. A process that resumes or recovers the run reads the numbering back from the log:
 *   for each model call the replay passes (`replayedModel`), the placeholder each value had is read from the logged
 *   request, so it numbers and restores as the first process did. The per-run numbering kept in memory is that.
 * - With `restoreToolArguments`, `beforeTool` puts the real values back into the call's JSON arguments
 *   (string by string) and notes `restored` with counts. It restores only placeholders issued (or read back) for
 *   this run. If this process has no numbering for the run (it evicted it, `maxCachedRuns`) and the arguments hold
 *   placeholders, or one of them stood for two values in the log (written before this check existed), the call is
 *   denied (`PolicyDenied`) rather than run on placeholders or on the wrong value: the model gets the error.
 *
 * @example
 * ```ts
 * Middleware.layer([Pii.middleware({ restoreToolArguments: true }), CapabilityGuard.middleware()])
 * ```
 */
export const middleware = (options: Options = {}): Middleware.Interceptor => {
  const maxRuns = Math.max(1, options.maxCachedRuns ?? 1000)
  const enabled = options.kinds ?? internal.kinds
  const scrubOptions: ScrubOptions = { kinds: enabled, includeValues: false }
  const runs = new Map<string, RunNumbering>()
  const keyOf = (ctx: Middleware.ReplayContext) => `${ctx.tenant.tenantId}\u0000${ctx.runId}`

  const cached = (ctx: Middleware.ReplayContext): RunNumbering | undefined => {
    const key = keyOf(ctx)
    const run = runs.get(key)
    if (run !== undefined) {
      // Most recently used last: eviction takes the first key.
      runs.delete(key)
      runs.set(key, run)
    }
    return run
  }

  const numberingFor = (ctx: Middleware.ReplayContext): RunNumbering => {
    const known = cached(ctx)
    if (known !== undefined) return known
    const numbering = Numbering.make()
    const run: RunNumbering = { numbering, scrubber: scrubberOf(numbering, scrubOptions), learned: new WeakMap() }
    runs.set(keyOf(ctx), run)
    while (runs.size > maxRuns) {
      const oldest = runs.keys().next()
      if (oldest.done === true) break
      runs.delete(oldest.value)
    }
    return run
  }

  const replayedModel: NonNullable<Middleware.Interceptor["replayedModel"]> = (call, ctx) => {
    const run = numberingFor(ctx)
    learn(run.numbering, enabled, call.request.messages, call.sent, call.reply, run.learned)
  }

  const beforeModel: NonNullable<Middleware.Interceptor["beforeModel"]> = (request, ctx) =>
    Effect.gen(function*() {
      const { numbering, scrubber } = numberingFor(ctx)
      // Every placeholder the request holds is taken before any value is numbered: one this process did not issue
      // (another run's, or a numbering it evicted) must not be handed to a value of this request.
      for (const message of request.messages) for (const text of textsOf(message)) numbering.reserve(text)
      const tally = makeTally()
      const messages = request.messages.map((m) => scrubMessage(scrubber, m, tally))
      const tools = request.tools.map((spec) => scrubToolSpec(scrubber, spec, tally))
      const { data, total } = summary(tally)
      if (total === 0) return request
      yield* ctx.note(NAME, "scrubbed", data)
      return { ...request, messages, tools }
    })

  const beforeTool: NonNullable<Middleware.Interceptor["beforeTool"]> = (call, ctx) =>
    Effect.gen(function*() {
      const wanted = call.arguments.match(Numbering.PLACEHOLDER)
      if (wanted === null) return call
      const run = cached(ctx)
      const deny = (reason: string) => new Errors.PolicyDenied({ tool: call.tool, reason: `pii: ${reason}` })
      if (run === undefined) {
        return yield* deny(`the arguments hold placeholders (${[...new Set(wanted)].join(", ")}) but this process ` +
          `has no numbering for the run (it was evicted: raise maxCachedRuns), so it cannot restore them`)
      }
      const { numbering } = run
      const twice = wanted.filter((placeholder) => numbering.conflicted.has(placeholder))
      if (twice.length > 0) {
        return yield* deny(`${[...new Set(twice)].join(", ")} stood for two different values in this run's log, so ` +
          `which one the call means is unknown; name the value again`)
      }
      const tally = makeTally()
      const restored = mapJson(
        call.arguments,
        (value) =>
          value.replace(Numbering.PLACEHOLDER, (placeholder) => {
            const original = numbering.values.get(placeholder)
            const kind = Numbering.kindOfPlaceholder(placeholder)
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
      const message = scrubMessage(numberingFor(ctx).scrubber, response.message, tally)
      const { data, total } = summary(tally)
      if (total === 0 || message.role !== "assistant") return response
      yield* ctx.note(NAME, "scrubbed_reply", data)
      return { ...response, message }
    })

  const modelDeltas: NonNullable<Middleware.Interceptor["modelDeltas"]> = (_request, ctx) =>
    Effect.sync(() => {
      const { scrubber } = numberingFor(ctx)
      return deltaHook((text) => scrub(text, scrubOptions), (text) => scrubber.scrub(text).text, (json) => scrubJsonText(scrubber, json, makeTally()))
    })

  return {
    name: NAME,
    beforeModel,
    replayedModel,
    ...(options.restoreToolArguments === true ? { beforeTool } : {}),
    ...(options.scrubReplies === true ? { afterModel, modelDeltas } : {})
  }
}
