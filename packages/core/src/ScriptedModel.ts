/**
 * A `ModelPort` that plays back a script of replies, for tests and offline examples. It is built through
 * the real `ModelPort.make`, counts its calls, and dies loudly when the script runs out or a reply's
 * expectation does not hold: a test can never pass on a conversation it did not script.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { ChatMessage, ToolCall, Usage } from "./Chat.js"
import type { ModelError } from "./Errors.js"
import * as ModelPort from "./ModelPort.js"
import * as Pricing from "./Pricing.js"

/** One scripted reply. */
export interface Reply {
  /** The answer's text (for structured output, JSON text: see `json`). */
  readonly content?: string | null | undefined
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments: unknown; readonly id?: string | undefined }> | undefined
  readonly usage?: Usage | undefined
  readonly costUsd?: number | undefined
  /** Fail the call with this error instead of answering. */
  readonly error?: ModelError | undefined
  /** Checks the request; returns a description of what is wrong, or undefined. */
  readonly expect?: ((request: ModelPort.ModelRequest) => string | undefined) | undefined
  /**
   * How a streamed call (`ModelPort.stream`) delivers the reply: in this many pieces of its text and of each tool
   * call's arguments (default 1), or in exactly these text pieces (they must spell `content`).
   */
  readonly deltas?: number | ReadonlyArray<string> | undefined
  /** Runs before the n-th delta (from 0) of a streamed call is emitted: a test holds a stream where it wants. */
  readonly beforeDelta?: ((n: number) => Effect.Effect<void>) | undefined
}

/** `text` in `count` pieces of about the same length (one piece for an empty text). */
export const pieces = (text: string, count: number): ReadonlyArray<string> => {
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, Math.floor(count))))
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

/** A reply whose content is `value` as JSON (structured output). */
export const json = (value: unknown, extra: Omit<Reply, "content"> = {}): Reply => ({ ...extra, content: JSON.stringify(value) })

/** A reply that calls one tool. */
export const toolCall = (name: string, args: unknown, extra: Omit<Reply, "toolCalls"> = {}): Reply => ({
  ...extra,
  content: extra.content ?? null,
  toolCalls: [{ name, arguments: args }]
})

/** A reply with a text answer. */
export const text = (content: string, extra: Omit<Reply, "content"> = {}): Reply => ({ ...extra, content })

export interface Service {
  /** How many times the model was called. */
  readonly calls: () => number
  /** Every request received, in order. */
  readonly requests: () => ReadonlyArray<ModelPort.ModelRequest>
  /** Replies not yet played. */
  readonly remaining: () => number
}

/** Inspects the scripted model of a test. */
export class ScriptedModel extends Context.Tag("@artana/core/ScriptedModel")<ScriptedModel, Service>() {}

const lastText = (messages: ReadonlyArray<ChatMessage>): string => {
  const last = messages[messages.length - 1]
  return last === undefined ? "(no messages)" : `${last.role}: ${(last.content ?? "").slice(0, 120)}`
}

export interface Options {
  /** The model requests name by default; "scripted" when absent. */
  readonly model?: string | undefined
  /**
   * Prices of the models it answers for (see `Pricing`). Default: the model "scripted" is free; any other name is
   * priced as the kernel would price it (the built-in table), or refused under a budget.
   */
  readonly prices?: Pricing.PriceTable | undefined
}

/** The deltas a scripted reply streams: its text, then each tool call, in the pieces `deltas` asks for. */
const deltasOf = (reply: Reply, response: ModelPort.ModelResponse): ReadonlyArray<ModelPort.ModelDelta> => {
  const text = response.message.content ?? ""
  const given = reply.deltas
  let textPieces: ReadonlyArray<string>
  if (typeof given === "object") {
    if (given.join("") !== text) throw new Error(`ScriptedModel: the reply's deltas spell ${JSON.stringify(given.join(""))}, not its content ${JSON.stringify(text)}`)
    textPieces = given
  } else textPieces = pieces(text, given ?? 1)
  const count = typeof given === "number" ? given : 1
  const out: Array<ModelPort.ModelDelta> = textPieces.filter((p) => p.length > 0).map((text) => ({ _tag: "TextDelta", text }))
  ;(response.message.toolCalls ?? []).forEach((call, index) => {
    const args = pieces(call.arguments, count)
    out.push({ _tag: "ToolCallDelta", index, id: call.id, name: call.name, arguments: args[0] ?? "" })
    for (const piece of args.slice(1)) out.push({ _tag: "ToolCallDelta", index, arguments: piece })
  })
  return out
}

/** Builds a scripted model: the port and its inspector. */
export const make = (script: ReadonlyArray<Reply>, options: Options = {}) => {
  const requests: Array<ModelPort.ModelRequest> = []
  let next = 0
  const play = (request: ModelPort.ModelRequest): Effect.Effect<{ readonly reply: Reply; readonly response: ModelPort.ModelResponse }, ModelError> =>
      Effect.suspend(() => {
        requests.push(request)
        const reply = script[next]
        if (reply === undefined) {
          return Effect.die(new Error(
            `ScriptedModel: the script has ${script.length} replies but call ${next + 1} was made (last message: ${lastText(request.messages)})`
          ))
        }
        next++
        const problem = reply.expect?.(request)
        if (problem !== undefined) {
          return Effect.die(new Error(`ScriptedModel: call ${next} does not match the script: ${problem}`))
        }
        if (reply.error !== undefined) return Effect.fail(reply.error)
        const toolCalls: Array<ToolCall> = (reply.toolCalls ?? []).map((c, i) => ({
          id: c.id ?? `call_${next}_${i}`,
          name: c.name,
          arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments)
        }))
        return Effect.succeed({
          reply,
          response: {
            model: request.model,
            message: toolCalls.length > 0
              ? { role: "assistant" as const, content: reply.content ?? null, toolCalls }
              : { role: "assistant" as const, content: reply.content ?? "" },
            usage: reply.usage ?? { inputTokens: ModelPort.approximateTokens(request.messages), outputTokens: 10 },
            costUsd: reply.costUsd
          }
        })
      })
  const port = ModelPort.make({
    defaultModel: options.model ?? "scripted",
    prices: options.prices ?? { scripted: Pricing.free },
    generate: (request) => Effect.map(play(request), ({ response }) => response),
    stream: (request) =>
      Stream.unwrap(Effect.map(play(request), ({ reply, response }): Stream.Stream<ModelPort.StreamPart> => {
        const deltas = deltasOf(reply, response)
        const parts: Array<ModelPort.StreamPart> = [...deltas, { _tag: "Finished", response }]
        const pace = reply.beforeDelta
        return pace === undefined
          ? Stream.fromIterable(parts)
          : Stream.mapEffect(Stream.fromIterable(parts.map((part, n) => [part, n] as const)), ([part, n]): Effect.Effect<ModelPort.StreamPart> =>
            part._tag === "Finished" ? Effect.succeed(part) : Effect.as(pace(n), part))
      }))
  })
  const inspector: Service = { calls: () => requests.length, requests: () => requests, remaining: () => script.length - next }
  return { port, inspector }
}

/** A layer providing `ModelPort` and `ScriptedModel` (the inspector). */
export const layer = (script: ReadonlyArray<Reply>, options: Options = {}): Layer.Layer<ModelPort.ModelPort | ScriptedModel> =>
  Layer.unwrapEffect(Effect.sync(() => {
    const { inspector, port } = make(script, options)
    return Layer.merge(Layer.succeed(ModelPort.ModelPort, port), Layer.succeed(ScriptedModel, inspector))
  }))
