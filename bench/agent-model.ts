// What the agent benchmarks share: a model that answers by a function of the request (built through the real
// ModelPort.make) and counts tokens with OpenAI's tokenizer (the `openai` adapter's `countTokens`, gpt-tokenizer),
// and the prompt-size measure the agent's compaction uses: the request's messages plus its tools' specs.
import { Effect } from "effect"
import { Chat, ModelPort } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"

export interface Answer {
  readonly content?: string | undefined
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> | undefined
}

/** The counting model: its tokenizer is gpt-tokenizer's, for `model` (o200k_base for gpt-4o-mini). */
export const makeModel = async (respond: (request: ModelPort.ModelRequest, n: number) => Answer) => {
  // The adapter is only used for counting: it never connects.
  const counter = await Effect.runPromise(OpenAiModel.make({ baseURL: "http://127.0.0.1:9/v1", defaultModel: "gpt-4o-mini" }))
  const requests: Array<ModelPort.ModelRequest> = []
  const port = ModelPort.make({
    defaultModel: "gpt-4o-mini",
    countTokens: (messages, model) => counter.countTokens(messages, model),
    generate: (request) =>
      Effect.sync(() => {
        const n = requests.length
        requests.push(request)
        const answer = respond(request, n)
        const toolCalls = (answer.toolCalls ?? []).map((c, i) => ({ id: `call_${n}_${i}`, name: c.name, arguments: JSON.stringify(c.arguments) }))
        return {
          model: request.model,
          message: toolCalls.length > 0 ? { role: "assistant" as const, content: null, toolCalls } : { role: "assistant" as const, content: answer.content ?? "" },
          usage: { inputTokens: 0, outputTokens: 0 }
        }
      })
  })
  /** Tokens of a request's prompt: its messages and its tools' specs, as the agent counts them. */
  const promptTokens = (request: ModelPort.ModelRequest) =>
    Effect.runPromise(port.countTokens([...request.messages, Chat.system(JSON.stringify(request.tools))], request.model))
  return { port, requests, promptTokens }
}
