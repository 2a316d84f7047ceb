/**
 * Artana's `ModelPort` over the official `@anthropic-ai/sdk` (Messages API): Claude models, tool use, structured
 * output through an answer tool, usage with cache tokens, priced by core's `Pricing` with this package's table.
 *
 * @since 0.1.0
 */
import { type Errors, ModelPort, ModelTransport, type Pricing } from "@artana/core"
import Anthropic from "@anthropic-ai/sdk"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { classify, provider } from "./internal/errors.js"
import { answerTool, toParams } from "./internal/request.js"
import { isFailure, toResponse } from "./internal/response.js"
import { accumulator } from "./internal/stream.js"

/** Options of the adapter. Every field is optional; see `layerConfig` for the environment variables. */
export interface Options {
  /** The API key; optional when `baseURL` points at a server that needs none (a local Anthropic-compatible server). */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Default `https://api.anthropic.com` (without `/v1`: the SDK adds it). */
  readonly baseURL?: string | undefined
  /** The model used when a request names none. Default `claude-haiku-4-5` (priced by the table below, and not on the SDK's list of deprecated models: `claude-sonnet-4-5` reaches its end of life on 2026-11-30). */
  readonly defaultModel?: string | undefined
  /**
   * `max_tokens` of a request that sets no `maxOutputTokens` (the API requires one). Under a budget the kernel always
   * sets it (to the output its estimate assumed), so this applies only to free or unbudgeted calls. Default 4096.
   */
  readonly maxTokens?: number | undefined
  /** Total deadline of one attempt, from sending the request to the last byte of the answer. Default 60 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Retries of a retryable failure (rate limit, overloaded, 5xx, connection, timeout). Default 3. */
  readonly maxRetries?: number | undefined
  /** Delay before the first retry; each next one doubles, with ±20% jitter. Default 500 ms. */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /** Cap on any retry delay, including one a server asks for with `retry-after`. Default 30 seconds. */
  readonly retryMaxDelay?: Duration.DurationInput | undefined
  /**
   * Prices that win over this package's table (`AnthropicModel.prices`), for a model it does not know or a negotiated
   * rate. The deployment's own `prices` (kernel options) win over both.
   */
  readonly prices?: Pricing.PriceTable | undefined
  /**
   * Stream the answer (Messages API server-sent events): text and tool-input deltas go to the kernel's live readers as
   * they come, and the reply is the same `ModelResponse`. Default false.
   */
  readonly stream?: boolean | undefined
}

/**
 * Claude's prices in USD per million tokens (input, cache read, output), from Anthropic's public price list. A dated
 * snapshot (`claude-sonnet-4-5-20250929`) is priced as its family. Cache writes are priced as input (see the README).
 */
export const prices: Pricing.PriceTable = {
  "claude-opus-4-5": { input: 5, cachedInput: 0.5, output: 25 },
  "claude-opus-4-1": { input: 15, cachedInput: 1.5, output: 75 },
  "claude-opus-4-0": { input: 15, cachedInput: 1.5, output: 75 },
  "claude-opus-4": { input: 15, cachedInput: 1.5, output: 75 },
  "claude-sonnet-4-5": { input: 3, cachedInput: 0.3, output: 15 },
  "claude-sonnet-4-0": { input: 3, cachedInput: 0.3, output: 15 },
  "claude-sonnet-4": { input: 3, cachedInput: 0.3, output: 15 },
  "claude-3-7-sonnet": { input: 3, cachedInput: 0.3, output: 15 },
  "claude-3-7-sonnet-latest": { input: 3, cachedInput: 0.3, output: 15 },
  "claude-haiku-4-5": { input: 1, cachedInput: 0.1, output: 5 },
  "claude-3-5-haiku": { input: 0.8, cachedInput: 0.08, output: 4 },
  "claude-3-5-haiku-latest": { input: 0.8, cachedInput: 0.08, output: 4 },
  "claude-3-haiku": { input: 0.25, cachedInput: 0.03, output: 1.25 }
}

/** What `AnthropicClient` holds: the port, plus the SDK client for what the port does not cover. */
export interface Service extends ModelPort.Service {
  /** The SDK client (its own retries are off: the adapter retries, and logs every retry). */
  readonly client: Anthropic
  readonly baseURL: string
}

/**
 * The adapter's own service: the SDK client next to the port it implements.
 *
 * @example
 * const models = Effect.flatMap(AnthropicClient, ({ client }) => Effect.promise(() => client.models.list()))
 */
export class AnthropicClient extends Context.Tag("@artana/model-anthropic/AnthropicClient")<AnthropicClient, Service>() {}

const DEFAULT_BASE_URL = "https://api.anthropic.com"

/**
 * Builds the adapter. Nothing is read from the environment: the SDK's own lookups (`ANTHROPIC_API_KEY`,
 * `ANTHROPIC_AUTH_TOKEN`, `ANTHROPIC_BASE_URL`, profiles on disk, `ANTHROPIC_LOG`) are overridden with the options
 * given here (the SDK still applies `ANTHROPIC_CUSTOM_HEADERS`; nothing can turn that off).
 */
