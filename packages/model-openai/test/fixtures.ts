import { Effect } from "effect"
import { Chat, type ModelPort } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"

/** A request as the kernel would send it. */
export const request = (extra: Partial<ModelPort.ModelRequest> = {}): ModelPort.ModelRequest => ({
  model: "gpt-4o-mini",
  messages: [Chat.system("Be brief."), Chat.user("Hi")],
  tools: [],
  ...extra
})

/**
 * A fake server playing `script` and the adapter pointed at it, with retry delays of a millisecond so retries do not
 * slow the suite. The server closes with the test's scope.
 */
export const setup = (script: ReadonlyArray<FakeOpenAi.Reply>, options: OpenAiModel.Options = {}) =>
  Effect.gen(function*() {
    const server = yield* FakeOpenAi.scoped(script)
    const model = yield* OpenAiModel.make({ baseURL: server.url, retryBaseDelay: "1 millis", ...options })
    return { server, model }
  })

/** The recorded body of request `i`, as an object. */
export const bodyOf = (server: FakeOpenAi.Server, i: number): Record<string, unknown> => {
  const body = server.requests[i]?.body
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error(`request ${i} has no JSON body`)
  return { ...body }
}
