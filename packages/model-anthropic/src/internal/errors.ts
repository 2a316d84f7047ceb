/**
 * What went wrong in one attempt, as core's `ModelError` with a reason a person can act on (the kinds, and what is
 * retried, are the OpenAI adapter's, so a fallback or a caller treats both providers alike).
 */
import { ModelTransport } from "@artana/core"
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "@anthropic-ai/sdk"

const { failure, retryAfterMs, shouldRetry } = ModelTransport

/** What the messages need to name the fix. */
export interface Context {
  readonly baseURL: string
  readonly model: string
  readonly hasApiKey: boolean
  readonly timeoutMs: number
}

// Anthropic answers an oversized prompt with a 400 "prompt is too long: 201234 tokens > 200000 maximum".
const CONTEXT = /prompt is too long|context window|context[_ ]length|maximum context/i

/** Maps anything the SDK threw to a failure. */
export const classify = (e: unknown, ctx: Context): ModelTransport.Failure => {
  if (e instanceof APIUserAbortError) return failure("unknown", "the request was aborted", false, e)
  if (e instanceof APIConnectionTimeoutError) {
    return failure("timeout", `no response from ${ctx.baseURL} within ${ctx.timeoutMs} ms`, true, e)
  }
  if (e instanceof APIConnectionError) {
    const detail = e.cause instanceof Error ? e.cause.message : e.message
    return failure(
      "connection",
      `could not reach ${ctx.baseURL} (${detail}); check ANTHROPIC_BASE_URL (the baseURL option) and that the server is running`,
      true,
      e
    )
  }
  if (e instanceof APIError) {
    const failed = byStatus(e, ctx)
    const retryable = shouldRetry(e.headers, failed.error.retryable)
    return retryable === failed.error.retryable
      ? failed
      : failure(failed.error.kind, failed.error.reason, retryable, e, failed.retryAfterMs)
  }
  const message = e instanceof Error ? e.message : String(e)
  return failure("unknown", `unexpected error from the Anthropic client: ${message}`, false, e)
}

const byStatus = (e: APIError, ctx: Context): ModelTransport.Failure => {
  const status = e.status
  const detail = e.apiMessage ?? e.message
  const after = retryAfterMs(e.headers)
  if (status === 401) {
    return failure(
      "authentication",
      ctx.hasApiKey
        ? `${ctx.baseURL} rejected the API key (${detail}); check ANTHROPIC_API_KEY (or the apiKey option of AnthropicModel.layer)`
        : `${ctx.baseURL} requires an API key and none was configured (${detail}); set ANTHROPIC_API_KEY (read by ` +
          `AnthropicModel.layerConfig) or pass apiKey to AnthropicModel.layer`,
      false,
      e
    )
  }
  if (status === 403) {
    return failure(
      "authentication",
      `the API key may not do this (${detail}); check that the key in ANTHROPIC_API_KEY belongs to the right workspace ` +
        `and has access to model "${ctx.model}"`,
      false,
      e
    )
  }
  if (status === 402) {
    return failure(
      "rate_limited",
      `the organization cannot be billed (${detail}); add credit in the Anthropic console, retrying will not help`,
      false,
      e
    )
  }
  if (status === 429) return failure("rate_limited", `rate limited by ${ctx.baseURL} (${detail})`, true, e, after)
  if (status === 408) return failure("timeout", `${ctx.baseURL} timed out the request (${detail})`, true, e, after)
  // 529 is Anthropic's "overloaded"; 409 a conflict a retry resolves.
  if (status !== undefined && (status >= 500 || status === 409)) {
    return failure("server_error", `${ctx.baseURL} failed (${detail})`, true, e, after)
  }
  if (CONTEXT.test(detail) || status === 413) {
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
      `not found (${detail}); check the model name "${ctx.model}" (ANTHROPIC_MODEL or the defaultModel option) and the ` +
        `base URL ${ctx.baseURL} (without /v1: the SDK adds it)`,
      false,
      e
    )
  }
  if (status !== undefined) return failure("bad_request", `${ctx.baseURL} rejected the request (${detail})`, false, e)
  return failure("server_error", `${ctx.baseURL} reported an error (${detail})`, true, e)
}