export const make = (options: Options = {}): Effect.Effect<Service> =>
  Effect.sync(() => {
    const baseURL = options.baseURL ?? DEFAULT_BASE_URL
    const defaultModel = options.defaultModel ?? "claude-haiku-4-5"
    const maxTokens = options.maxTokens ?? 4096
    const timeoutMs = Duration.toMillis(options.timeout ?? Duration.seconds(60))
    const policy = ModelTransport.retryPolicy("anthropic", options)
    const hasApiKey = options.apiKey !== undefined
    const client = new Anthropic({
      // A key passed in code keeps the SDK from looking for credentials; a server that needs none gets no
      // Authorization header at all.
      apiKey: hasApiKey ? Redacted.value(options.apiKey) : "unused",
      ...(hasApiKey ? {} : { defaultHeaders: { Authorization: null, "x-api-key": null } }),
      webhookKey: null,
      baseURL,
      logLevel: "warn",
      openTelemetry: false,
      // The deadline is the adapter's (it also covers reading the body); the SDK's is a backstop.
      timeout: timeoutMs + 1_000,
      maxRetries: 0
    })

    const generate = Effect.fn("AnthropicModel.generate")(function*(request: ModelPort.ModelRequest) {
      const endpoint = { provider, baseURL, model: request.model, hasApiKey, timeoutMs }
      if (!hasApiKey && options.baseURL === undefined) return yield* ModelTransport.missingKey(endpoint).error
      // Tool names the API refuses (`fs.read`) travel renamed, and the model's calls are renamed back.
      const names = ModelTransport.wireNames(request.tools.map((t) => t.name))
      const answer = answerTool(request, names)
      const params = toParams(request, names, answer, maxTokens)
      // The SDK promise is wrapped once; the AbortSignal cancels the HTTP request when the fiber is interrupted
      // (by the deadline below, or by the caller).
      const attempt = Effect.tryPromise({
        try: (signal) => client.messages.create(params, { signal }),
        catch: (e) => classify(e, endpoint)
      }).pipe(
        Effect.timeoutFail({
          duration: timeoutMs,
          onTimeout: () => ModelTransport.failure("timeout", `no complete answer from ${baseURL} within ${timeoutMs} ms`, true)
        })
      )
      const result = yield* Effect.mapError(ModelTransport.retrying(attempt, policy), (f) => f.error)
      const response = toResponse(result.value, request, names, answer, result.notes)
      return isFailure(response) ? yield* response.error : response
    })

    /**
     * The streamed call, on the push path (`ModelTransport.streamed`, shared with every adapter): retried as `generate`
     * is until the server starts answering; from then on a plain loop hands each event's deltas to `sink` as it
     * arrives, and a failure ends the call (its deltas are out: a retry would show them twice). The deadline is then
     * between events: a server that goes quiet for `timeout` fails it.
     */
    const streamTo = (request: ModelPort.ModelRequest, sink: ModelPort.DeltaSink): Effect.Effect<ModelPort.ModelResponse, Errors.ModelError> =>
      Effect.suspend(() => {
        const endpoint = { provider, baseURL, model: request.model, hasApiKey, timeoutMs }
        if (!hasApiKey && options.baseURL === undefined) return ModelTransport.missingKey(endpoint).error
        const names = ModelTransport.wireNames(request.tools.map((t) => t.name))
        const answer = answerTool(request, names)
        const params = toParams(request, names, answer, maxTokens)
        const open = (signal: AbortSignal) =>
          client.messages.create({ ...params, stream: true }, { signal }).then((events) => {
            const acc = accumulator(names, answer)
            return ModelTransport.opened(events, acc.push, acc.message)
          })
        const call = { open, classify: (e: unknown) => classify(e, endpoint), policy, timeoutMs, baseURL }
        return Effect.flatMap(ModelTransport.streamed(call, sink), ({ notes, value }) => {
          const response = toResponse(value, request, names, answer, notes)
          return isFailure(response) ? Effect.fail(response.error) : Effect.succeed(response)
        })
      })

    const port = ModelPort.make({
      defaultModel,
      prices: { ...prices, ...options.prices },
      generate,
      streamTo: options.stream === true ? streamTo : undefined
    })
    return { ...port, client, baseURL }
  })

/**
 * A layer providing core's `ModelPort` and the adapter's `AnthropicClient`.
 *
 * @example
 * const model = AnthropicModel.layer({ apiKey: Redacted.make(key), defaultModel: "claude-haiku-4-5" })
 */
export const layer = (options: Options = {}): Layer.Layer<ModelPort.ModelPort | AnthropicClient> =>
  Layer.effectContext(
    Effect.map(make(options), (service) =>
      Context.make(AnthropicClient, service).pipe(Context.add(ModelPort.ModelPort, service)))
  )

/**
 * The environment's options: `ANTHROPIC_API_KEY` (redacted), `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`. The key may be
 * missing only when a base URL is set (a local server may need none).
 */
export const fromEnv: Config.Config<Options> = ModelTransport.connectionFromEnv("ANTHROPIC")

/**
 * A layer whose options come from configuration: `fromEnv`, with `overrides` on top (plain values through
 * `Config.succeed`, or other variables).
 *
 * @example
 * const model = AnthropicModel.layerConfig({ maxTokens: Config.succeed(8192), timeout: Config.succeed("2 minutes") })
 */
export const layerConfig = (
  overrides: Config.Config.Wrap<Options> = {}
): Layer.Layer<ModelPort.ModelPort | AnthropicClient, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(
    ModelTransport.optionsConfig(
      "ANTHROPIC",
      "ANTHROPIC_API_KEY is required for api.anthropic.com; for a local Anthropic-compatible server set ANTHROPIC_BASE_URL instead",
      overrides
    ),
    layer
  ))
