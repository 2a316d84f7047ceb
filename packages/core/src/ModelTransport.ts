/**
 * What every model adapter needs around its provider's SDK, written once: transport retry of one model call
 * (bounded exponential backoff with jitter, a server's `retry-after` honoured and capped, every retry written down as a
 * `ProviderNote` so the kernel logs it with the step), tool names the provider's API accepts, and the adapter's
 * options read from the environment.
 *
 * @since 0.2.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { type Failure, failure } from "./internal/retrying.js"

export { addUsage, billedFailure, type Failure, failure, type RetryPolicy, retryPolicy, retrying } from "./internal/retrying.js"

/** The provider an adapter talks to, as its failures name it: the fix a person reads in a reason. */
export interface Provider {
  /** `OpenAI`, `Anthropic`. */
  readonly name: string
  /** The adapter's module (`OpenAiModel`), whose `layer` / `layerConfig` take the options. */
  readonly adapter: string
  /** The prefix of its environment variables: `<env>_API_KEY`, `<env>_BASE_URL`, `<env>_MODEL`. */
  readonly env: string
  /** The API's host, where a key is required. */
  readonly host: string
  /** What a key must belong to (said on a 403). */
  readonly keyScope: string
  /** What a base URL looks like (said on a 404). */
  readonly baseUrlHint: string
}

/** Where one call went: the provider, its base URL, the model asked for, whether a key was sent, the deadline. */
export interface Endpoint {
  readonly provider: Provider
  readonly baseURL: string
  readonly model: string
  readonly hasApiKey: boolean
  readonly timeoutMs: number
}

/** No key, and the provider's own host: refused before any request. */
export const missingKey = ({ provider: p }: Endpoint): Failure =>
  failure(
    "authentication",
    `no API key configured for ${p.host}; set ${p.env}_API_KEY (read by ${p.adapter}.layerConfig) or pass apiKey to ` +
      `${p.adapter}.layer (a local server needs none: set ${p.env}_BASE_URL instead)`,
    false
  )

/** No answer within the deadline. */
export const timedOut = (endpoint: Endpoint, cause?: unknown): Failure =>
  failure("timeout", `no response from ${endpoint.baseURL} within ${endpoint.timeoutMs} ms`, true, cause)

/** The server could not be reached (refused, reset, DNS). */
export const unreachable = (endpoint: Endpoint, detail: string, cause: unknown): Failure =>
  failure(
    "connection",
    `could not reach ${endpoint.baseURL} (${detail}); check ${endpoint.provider.env}_BASE_URL (the baseURL option) and ` +
      `that the server is running`,
    true,
    cause
  )

/** What the SDK threw that no other rule names. */
export const unexpected = (endpoint: Endpoint, e: unknown): Failure =>
  failure("unknown", `unexpected error from the ${endpoint.provider.name} client: ${e instanceof Error ? e.message : String(e)}`, false, e)

/** An HTTP error answer, as the SDK reports it. */
export interface HttpError {
  readonly status: number
  /** The server's message. */
  readonly detail: string
  readonly headers: Headers | undefined
  /** The provider said the conversation does not fit the model's context window. */
  readonly contextLength: boolean
  /** The provider said the account's credit or quota is exhausted (a retry will not help). */
  readonly quotaExhausted: boolean
}

/**
 * An HTTP error answer as a failure, the same for every provider: 401/403 `authentication`, 429 `rate_limited`
 * (retried, after `retry-after`), 408 `timeout`, 5xx and 409 `server_error` (retried), the context window
 * `context_length_exceeded`, any other 4xx `bad_request`; a server's `x-should-retry` overrides whether it is retried.
 */
export const httpFailure = (endpoint: Endpoint, e: HttpError, cause: unknown): Failure => {
  const failed = byStatus(endpoint, e, cause)
  const retryable = shouldRetry(e.headers, failed.error.retryable)
  return retryable === failed.error.retryable ? failed : failure(failed.error.kind, failed.error.reason, retryable, cause, failed.retryAfterMs)
}

const byStatus = ({ baseURL, hasApiKey, model, provider: p }: Endpoint, e: HttpError, cause: unknown): Failure => {
  const { detail, status } = e
  const after = retryAfterMs(e.headers)
  if (status === 401) {
    return failure(
      "authentication",
      hasApiKey
        ? `${baseURL} rejected the API key (${detail}); check ${p.env}_API_KEY (or the apiKey option of ${p.adapter}.layer)`
        : `${baseURL} requires an API key and none was configured (${detail}); set ${p.env}_API_KEY (read by ` +
          `${p.adapter}.layerConfig) or pass apiKey to ${p.adapter}.layer`,
      false,
      cause
    )
  }
  if (status === 403) {
    return failure(
      "authentication",
      `the API key may not do this (${detail}); check that the key in ${p.env}_API_KEY belongs to the right ` +
        `${p.keyScope} and has access to model "${model}"`,
      false,
      cause
    )
  }
  if (e.quotaExhausted) {
    return failure(
      "rate_limited",
      `the account's credit or quota is exhausted (${detail}); add credit or raise the limit with ${p.name}, retrying will not help`,
      false,
      cause
    )
  }
  if (status === 429) return failure("rate_limited", `rate limited by ${baseURL} (${detail})`, true, cause, after)
  if (status === 408) return failure("timeout", `${baseURL} timed out the request (${detail})`, true, cause, after)
  if (status >= 500 || status === 409) return failure("server_error", `${baseURL} failed (${detail})`, true, cause, after)
  if (e.contextLength) {
    return failure(
      "context_length_exceeded",
      `the conversation does not fit the context window of model "${model}" (${detail}); compact the history ` +
        `(fewer or shorter messages, smaller tool results) or use a model with a larger context`,
      false,
      cause
    )
  }
  if (status === 404) {
    return failure(
      "bad_request",
      `not found (${detail}); check the model name "${model}" (${p.env}_MODEL or the defaultModel option) and the ` +
        `base URL ${baseURL} ${p.baseUrlHint}`,
      false,
      cause
    )
  }
  return failure("bad_request", `${baseURL} rejected the request (${detail})`, false, cause)
}

