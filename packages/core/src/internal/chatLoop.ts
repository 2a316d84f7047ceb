/**
 * The chat loop: one model step a turn; the tool calls it asks for run, and the next turn sees their results; an
 * answer that does not decode is asked for again, up to a number of times. The caller builds each turn's prompt
 * and runs the tool calls, so the same loop serves `ctx.chat` and an agent (which renders sections and compacts).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { ChatMessage, Usage } from "../Chat.js"
import * as Errors from "../Errors.js"
import type { ModelStepResult } from "../Workflow.js"

/** Usage and cost added up over steps. */
export interface Tally {
  readonly usage: { inputTokens: number; outputTokens: number; cachedInputTokens: number }
  costUsd: number
}

export const tally = (): Tally => ({ usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 }, costUsd: 0 })

/** Adds a step's usage and cost to `t`. */
export const account = (t: Tally, step: { readonly usage: Usage; readonly costUsd: number }): void => {
  t.usage.inputTokens += step.usage.inputTokens
  t.usage.outputTokens += step.usage.outputTokens
  t.usage.cachedInputTokens += step.usage.cachedInputTokens ?? 0
  t.costUsd += step.costUsd
}

/** What the model is told after an answer that did not decode. */
export const decodeRetryMessage = (reason: string): ChatMessage => ({
  role: "user",
  content: `Your answer did not match the required JSON schema: ${reason}. Answer again with JSON only.`
})

export interface LoopOptions<A, E> {
  /** The number the last turn may have, plus one: turns are numbered from `firstTurn` and stop before `maxTurns`. */
  readonly maxTurns: number
  /**
   * The first turn's number (default 0). A loop that goes on from an earlier one (an agent's run continued as new)
   * passes the turns taken before it: its turns, their keys and `maxTurns` then count over the whole chain.
   */
  readonly firstTurn?: number | undefined
  /** Answers that did not decode, asked for again before the loop gives up. */
  readonly maxDecodeRetries: number
  /** The turn's model step (the caller builds its prompt). */
  readonly modelStep: (turn: number) => Effect.Effect<ModelStepResult<A>, E>
  /** Runs the tool calls a step asked for, adding their messages to the conversation. */
  readonly toolCalls: (step: ModelStepResult<A>, turn: number) => Effect.Effect<void, E>
  /** Adds a message to the conversation: each step's answer, and the request to answer again. */
  readonly push: (message: ChatMessage) => void
  /** Where usage and cost are added up (a caller may add other steps' too); a new one when absent. */
  readonly tally?: Tally | undefined
}

/** How the loop ended: an answer that decodes, or it gave up; `turns` is the number the next turn would have had. */
export type LoopEnd<A> =
  | { readonly _tag: "Answered"; readonly output: A; readonly step: ModelStepResult<A>; readonly turns: number; readonly tally: Tally }
  | { readonly _tag: "GaveUp"; readonly error: Errors.OutputDecodeError | Errors.MaxTurnsExceeded; readonly turns: number; readonly tally: Tally }

export const run = <A, E>(options: LoopOptions<A, E>): Effect.Effect<LoopEnd<A>, E> =>
  Effect.gen(function*() {
    const t = options.tally ?? tally()
    let decodeFailures = 0
    for (let turn = options.firstTurn ?? 0; turn < options.maxTurns; turn++) {
      const step = yield* options.modelStep(turn)
      account(t, step)
      options.push(step.message)
      if (step.answer === undefined) {
        yield* options.toolCalls(step, turn)
        continue
      }
      if (Either.isRight(step.answer)) return { _tag: "Answered", output: step.answer.right, step, turns: turn + 1, tally: t } as const
      decodeFailures++
      if (decodeFailures > options.maxDecodeRetries) {
        return { _tag: "GaveUp", error: new Errors.OutputDecodeError({ attempts: decodeFailures, reason: step.answer.left }), turns: turn + 1, tally: t } as const
      }
      options.push(decodeRetryMessage(step.answer.left))
    }
    return { _tag: "GaveUp", error: new Errors.MaxTurnsExceeded({ maxTurns: options.maxTurns }), turns: Math.max(options.maxTurns, options.firstTurn ?? 0), tally: t } as const
  })
