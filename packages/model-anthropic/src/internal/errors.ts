/**
 * What went wrong in one attempt, as core's `ModelError` with a reason a person can act on. The HTTP statuses every
 * provider shares are core's `ModelTransport.httpFailure` (the OpenAI adapter's kinds and retry rules, so a fallback or
 * a caller treats both providers alike); what is Anthropic's own (402 billing, "prompt is too long", 413) is decided here.
 */
import { ModelTransport } from "@artana/core"
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "@anthropic-ai/sdk"

/** How the reasons name Anthropic's fixes. */
export const provider: ModelTransport.Provider = {
  name: "Anthropic",
  adapter: "AnthropicModel",
  env: "ANTHROPIC",
  host: "api.anthropic.com",
  keyScope: "workspace",
  baseUrlHint: "(without /v1: the SDK adds it)"
}

// Anthropic answers an oversized prompt with a 400 "prompt is too long: 201234 tokens > 200000 maximum".
const CONTEXT = /prompt is too long|context window|context[_ ]length|maximum context/i

/** Maps anything the SDK threw to a failure. */
export const classify = (e: unknown, endpoint: ModelTransport.Endpoint): ModelTransport.Failure => {
  if (e instanceof APIUserAbortError) return ModelTransport.failure("unknown", "the request was aborted", false, e)
  if (e instanceof APIConnectionTimeoutError) return ModelTransport.timedOut(endpoint, e)
  if (e instanceof APIConnectionError) {
    return ModelTransport.unreachable(endpoint, e.cause instanceof Error ? e.cause.message : e.message, e)
  }
  if (!(e instanceof APIError)) return ModelTransport.unexpected(endpoint, e)
  const detail = e.apiMessage ?? e.message
  if (e.status === undefined) return ModelTransport.failure("server_error", `${endpoint.baseURL} reported an error (${detail})`, true, e)
  return ModelTransport.httpFailure(endpoint, {
    status: e.status,
    detail,
    headers: e.headers,
    // 413: the request is larger than the API takes, which for a conversation means its context.
    contextLength: e.status === 413 || CONTEXT.test(detail),
    quotaExhausted: e.status === 402
  }, e)
}