/** The wait a server asks for: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date. */
export const retryAfterMs = (headers: Headers | undefined): number | undefined => {
  const ms = headers?.get("retry-after-ms")
  if (ms !== null && ms !== undefined && Number.isFinite(Number.parseFloat(ms))) return Math.max(0, Number.parseFloat(ms))
  const value = headers?.get("retry-after")
  if (value === null || value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

/** A server's `x-should-retry: true|false` header, which overrides whether a failure is retried (as the SDKs do). */
export const shouldRetry = (headers: Headers | undefined, otherwise: boolean): boolean => {
  const should = headers?.get("x-should-retry")
  return should === "true" ? true : should === "false" ? false : otherwise
}

// OpenAI's function names and Anthropic's tool names must both match ^[a-zA-Z0-9_-]{1,64}$; Artana's tool names may
// also hold dots (`fs.read`).
const WIRE_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/** Tool names as sent (`toWire`) and as the model answers them back (`fromWire`). */
export interface WireNames {
  readonly toWire: (name: string) => string
  readonly fromWire: (name: string) => string
}

/**
 * A reversible renaming of the request's tools to names a provider's API accepts: valid names stay as they are;
 * others get their invalid characters replaced by `_` (`fs.read` -> `fs_read`), with a numeric suffix if that
 * collides with another tool's name.
 */
export const wireNames = (names: ReadonlyArray<string>): WireNames => {
  const toWire = new Map<string, string>()
  const taken = new Set(names.filter((n) => WIRE_NAME.test(n)))
  for (const name of names) {
    if (WIRE_NAME.test(name)) {
      toWire.set(name, name)
      continue
    }
    const base = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 60) || "tool"
    let candidate = base
    for (let i = 2; taken.has(candidate); i++) candidate = `${base}_${i}`
    taken.add(candidate)
    toWire.set(name, candidate)
  }
  const fromWire = new Map([...toWire].map(([original, wire]) => [wire, original]))
  return { toWire: (name) => toWire.get(name) ?? name, fromWire: (name) => fromWire.get(name) ?? name }
}

/** Where an adapter connects: what its `layerConfig` reads from the environment. */
export interface Connection {
  readonly apiKey?: Redacted.Redacted<string> | undefined
  readonly baseURL?: string | undefined
  readonly defaultModel?: string | undefined
}

/** `<PREFIX>_API_KEY` (redacted), `<PREFIX>_BASE_URL` and `<PREFIX>_MODEL`, each optional. */
export const connectionFromEnv = (prefix: string): Config.Config<Connection> =>
  Config.all({
    apiKey: Config.option(Config.redacted(`${prefix}_API_KEY`)),
    baseURL: Config.option(Config.string(`${prefix}_BASE_URL`)),
    defaultModel: Config.option(Config.string(`${prefix}_MODEL`))
  }).pipe(Config.map((env) => ({
    apiKey: Option.getOrUndefined(env.apiKey),
    baseURL: Option.getOrUndefined(env.baseURL),
    defaultModel: Option.getOrUndefined(env.defaultModel)
  })))

// `Config.unwrap({})` throws in effect 3.22 (a struct of no fields), so no overrides is special-cased.
const unwrapOverrides = <O>(overrides: Config.Config.Wrap<O>): Config.Config<Partial<O>> =>
  Config.isConfig(overrides) || Object.keys(overrides).length > 0 ? Config.unwrap(overrides) : Config.succeed({})

/**
 * An adapter's options from configuration: the environment's connection (`connectionFromEnv(prefix)`), with
 * `overrides` on top. A key or a base URL is required (a local server may need no key); without either the config
 * fails with `missing`, naming `<PREFIX>_API_KEY`.
 */
export const optionsConfig = <O extends Connection>(
  prefix: string,
  missing: string,
  overrides: Config.Config.Wrap<O>
): Config.Config<Partial<O>> =>
  Config.all([connectionFromEnv(prefix), unwrapOverrides(overrides)]).pipe(
    Config.mapOrFail(([env, given]) => {
      const options = {
        ...given,
        apiKey: given.apiKey ?? env.apiKey,
        baseURL: given.baseURL ?? env.baseURL,
        defaultModel: given.defaultModel ?? env.defaultModel
      }
      return options.apiKey === undefined && options.baseURL === undefined
        ? Either.left(ConfigError.MissingData([`${prefix}_API_KEY`], missing))
        : Either.right(options)
    })
  )

/**
 * A streamed call on `ModelPort.streamTo`'s push path, for every adapter: `streamed(call, sink)` retries the request
 * until the server answers, then pumps each SDK event's deltas to the sink from a plain loop (see `internal/deltaPump`).
 */
export { type Call as StreamCall, opened, type Opened, streamed } from "./internal/deltaPump.js"
