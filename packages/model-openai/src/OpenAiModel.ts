/**
 * Artana's `ModelPort` over the official `openai` SDK (Chat Completions): OpenAI itself, or any
 * OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenRouter) by `baseURL`.
 *
 * @since 0.1.0
 */
import { type Chat, type Errors, ModelPort, ModelTransport, type Pricing } from "@artana/core"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { OpenAI } from "openai"
import { classify, provider } from "./internal/errors.js"
import { toParams } from "./internal/request.js"
import { accumulate, accumulator, check, deltasOf, fromCompletion, isChunk, isFailure, type Reply, toResponse } from "./internal/response.js"
import * as Sse from "./internal/sse.js"
import { fromResponse, type StreamFolder, streamFolder, toResponsesParams } from "./internal/responses.js"
import { countMessages } from "./internal/tokens.js"
import type { ChatCompletionChunk } from "openai/resources/chat/completions"

/** A streamed Chat Completions body's chunks, read by the adapter (`internal/sse.ts`), not by the SDK's `Stream`. */
const chunksOf = (response: Response, signal: AbortSignal) => Sse.events(response, signal, isChunk, "a chat completion chunk")

/** The reply a Responses stream folded into: its terminal event's response, or why there is none. */
const foldedReply = (folder: StreamFolder): Reply | ModelTransport.Failure => {
  const failed = folder.failure()
  if (failed !== undefined) return ModelTransport.failure("server_error", `the response failed: ${failed}`, true)
  const response = folder.response()
  return response === undefined
    ? ModelTransport.failure("server_error", "the stream ended before the response did", true)
    : fromResponse(response)
}

/** Options of the adapter. Every field is optional; see `layerConfig` for the environment variables. */
export interface Options {
  /** The API key; optional when `baseURL` points at a server that needs none (Ollama, vLLM, LM Studio). */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Default `https://api.openai.com/v1`; an OpenAI-compatible server's URL ends in `/v1` too. */
  readonly baseURL?: string | undefined
  readonly organization?: string | undefined
  /** The model used when a request names none. Default `gpt-4o-mini`. */
  readonly defaultModel?: string | undefined
  /** Total deadline of one attempt, from sending the request to the last byte of the answer. Default 60 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Retries of a retryable failure (rate limit, 5xx, connection, timeout, malformed tool call). Default 3. */
  readonly maxRetries?: number | undefined
  /** Delay before the first retry; each next one doubles, with ±20% jitter. Default 500 ms. */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /** Cap on any retry delay, including one a server asks for with `retry-after`. Default 30 seconds. */
  readonly retryMaxDelay?: Duration.DurationInput | undefined
  /** Stream the answer (SSE) and assemble it; the result is the same `ModelResponse`. Default false. */
  readonly stream?: boolean | undefined
  /**
   * The API spoken: `"chat"` (Chat Completions, `POST /chat/completions`, which every OpenAI-compatible server serves)
   * or `"responses"` (the Responses API, `POST /responses`, which OpenAI's newer models favour). Default `"chat"`.
   */
  readonly api?: "chat" | "responses" | undefined
  /**
   * Prices of models the built-in table (OpenAI's) does not know, such as a compatible server's local model
   * (`{ "llama3.2": Pricing.free }`): the kernel refuses a model it cannot price under a budget.
   */
  readonly prices?: Pricing.PriceTable | undefined
}

/** What `OpenAiClient` holds: the port, plus the SDK client for what the port does not cover. */
export interface Service extends ModelPort.Service {
  /** The SDK client (its own retries are off: the adapter retries, and logs every retry). */
  readonly client: OpenAI
  readonly baseURL: string
}

/**
 * The adapter's own service: the SDK client next to the port it implements.
 *
 * @example
 * const models = Effect.flatMap(OpenAiClient, ({ client }) => Effect.promise(() => client.models.list()))
 */
export class OpenAiClient extends Context.Tag("@artana/model-openai/OpenAiClient")<OpenAiClient, Service>() {}

