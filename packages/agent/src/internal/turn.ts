/**
 * One turn of the agent, as the chat loop runs it: the steering messages taken, the prompt built (sections rendered,
 * history compacted) and sent as the turn's model step; then the calls of its answer, each a logged tool call.
 */
import { Chat } from "@artana/core"
import type { Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Schema from "effect/Schema"
import type { RunError } from "../AutonomousAgent.js"
import { compactOrContinue } from "./compact.js"
import { partsOf, type Run } from "./run.js"
import { STEERING_SIGNAL, SteeringMessage } from "./schemas.js"
import * as WorkingSet from "./workingSet.js"

/**
 * The steering messages sent since the last turn, taken oldest first (each a logged step) into the history. A
 * message that does not decode is taken and dropped (its `SignalReceived` is logged).
 */
const steer = (run: Run, turn: number) =>
  Effect.gen(function*() {
    for (let i = 0;; i++) {
      const taken = yield* Effect.either(run.ctx.waitForSignal(STEERING_SIGNAL, SteeringMessage, { timeout: 0, key: `turn:${turn}/steer:${i}` }))
      if (Either.isLeft(taken)) {
        if (taken.left._tag === "SignalTimeout") return
        continue
      }
      run.history.push(Chat.user(taken.right.text))
    }
  })

/** The turn's model step, on its prompt: its sections rendered, the history compacted when over the strategy's thresholds. */
export const modelStep = <A, I>(
  run: Run,
  outputSchema: Schema.Schema<A, I> | undefined,
  turn: number
): Effect.Effect<Workflow.ModelStepResult<A>, RunError> =>
  Effect.gen(function*() {
    const o = run.agent.options
    if (o.steering === true) yield* steer(run, turn)
    const sections = yield* run.builder.renderSections({ ctx: run.ctx, agent: run.agent.name, task: run.task, turn, history: run.history }, run.previous)
    for (const s of sections) run.previous.set(s.name, s.text)
    run.tools = WorkingSet.offered(run.skills, run.own)
    yield* compactOrContinue(run, turn, sections)
    return yield* run.ctx.modelStep({
      messages: run.builder.messages(partsOf(run, sections)),
      tools: run.tools,
      outputSchema,
      model: run.model,
      maxOutputTokens: o.maxOutputTokens,
      key: `turn:${turn}`
    })
  })

/** The calls of an answer, each with what the model is told of it; loading a skill changes the working set. */
export const toolCalls = <A>(run: Run, step: Workflow.ModelStepResult<A>, turn: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const tools = run.tools
    const offeredNames = new Set(tools.map((t) => t.name))
    const unloadedBefore = WorkingSet.beforeCalls(run.skills, step.toolCalls)
    for (const [i, call] of step.toolCalls.entries()) {
      const outcome = yield* run.ctx.toolCall(call, { tools, key: `turn:${turn}/tool:${i}` })
      run.history.push(WorkingSet.afterCall(run.skills, call, outcome, offeredNames, unloadedBefore))
    }
  })
