import { Effect, type Scope } from "effect"
import { Chat, type ModelPort } from "@artana/core"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"

/** A request as the kernel would send it. */
export const request = (extra: Partial<ModelPort.ModelRequest> = {}): ModelPort.ModelRequest => ({
  model: "claude-haiku-4-5",
  messages: [Chat.system("Be brief."), Chat.user("Hi")],
  tools: [],
  ...extra
})

/**
 * A fake server playing `script` and the adapter pointed at it, with retry delays of a millisecond so retries do not
 * slow the suite. The server closes with the test's scope.
 */
export const setup = (
  script: ReadonlyArray<FakeAnthropic.Reply>,
  options: AnthropicModel.Options = {}
): Effect.Effect<{ readonly server: FakeAnthropic.Server; readonly model: AnthropicModel.Service }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const server = yield* FakeAnthropic.scoped(script)
    const model = yield* AnthropicModel.make({ baseURL: server.url, retryBaseDelay: "1 millis", ...options })
    return { server, model }
  })

/** The recorded body of request `i`, as an object. */
export const bodyOf = (server: FakeAnthropic.Server, i: number): Record<string, unknown> => {
  const body = server.requests[i]?.body
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error(`request ${i} has no JSON body`)
  return { ...body }
}
