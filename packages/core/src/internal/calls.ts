/**
 * The calls a workflow's code makes through its context: a model step over offered tools, a tool call the model
 * asked for, a typed tool call, and a chat (the chat loop over the first two).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { ChatMessage, ToolCall, ToolMessage } from "../Chat.js"
import * as Json from "../Json.js"
import { hasCapability } from "../Tenant.js"
import { firstIssue, jsonSchemaOf, type Tool } from "../Tool.js"
import {
  type ChatError,
  type ChatOptions,
  type ChatResult,
  conversation,
  type ModelStepError,
  type ModelStepOptions,
  type ModelStepResult,
  type ToolCallError,
  type ToolCallOutcome
} from "../Workflow.js"
import * as ChatLoop from "./chatLoop.js"
import type * as ModelStep from "./modelStep.js"
import type { StepEnv } from "./stepEnv.js"
import type { ToolOutcome } from "./toolHandler.js"
import type { ToolStep } from "./toolStep.js"

/** The tools a step offers. */
export interface Offer {
  /** The tools the model sees: those the tenant's capabilities allow. */
  readonly visible: ReadonlyMap<string, Tool>
  /** Every tool given, so a call to one the tenant may not use is denied by name rather than unknown. */
  readonly all: ReadonlyMap<string, Tool>
}

const decodeAnswer = <A, I>(schema: Schema.Schema<A, I>, text: string): Either.Either<A, string> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return Either.left(`the answer is not JSON: ${text.slice(0, 80)}`)
  }
  return Either.mapLeft(Schema.decodeUnknownEither(schema)(parsed), (e) => {
    const issue = firstIssue(e)
    return `${issue.path}: ${issue.reason}`
  })
}

const toolMessage = (id: string, name: string, outcome: ToolOutcome): ToolMessage => ({
  role: "tool",
  toolCallId: id,
  name,
  content: outcome.ok
    ? (typeof outcome.json === "string" ? outcome.json : JSON.stringify(outcome.json))
    : JSON.stringify({ error: outcome.error._tag, message: outcome.error.message })
})

export const make = (env: StepEnv, modelCall: ReturnType<typeof ModelStep.make>, toolStep: ToolStep) => {
  const { deps } = env

  /** The tools a step offers: names resolved in the registry (unknown names dropped), values as given. */
  const offerTools = (tools: ReadonlyArray<string | Tool> | undefined): Offer => {
    const visible = new Map<string, Tool>()
    const all = new Map<string, Tool>()
    const resolved = tools === undefined
      ? deps.tools.list()
      : tools.flatMap((t) => {
        if (typeof t !== "string") return [t]
        const found = deps.tools.get(t)
        return found === undefined ? [] : [found]
      })
    for (const t of resolved) {
      all.set(t.name, t)
      if (hasCapability(env.tenant, t.requiresCapability)) visible.set(t.name, t)
    }
    return { visible, all }
  }

  const modelStep = <A, I>(opts: ModelStepOptions<A, I>, offer: Offer): Effect.Effect<ModelStepResult<A>, ModelStepError> =>
    Effect.suspend(() => {
      const schema = opts.outputSchema
      return Effect.map(
        modelCall({
          model: opts.model ?? deps.model.defaultModel,
          messages: opts.messages,
          tools: [...offer.visible.values()].map((t) => t.spec),
          outputFormat: schema === undefined ? undefined : { name: "output", schema: jsonSchemaOf(schema) },
          maxOutputTokens: opts.maxOutputTokens
        }, opts.key),
        (step): ModelStepResult<A> => {
          const toolCalls = step.message.toolCalls ?? []
          const text = step.message.content ?? ""
          const answer = toolCalls.length > 0 ? undefined : schema === undefined ? Either.right(text as A) : decodeAnswer(schema, text)
          return { message: step.message, toolCalls, answer, usage: step.usage, costUsd: step.costUsd }
        }
      )
    })

  const toolCall = (call: ToolCall, offer: Offer, key: string | undefined): Effect.Effect<ToolCallOutcome> =>
    Effect.map(
      toolStep({ name: call.name, arguments: call.arguments, toolCallId: call.id, offered: new Set(offer.visible.keys()), value: offer.all.get(call.name), key }),
      (outcome): ToolCallOutcome => ({
        message: toolMessage(call.id, call.name, outcome),
        result: outcome.ok ? Either.right(outcome.json) : Either.left(outcome.error)
      })
    )

  /** A call from code: typed arguments encoded by the tool's schema, the result decoded by it. */
  const tool = <Args, Result>(tool: Tool<Args, Result> | string, args: Args, opts?: { readonly key?: string | undefined }) =>
    Effect.suspend(() => {
      const value: Tool<Args, Result> | Tool | undefined = typeof tool === "string" ? deps.tools.get(tool) : tool
      const name = typeof tool === "string" ? tool : tool.name
      let text: string
      if (value === undefined) {
        const r = Json.fromUnknown(args)
        text = r.ok ? JSON.stringify(r.json) : "null"
      } else {
        const encoded = value.encodeArguments(args)
        if (Either.isLeft(encoded)) {
          // Arguments the schema refuses (an unknown property) go to the log as given, where decoding refuses them
          // as invalid arguments, logged like a model's; only arguments that are not even JSON fail here.
          const r = Json.fromUnknown(args)
          if (!r.ok) return Effect.fail(encoded.left)
          text = JSON.stringify(r.json)
        } else text = encoded.right
      }
      return Effect.flatMap(toolStep({ name, arguments: text, key: opts?.key, value }), (outcome): Effect.Effect<Result, ToolCallError> => {
        if (!outcome.ok) return Effect.fail(outcome.error)
        if (value === undefined) return Effect.die("unreachable: an unknown tool cannot succeed")
        const decoded = value.decodeResult(outcome.json)
        return Either.isLeft(decoded) ? Effect.fail(decoded.left) : Effect.succeed(decoded.right as Result)
      })
    })

  const chat = <A, I>(options: ChatOptions<A, I>): Effect.Effect<ChatResult<A>, ChatError> =>
    Effect.suspend(() => {
      const offered = offerTools(options.tools)
      const messages: Array<ChatMessage> = [...conversation(options)]
      // A bug in the workflow's code, as a step without a name is: nothing to send.
      if (messages.length === 0) return Effect.die(new Error("ctx.chat needs a prompt, messages, or both"))
      const push = (message: ChatMessage) => void messages.push(message)
      const loop = ChatLoop.run({
        maxTurns: options.maxTurns ?? 10,
        maxDecodeRetries: options.maxDecodeRetries ?? 2,
        push,
        modelStep: () =>
          modelStep({ messages: [...messages], model: options.model, outputSchema: options.outputSchema, maxOutputTokens: options.maxOutputTokens }, offered),
        toolCalls: (step) => Effect.forEach(step.toolCalls, (call) => Effect.map(toolCall(call, offered, undefined), (o) => push(o.message)), { discard: true })
      })
      return Effect.flatMap(loop, (end): Effect.Effect<ChatResult<A>, ChatError> =>
        end._tag === "GaveUp"
          ? Effect.fail(end.error)
          : Effect.succeed({ output: end.output, message: end.step.message, messages, usage: end.tally.usage, costUsd: end.tally.costUsd }))
    })

  return {
    chat,
    modelStep: <A, I>(opts: ModelStepOptions<A, I>) => modelStep(opts, offerTools(opts.tools)),
    toolCall: (call: ToolCall, opts?: { readonly tools?: ReadonlyArray<string | Tool> | undefined; readonly key?: string | undefined }) =>
      toolCall(call, offerTools(opts?.tools), opts?.key),
    tool
  }
}
