/**
 * What went wrong in one attempt, as a `ModelError` a person can act on, plus how long the server asked us to
 * wait before the next one.
 */
import { ModelTransport } from "@artana/core"
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai"

type Failure = ModelTransport.Failure

const { failure, retryAfterMs, shouldRetry } = ModelTransport

/** What the messages need to name the fix. */
export interface Context {
  readonly baseURL: string
  readonly model: string
  readonly hasApiKey: boolean
  readonly timeoutMs: number
}

const CONTEXT = /context[_ ]length|maximum context|context window|too many tokens/i

const isContextLength = (e: APIError): boolean => e.code === "context_length_exceeded" || CONTEXT.test(e.message)

/** Maps anything the SDK threw to a failure. */
export const classify = (e: unknown, ctx: Context): Failure => {
  if (e instanceof APIUserAbortError) return failure("unknown", "the request was aborted", false, e)
  if (e instanceof APIConnectionTimeoutError) {
    return failure("timeout", `no response from ${ctx.baseURL} within ${ctx.timeoutMs} ms`, true, e)
  }
  if (e instanceof APIConnectionError) {
    const detail = e.cause instanceof Error ? e.cause.message : e.message
    return failure(
      "connection",
      `could not reach ${ctx.baseURL} (${detail}); check OPENAI_BASE_URL (the baseURL option) and that the server is running`,
      true,
      e
    )
  }
  if (e instanceof APIError) return classifyStatus(e, ctx)
  const message = e instanceof Error ? e.message : String(e)
  return failure("unknown", `unexpected error from the OpenAI client: ${message}`, false, e)
}

const classifyStatus = (e: APIError, ctx: Context): Failure => {
  const failed = classifyByStatus(e, ctx)
  // The API may say outright whether a retry can help (the SDK obeys this header too).
  const retryable = shouldRetry(e.headers, failed.error.retryable)
  return retryable === failed.error.retryable ? failed : failure(failed.error.kind, failed.error.reason, retryable, e, failed.retryAfterMs)
}

const classifyByStatus = (e: APIError, ctx: Context): Failure => {
  const status = e.status
  const detail = e.message
  const after = retryAfterMs(e.headers)
  if (status === 401) {
    return failure(
      "authentication",
      ctx.hasApiKey
        ? `${ctx.baseURL} rejected the API key (${detail}); check OPENAI_API_KEY (or the apiKey option of OpenAiModel.layer)`
        : `${ctx.baseURL} requires an API key and none was configured (${detail}); set OPENAI_API_KEY (read by ` +
          `OpenAiModel.layerConfig) or pass apiKey to OpenAiModel.layer`,
      false,
      e
    )
  }
  if (status === 403) {
    return failure(
      "authentication",
      `the API key may not do this (${detail}); check that the key in OPENAI_API_KEY belongs to the right project ` +
        `and organization (the organization option) and has access to model "${ctx.model}"`,
      false,
      e
    )
  }
  if (status === 429) {
    if (e.code === "insufficient_quota") {
      return failure(
        "rate_limited",
        `the key's quota is exhausted (${detail}); add credit or raise the project's limit, retrying will not help`,
        false,
        e
      )
    }
    return failure("rate_limited", `rate limited by ${ctx.baseURL} (${detail})`, true, e, after)
  }
  if (status === 408) return failure("timeout", `${ctx.baseURL} timed out the request (${detail})`, true, e, after)
  if (status !== undefined && (status >= 500 || status === 409)) {
    return failure("server_error", `${ctx.baseURL} failed (${detail})`, true, e, after)
  }
  if (isContextLength(e)) {
    return failure(
      "context_length_exceeded",
      `the conversation does not fit the context window of model "${ctx.model}" (${detail}); compact the history ` +
        `(fewer or shorter messages, smaller tool results) or use a model with a larger context`,
      false,
      e
    )
  }
  if (status === 404) {
    return failure(
      "bad_request",
      `not found (${detail}); check the model name "${ctx.model}" (OPENAI_MODEL or the defaultModel option) and the ` +
        `base URL ${ctx.baseURL} (OpenAI-compatible servers serve the API under /v1)`,
      false,
      e
    )
  }
  if (status !== undefined) return failure("bad_request", `${ctx.baseURL} rejected the request (${detail})`, false, e)
  // No status: an error event inside a stream. The API only sends these for faults on its side.
  if (e.code === "rate_limit_exceeded") return failure("rate_limited", `rate limited mid-stream (${detail})`, true, e)
  return failure("server_error", `the stream from ${ctx.baseURL} reported an error (${detail})`, true, e)
}
