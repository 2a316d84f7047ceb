/**
 * Compaction in the loop: before a turn's model step, the oldest history is folded into the summary until the
 * prompt is under the strategy's thresholds; just after a compaction, a long run continues as new.
 */
import { Chat, ChatLoop, Tenant } from "@artana/core"
import type { Errors, Tool, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { ContextOverflow } from "../AgentErrors.js"
import * as CompactionStrategy from "../CompactionStrategy.js"
import type { RenderedSection } from "../ContextBuilder.js"
import type { FinishError } from "../Extension.js"
import { failWith } from "./finish.js"
import { carry, partsOf, type Run } from "./run.js"
import { DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS } from "./schemas.js"

/** The tools' specs as a message, so that counting the prompt counts what the tools take too. */
const toolsMessage = (tools: ReadonlyArray<Tool.Tool>): Chat.ChatMessage => Chat.system(JSON.stringify(tools.map((t) => t.spec)))

/** Folds the oldest history into the summary until the turn's prompt is under the strategy's thresholds. */
const compact = (run: Run, strategy: CompactionStrategy.CompactionStrategy, sections: ReadonlyArray<RenderedSection>) =>
  Effect.gen(function*() {
    const visible = run.tools.filter((t) => Tenant.hasCapability(run.ctx.tenant, t.requiresCapability))
    const count = () => run.env.model.countTokens([...run.builder.messages(partsOf(run, sections)), toolsMessage(visible)], run.model)
    const tooMany = () => strategy.triggerAtMessages !== undefined && run.history.length > strategy.triggerAtMessages
    const tooLong = (tokens: number) => strategy.boundTokens !== undefined && tokens > strategy.boundTokens
    let tokens = yield* count()
    let keep = strategy.keepRecentMessages
    while (tooMany() || tooLong(tokens)) {
      const cut = CompactionStrategy.cutIndex(run.history, keep)
      if (cut > 0) {
        const folded = yield* CompactionStrategy.summarize(strategy, run.ctx, {
          previous: run.summary,
          messages: run.history.slice(0, cut),
          task: run.task,
          key: `compaction:${run.compactions}`
        })
        ChatLoop.account(run.tally, folded.step)
        run.compactions++
        run.summary = folded.summary
        run.history = run.history.slice(cut)
        tokens = yield* count()
        continue
      }
      if (keep === 0) {
        return yield* new ContextOverflow({
          runId: run.ctx.runId,
          boundTokens: strategy.boundTokens ?? 0,
          promptTokens: tokens,
          reason: "the instructions, sections, task and summary alone are over it"
        })
      }
      // Keeping this many does not leave anything to fold (or not enough): keep fewer.
      keep = Math.floor(keep / 2)
    }
  })

/**
 * Compacts before turn `turn` when the agent has a strategy (a context still over it fails the run with
 * `ContextOverflow`, once the hooks have learnt of it). Just compacted, in a long run: the next run of the chain
 * takes the compacted context over from here (`ctx.continueAsNew`).
 */
export const compactOrContinue = (
  run: Run,
  turn: number,
  sections: ReadonlyArray<RenderedSection>
): Effect.Effect<void, ContextOverflow | Errors.StoreError | Workflow.ModelStepError | FinishError> =>
  Effect.gen(function*() {
    const strategy = run.agent.options.compaction
    if (strategy === undefined) return
    const before = run.compactions
    const compacted = yield* Effect.either(compact(run, strategy, sections))
    if (Either.isLeft(compacted)) {
      const error = compacted.left
      return yield* (error._tag === "ContextOverflow" ? failWith(run, error, turn) : Effect.fail(error))
    }
    const continueAfter = run.agent.options.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS
    if (continueAfter !== false && run.compactions > before && (yield* run.ctx.historyLength()) > continueAfter) {
      return yield* run.ctx.continueAsNew({ prompt: run.task, model: run.model, carried: carry(run, turn) })
    }
  })
