/**
 * What an agent's definition gives every run: its declared tools and their names, its context builder (with the
 * memory section), its memory id; and the checks `AutonomousAgent.make` makes on it.
 */
import type { Agent, AgentTool } from "../AutonomousAgent.js"
import { ContextBuilder } from "../ContextBuilder.js"
import * as Memory from "../Memory.js"
import type * as MemoryStore from "../MemoryStore.js"
import * as Skills from "../Skills.js"
import type * as SubAgent from "../SubAgent.js"

export const isSubAgent = (t: AgentTool): t is SubAgent.SubAgentTool => "_tag" in t && t._tag === "SubAgentTool"

/** The names an agent's own tools take; a user tool may not take them. */
export const reserved: ReadonlyArray<string> = [Skills.LOAD_SKILL, Memory.APPEND, Memory.REPLACE, Memory.SEARCH]

/** The tools the agent is defined with: its own, then its extensions'. */
export const declaredTools = (agent: Agent): ReadonlyArray<AgentTool> => [
  ...(agent.options.tools ?? []),
  ...(agent.options.extensions ?? []).flatMap((e) => e.tools ?? [])
]

/** The name the model calls a declared tool by. */
export const toolName = (t: AgentTool): string => (isSubAgent(t) ? t.name : Skills.of(t).tool.name)

/** Throws on an agent definition that cannot work (see `AutonomousAgent.make`). */
export const validate = (agent: Agent): void => {
  const o = agent.options
  const names = new Set<string>()
  const extensions = new Set<string>()
  for (const e of o.extensions ?? []) {
    if (extensions.has(e.name)) throw new Error(`agent "${agent.name}": two extensions are named "${e.name}"`)
    extensions.add(e.name)
  }
  for (const t of declaredTools(agent)) {
    const name = toolName(t)
    if (isSubAgent(t) && !/^[a-zA-Z0-9_.-]{1,64}$/.test(name)) throw new Error(`agent "${agent.name}": sub-agent tool name "${name}" must match [a-zA-Z0-9_.-]{1,64}`)
    if (reserved.includes(name)) throw new Error(`agent "${agent.name}": the tool name "${name}" is the agent's own; rename the tool`)
    if (names.has(name)) throw new Error(`agent "${agent.name}": two tools are named "${name}"; tool names must be unique`)
    names.add(name)
  }
  // The builder refuses duplicate section names; the memory section's name is taken when memory is on.
  const sections = builderOf(agent, undefined).sections
  if (o.memory !== false && sections.some((section) => section.name === Memory.SECTION)) {
    throw new Error(`agent "${agent.name}": the section name "${Memory.SECTION}" is the memory section's; rename the section or set memory: false`)
  }
}

/** The agent's context builder, with the memory section first when memory is on (and a store is given). */
export const builderOf = (agent: Agent, memory: MemoryStore.Service | undefined): ContextBuilder => {
  const o = agent.options
  const memorySection = o.memory === false || memory === undefined ? [] : [Memory.section(memory, memoryId(agent), o.memory ?? {})]
  return (o.context ?? new ContextBuilder()).withSections(
    ...memorySection,
    ...(o.sections ?? []),
    ...(o.extensions ?? []).flatMap((e) => e.sections ?? [])
  )
}

export const memoryId = (agent: Agent): string =>
  agent.options.memory === false ? agent.name : agent.options.memory?.agentId ?? agent.name
