/**
 * One run of the agent: what it was given (task, model, skills, tools of its own) and the context it builds up turn
 * by turn (history, summary, the sections' last texts, usage and cost), which is what it hands over when it
 * continues as new.
 */
import { Chat, ChatLoop } from "@artana/core"
import type { Tool, Workflow } from "@artana/core"
import type { Agent } from "../AutonomousAgent.js"
import type { ContextBuilder, PromptParts, RenderedSection } from "../ContextBuilder.js"
import * as Memory from "../Memory.js"
import * as Skills from "../Skills.js"
import { builderOf, memoryId } from "./definition.js"
import type { Carried, Env, Input } from "./schemas.js"
import * as WorkingSet from "./workingSet.js"

export interface Run {
  readonly agent: Agent
  readonly env: Env
  readonly ctx: Workflow.WorkflowContext<Input>
  readonly task: string
  readonly model: string
  readonly builder: ContextBuilder
  readonly skills: WorkingSet.WorkingSet
  /** The agent's own tools, always offered: memory's, and `load_skill` with progressive skills. */
  readonly own: ReadonlyArray<Tool.Tool>
  /** Turns taken by the runs this one continues (0 for the first run of a chain). */
  readonly turnsBefore: number
  history: Array<Chat.ChatMessage>
  summary: string | undefined
  /** What each section rendered last. */
  readonly previous: Map<string, string>
  /** Usage and cost of every step: the turns' model steps and the compactions' summaries (the chain's, carried). */
  readonly tally: ChatLoop.Tally
  compactions: number
  /** The tools of the current turn, as its model step offered them. */
  tools: ReadonlyArray<Tool.Tool>
}

/** A run's start: a fresh context, or the one the run it continues (`input.carried`) handed over. */
export const make = (
  agent: Agent,
  env: Env,
  ctx: Workflow.WorkflowContext<Input>,
  input: Input,
  skills: ReadonlyArray<Skills.Skill>
): Run => {
  const o = agent.options
  const carried = input.carried
  const workingSet = WorkingSet.make(skills, o.progressiveSkills, carried)
  const tally = ChatLoop.tally()
  if (carried !== undefined) ChatLoop.account(tally, carried)
  return {
    agent,
    env,
    ctx,
    task: input.prompt,
    model: input.model,
    builder: builderOf(agent, env.memory),
    skills: workingSet,
    own: [
      ...(o.memory === false ? [] : Memory.tools(env.memory, memoryId(agent), o.memory ?? {})),
      ...(workingSet.progressive ? [Skills.loadSkillTool(skills)] : [])
    ],
    turnsBefore: carried?.turns ?? 0,
    history: [...(carried?.history ?? [])],
    summary: carried?.summary,
    previous: new Map(carried?.sections ?? []),
    tally,
    compactions: carried?.compactions ?? 0,
    tools: []
  }
}

/** The parts of a turn's prompt, with the sections as rendered for it. */
export const partsOf = (run: Run, sections: ReadonlyArray<RenderedSection>): PromptParts => ({
  identity: run.agent.options.instructions,
  sections,
  skills: WorkingSet.listing(run.skills),
  task: run.task,
  summary: run.summary,
  history: run.history
})

/** The conversation as the agent holds it: the task, the compaction summary if any, the rest. */
export const conversation = (run: Run): ReadonlyArray<Chat.ChatMessage> => [
  Chat.user(run.task),
  ...(run.summary === undefined ? [] : [run.builder.summaryMessage(run.summary)]),
  ...run.history
]

/** The state the next run of the chain starts from, before turn `turn` (taken by that run). */
export const carry = (run: Run, turn: number): Carried => ({
  ...(run.summary === undefined ? {} : { summary: run.summary }),
  history: [...run.history],
  sections: [...run.previous],
  ...WorkingSet.carry(run.skills),
  turns: turn,
  compactions: run.compactions,
  usage: { ...run.tally.usage },
  costUsd: run.tally.costUsd
})