const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/**
 * Builds the adapter. Nothing is read from the environment: the SDK's own lookups (`OPENAI_API_KEY`,
 * `OPENAI_BASE_URL`, `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`, `OPENAI_LOG`, ...) are overridden with the options given
 * here (the SDK still applies `OPENAI_CUSTOM_HEADERS`; nothing can turn that off).
 */
export const make = (options: Options = {}): Effect.Effect<Service> =>
  Effect.sync(() => {
    const baseURL = options.baseURL ?? DEFAULT_BASE_URL
    const defaultModel = options.defaultModel ?? "gpt-4o-mini"
    const timeoutMs = Duration.toMillis(options.timeout ?? Duration.seconds(60))
    const stream = options.stream ?? false
    const api = options.api ?? "chat"
    const policy = ModelTransport.retryPolicy("openai", options)
    const hasApiKey = options.apiKey !== undefined
    const client = new OpenAI({
      // The SDK insists on a key; a server that needs none gets no Authorization header at all.
      apiKey: hasApiKey ? Redacted.value(options.apiKey) : "unused",
      ...(hasApiKey ? {} : { defaultHeaders: { Authorization: null } }),
      adminAPIKey: null,
      baseURL,
      organization: options.organization ?? null,
      project: null,
      webhookSecret: null,
      logLevel: "warn",
      // The deadline is the adapter's (it also covers reading the body); the SDK's is a backstop.
      timeout: timeoutMs + 1_000,
      maxRetries: 0
    })

    /** One whole answer, in the configured API, streamed and folded when `stream` is on. */
    const wholeReply = async (request: ModelPort.ModelRequest, names: ModelTransport.WireNames, signal: AbortSignal): Promise<Reply | ModelTransport.Failure> => {
      if (api === "chat") {
        const params = toParams(request, names)
        return stream
          ? accumulate(chunksOf(await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }, { signal }).asResponse(), signal))
          : fromCompletion(await client.chat.completions.create({ ...params, stream: false }, { signal }))
      }
      const params = toResponsesParams(request, names)
      if (!stream) return fromResponse(await client.responses.create({ ...params, stream: false }, { signal }))
      const folder = streamFolder(names)
      for await (const event of await client.responses.create({ ...params, stream: true }, { signal })) folder.push(event)
      return foldedReply(folder)
    }

    /** The streamed call's events, opened: each event's deltas, and the reply once they ended. */
    const openStream = (request: ModelPort.ModelRequest, names: ModelTransport.WireNames, signal: AbortSignal) =>
      api === "chat"
        ? client.chat.completions.create({ ...toParams(request, names), stream: true, stream_options: { include_usage: true } }, { signal }).asResponse().then(
          (response) => {
            const acc = accumulator()
            const push = (chunk: ChatCompletionChunk) => {
              acc.push(chunk)
              return deltasOf(chunk).map((d) => (d._tag === "ToolCallDelta" && d.name !== undefined ? { ...d, name: names.fromWire(d.name) } : d))
            }
            return ModelTransport.opened(chunksOf(response, signal), push, () => acc.reply())
          }
        )
        : client.responses.create({ ...toResponsesParams(request, names), stream: true }, { signal }).then((events) => {
          const folder = streamFolder(names)
          return ModelTransport.opened(events, folder.push, () => foldedReply(folder))
        })

    /** The reply checked (refusal, content filter, malformed arguments), its tool calls named back. */
    const checkedReply = (reply: Reply, names: ReturnType<typeof ModelTransport.wireNames>): Effect.Effect<Reply, ModelTransport.Failure> => {
      const checked = check({ ...reply, toolCalls: reply.toolCalls.map((c) => ({ ...c, name: names.fromWire(c.name) })) })
      return isFailure(checked) ? Effect.fail<ModelTransport.Failure>(checked) : Effect.succeed(checked)
    }

    const generate = Effect.fn("OpenAiModel.generate")(function*(request: ModelPort.ModelRequest) {
      const endpoint = { provider, baseURL, model: request.model, hasApiKey, timeoutMs }
      if (!hasApiKey && options.baseURL === undefined) return yield* ModelTransport.missingKey(endpoint).error
      // Tool names the API refuses (`fs.read`) travel renamed, and the model's calls are renamed back.
      const names = ModelTransport.wireNames(request.tools.map((t) => t.name))
      // The SDK promise is wrapped once; the AbortSignal cancels the HTTP request when the fiber is interrupted
      // (by the deadline below, or by the caller).
      const call = Effect.tryPromise({
        try: (signal) => wholeReply(request, names, signal),
        catch: (e) => classify(e, endpoint)
      })
      const attempt = call.pipe(
        Effect.timeoutFail({
          duration: timeoutMs,
          onTimeout: () => ModelTransport.failure("timeout", `no complete answer from ${baseURL} within ${timeoutMs} ms`, true)
        }),
        Effect.flatMap((reply) => ("error" in reply ? Effect.fail(reply) : checkedReply(reply, names)))
      )
      const result = yield* Effect.mapError(ModelTransport.retrying(attempt, policy), (f) => f.error)
      const response = yield* toResponse(result.value, request, result.notes)
      // Replies refused and asked again were billed too: the usage the kernel charges is every attempt's.
      return result.billed === undefined ? response : { ...response, usage: ModelTransport.addUsage(response.usage, result.billed) }
    })

    /**
     * The streamed call, on the push path (`ModelTransport.streamed`, shared with every adapter): retried as `generate`
     * is until the server starts answering; from then on a plain loop hands each event's deltas to `sink` as it
     * arrives, and a failure ends the call. The reply is checked once the events ended.
     */
    const streamTo = (request: ModelPort.ModelRequest, sink: ModelPort.DeltaSink): Effect.Effect<ModelPort.ModelResponse, Errors.ModelError> =>
      Effect.suspend(() => {
        const endpoint = { provider, baseURL, model: request.model, hasApiKey, timeoutMs }
        if (!hasApiKey && options.baseURL === undefined) return ModelTransport.missingKey(endpoint).error
        const names = ModelTransport.wireNames(request.tools.map((t) => t.name))
        const call = { open: (signal: AbortSignal) => openStream(request, names, signal), classify: (e: unknown) => classify(e, endpoint), policy, timeoutMs, baseURL }
        return Effect.flatMap(ModelTransport.streamed(call, sink), ({ notes, value }) =>
          Effect.flatMap(Effect.mapError(checkedReply(value, names), (f) => f.error), (checked) => toResponse(checked, request, notes)))
      })

    const port = ModelPort.make({
      defaultModel,
      prices: options.prices,
      generate,
      streamTo: stream ? streamTo : undefined,
      countTokens: (messages: ReadonlyArray<Chat.ChatMessage>, model: string) => countMessages(messages, model)
    })
    return { ...port, client, baseURL }
  })

