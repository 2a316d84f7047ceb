/**
 * The calls a workflow's code makes through its context: a model step over offered tools, a tool call the model
 * asked for, a typed tool call, and a chat (the chat loop over the first two).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
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
import * as Answered from "./answered.js"
import * as ChatLoop from "./chatLoop.js"
import type * as ModelStep from "./modelStep.js"
import type { StepEnv } from "./stepEnv.js"
import type { ToolOutcome } from "./toolHandler.js"
import type { ToolStep } from "./toolStep.js"

/** The tools a step offers. */
export interface Offer {
  /** The tools the model sees: those the tenant's capabilities allow. */
  readonly visible: ReadonlyMap<string, Tool>
  /** The names of `visible`. */
  readonly offered: ReadonlySet<string>
  /** The specs of `visible`, as a model request lists them. */
  readonly specs: ReadonlyArray<Tool["spec"]>
  /** Every tool given, so a call to one the tenant may not use is denied by name rather than unknown. */
  readonly all: ReadonlyMap<string, Tool>
  /** The tools resolved, in order: a step that resolves the same tools gets this offer again. */
  readonly resolved: ReadonlyArray<Tool>
}

/** Whether two lists hold the same tools (the same values) in the same order. */
const sameTools = (a: ReadonlyArray<Tool>, b: ReadonlyArray<Tool>): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * Whether `tools` resolve to `resolved`, in order (names looked up in `registry`, unknown names dropped), as `offerTools`
 * resolves them: an agent offers the same tools every turn, and this finds it so without building a list.
 */
const resolvesTo = (tools: ReadonlyArray<string | Tool>, resolved: ReadonlyArray<Tool>, registry: { readonly get: (name: string) => Tool | undefined }): boolean => {
  let n = 0
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i]!
    let tool = t
    if (typeof t === "string") {
      // An unknown name is dropped, as `offerTools` drops it; only a name.
      const found = registry.get(t)
      if (found === undefined) continue
      tool = found
    }
    if (n >= resolved.length || resolved[n] !== tool) return false
    n++
  }
  return n === resolved.length
}

/** The offer of the tools `resolved`, for the execution's tenant; two different tools of one name are a defect (thrown). */
const offerOf = (env: StepEnv, resolved: ReadonlyArray<Tool>): Offer => {
  const visible = new Map<string, Tool>()
  const all = new Map<string, Tool>()
  for (const t of resolved) {
    const named = all.get(t.name)
    // Two tools of one name: the model could call only one, and which would be chance (an app's tool and an MCP
    // server's, a registered one and a value). A bug in the workflow's code, as the registry's duplicate is.
    if (named !== undefined && named !== t) {
      throw new Error(`two different tools offered to one step are named "${t.name}"; a step's tool names must be unique (rename one, or offer one of them)`)
    }
    all.set(t.name, t)
    if (hasCapability(env.tenant, t.requiresCapability)) visible.set(t.name, t)
  }
  return { visible, offered: new Set(visible.keys()), specs: [...visible.values()].map((t) => t.spec), all, resolved }
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

  // The last offer made: an agent offers the same tools every turn, and a replay meets a turn per few events.
  let lastOffer: Offer | undefined

  /**
   * The tools a step offers: names resolved in the registry (unknown names dropped), values as given; two different
   * tools of one name are a defect (thrown: every caller calls it inside `Effect.suspend`). The same tools
   * as the last step's (resolved again, compared by value) get its offer: the tenant is the execution's.
   */
  const offerTools = (tools: ReadonlyArray<string | Tool> | undefined): Offer => {
    if (lastOffer !== undefined && tools !== undefined && resolvesTo(tools, lastOffer.resolved, deps.tools)) return lastOffer
    const resolved = tools === undefined
      ? deps.tools.list()
      : tools.flatMap((t) => {
        if (typeof t !== "string") return [t]
        const found = deps.tools.get(t)
        return found === undefined ? [] : [found]
      })
    if (lastOffer !== undefined && sameTools(lastOffer.resolved, resolved)) return lastOffer
    lastOffer = offerOf(env, resolved)
    return lastOffer
  }

  /** A model step, begun when called (inside an effect); a recorded one is answered at once (`answered.ts`). */
  const modelStep = <A, I>(opts: ModelStepOptions<A, I>, offer: Offer): Effect.Effect<ModelStepResult<A>, ModelStepError> => {
    const schema = opts.outputSchema
    return Answered.map(
      modelCall({
        model: opts.model ?? deps.model.defaultModel,
        messages: opts.messages,
        tools: offer.specs,
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
  }

  /** A call the model asked for, begun when called (inside an effect). */
  const toolCall = (call: ToolCall, offer: Offer, key: string | undefined): Effect.Effect<ToolCallOutcome> =>
    Answered.map(
      toolStep({ name: call.name, arguments: call.arguments, toolCallId: call.id, offered: offer.offered, value: offer.all.get(call.name), key }),
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
      return Answered.flatMap(toolStep({ name, arguments: text, key: opts?.key, value }), (outcome): Effect.Effect<Result, ToolCallError> => {
        if (!outcome.ok) return Effect.fail(outcome.error)
        if (value === undefined) return Effect.die("unreachable: an unknown tool cannot succeed")
        const decoded = value.decodeResult(outcome.json)
        return Either.isLeft(decoded) ? Effect.fail(decoded.left) : Exit.succeed(decoded.right as Result)
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
          Effect.suspend(() =>
            modelStep({ messages: [...messages], model: options.model, outputSchema: options.outputSchema, maxOutputTokens: options.maxOutputTokens }, offered)
          ),
        toolCalls: (step) =>
          Effect.forEach(step.toolCalls, (call) => Effect.suspend(() => Answered.map(toolCall(call, offered, undefined), (o) => push(o.message))), { discard: true })
      })
      return Effect.flatMap(loop, (end): Effect.Effect<ChatResult<A>, ChatError> =>
        end._tag === "GaveUp"
          ? Effect.fail(end.error)
          : Effect.succeed({ output: end.output, message: end.step.message, messages, usage: end.tally.usage, costUsd: end.tally.costUsd }))
    })

  return {
    chat,
    modelStep: <A, I>(opts: ModelStepOptions<A, I>) => Effect.suspend(() => modelStep(opts, offerTools(opts.tools))),
    toolCall: (call: ToolCall, opts?: { readonly tools?: ReadonlyArray<string | Tool> | undefined; readonly key?: string | undefined }) =>
      Effect.suspend(() => toolCall(call, offerTools(opts?.tools), opts?.key)),
    tool
  }
}
