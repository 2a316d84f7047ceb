/**
 * What went wrong in one attempt, as a `ModelError` a person can act on, plus how long the server asked us to
 * wait before the next one. The HTTP statuses every provider shares are core's `ModelTransport.httpFailure`; what is
 * OpenAI's own (its quota code, its context-length code, error events inside a stream) is decided here.
 */
import { ModelTransport } from "@artana/core"
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai"

/** How the reasons name OpenAI's fixes. */
export const provider: ModelTransport.Provider = {
  name: "OpenAI",
  adapter: "OpenAiModel",
  env: "OPENAI",
  host: "api.openai.com",
  keyScope: "project and organization (the organization option)",
  baseUrlHint: "(OpenAI-compatible servers serve the API under /v1)"
}

const CONTEXT = /context[_ ]length|maximum context|context window|too many tokens/i

/** Maps anything the SDK threw to a failure. */
export const classify = (e: unknown, endpoint: ModelTransport.Endpoint): ModelTransport.Failure => {
  if (e instanceof APIUserAbortError) return ModelTransport.failure("unknown", "the request was aborted", false, e)
  if (e instanceof APIConnectionTimeoutError) return ModelTransport.timedOut(endpoint, e)
  if (e instanceof APIConnectionError) {
    return ModelTransport.unreachable(endpoint, e.cause instanceof Error ? e.cause.message : e.message, e)
  }
  if (!(e instanceof APIError)) return ModelTransport.unexpected(endpoint, e)
  if (e.status === undefined) {
    // No status: an error event inside a stream. The API only sends these for faults on its side.
    return e.code === "rate_limit_exceeded"
      ? ModelTransport.failure("rate_limited", `rate limited mid-stream (${e.message})`, true, e)
      : ModelTransport.failure("server_error", `the stream from ${endpoint.baseURL} reported an error (${e.message})`, true, e)
  }
  return ModelTransport.httpFailure(endpoint, {
    status: e.status,
    detail: e.message,
    headers: e.headers,
    contextLength: e.code === "context_length_exceeded" || CONTEXT.test(e.message),
    quotaExhausted: e.status === 429 && e.code === "insufficient_quota"
  }, e)
}