/**
 * A layer providing core's `ModelPort` and the adapter's `OpenAiClient`.
 *
 * @example
 * // A local Ollama server: no key needed.
 * const model = OpenAiModel.layer({ baseURL: "http://localhost:11434/v1", defaultModel: "llama3.2" })
 */
export const layer = (options: Options = {}): Layer.Layer<ModelPort.ModelPort | OpenAiClient> =>
  Layer.effectContext(
    Effect.map(make(options), (service) =>
      Context.make(OpenAiClient, service).pipe(Context.add(ModelPort.ModelPort, service)))
  )

/**
 * The environment's options: `OPENAI_API_KEY` (redacted), `OPENAI_BASE_URL`, `OPENAI_MODEL`. The key may be
 * missing only when a base URL is set (local servers need none).
 */
export const fromEnv: Config.Config<Options> = ModelTransport.connectionFromEnv("OPENAI")

/**
 * A layer whose options come from configuration: `fromEnv`, with `overrides` on top (plain values through
 * `Config.succeed`, or other variables).
 *
 * @example
 * const model = OpenAiModel.layerConfig({ stream: Config.succeed(true), timeout: Config.succeed("30 seconds") })
 */
export const layerConfig = (
  overrides: Config.Config.Wrap<Options> = {}
): Layer.Layer<ModelPort.ModelPort | OpenAiClient, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(
    ModelTransport.optionsConfig(
      "OPENAI",
      "OPENAI_API_KEY is required for api.openai.com; for a local OpenAI-compatible server set OPENAI_BASE_URL instead",
      overrides
    ),
    layer
  ))
