/**
 * The agent loop: core's chat loop (`ChatLoop.run`: a model step a turn, the calls it asks for, an answer that does
 * not decode asked for again) over the agent's turns (`turn.ts`: sections rendered, history compacted, skills'
 * working set), numbered over the chain of runs, and the extensions' hooks on how it ended. Every effect goes
 * through the workflow context, with explicit step keys: `turn:<n>` (model), `turn:<n>/tool:<i>`,
 * `turn:<n>/section:<name>`, `turn:<n>/steer:<i>`, `compaction:<k>`, `tools:<extension>:<name>`,
 * `finish:<extension>:<name>`.
 */
import { ChatLoop } from "@artana/core"
import type { Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import { ExtensionError } from "../AgentErrors.js"
import type { Agent, AgentOutput, RunError } from "../AutonomousAgent.js"
import * as Skills from "../Skills.js"
import { declaredTools, reserved, toolName } from "./definition.js"
import { failWith, finish } from "./finish.js"
import * as Run from "./run.js"
import type { Env, Input } from "./schemas.js"
import { modelStep, toolCalls } from "./turn.js"

/**
 * The extensions' tools of this run (`Extension.runTools`), in the extensions' order, as skills; a failing hook or a
 * tool named like another of the agent's fails the run with an `ExtensionError`.
 */
const runTools = (agent: Agent, ctx: Workflow.WorkflowContext, task: string, model: string): Effect.Effect<ReadonlyArray<Skills.Skill>, ExtensionError> =>
  Effect.gen(function*() {
    const taken = new Set([...reserved, ...declaredTools(agent).map(toolName)])
    const out: Array<Skills.Skill> = []
    for (const extension of agent.options.extensions ?? []) {
      if (extension.runTools === undefined) continue
      const failed = (reason: string, cause?: unknown) =>
        new ExtensionError({ extension: extension.name, reason, ...(cause === undefined ? {} : { cause }) })
      const tools = yield* Effect.mapError(
        extension.runTools({ ctx, agent: agent.name, task, model, key: (name) => `tools:${extension.name}:${name}` }),
        (e) => failed(`its run tools could not be had: ${e.message}`, e)
      )
      for (const tool of tools) {
        if (taken.has(tool.name)) return yield* failed(`its run tool "${tool.name}" is named like another tool of the agent; rename one`)
        taken.add(tool.name)
        out.push(Skills.of(tool))
      }
    }
    return out
  })

/** Runs the agent on `input`, with `skills` (its declared tools, as this run offers them) and its extensions' run tools. */
export const loop = <A, I>(
  agent: Agent,
  env: Env,
  outputSchema: Schema.Schema<A, I> | undefined,
  input: Input,
  ctx: Workflow.WorkflowContext<Input>,
  skills: ReadonlyArray<Skills.Skill>
): Effect.Effect<AgentOutput<A>, RunError> =>
  Effect.gen(function*() {
    const extra = yield* runTools(agent, ctx, input.prompt, input.model)
    const run = Run.make(agent, env, ctx, input, [...skills, ...extra])
    const maxTurns = agent.options.maxTurns ?? 25
    // Turns are numbered over the chain (keys, sections, `maxTurns`): a continued run goes on from its predecessor's.
    const end = yield* ChatLoop.run({
      firstTurn: run.turnsBefore,
      maxTurns,
      maxDecodeRetries: agent.options.maxDecodeRetries ?? 2,
      modelStep: (turn) => modelStep(run, outputSchema, turn),
      toolCalls: (step, turn) => toolCalls(run, step, turn),
      push: (message) => void run.history.push(message),
      tally: run.tally
    })
    const turns = end.turns
    if (end._tag === "GaveUp") return yield* failWith(run, end.error, turns)
    yield* finish(run, { _tag: "success", answer: end.step.message.content ?? "", output: end.output }, turns)
    return { output: end.output, turns, compactions: run.compactions, usage: run.tally.usage, costUsd: run.tally.costUsd } satisfies AgentOutput<A>
  })
