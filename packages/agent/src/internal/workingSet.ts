/**
 * The skills of one run and, with `progressiveSkills`, their working set: which skills are loaded (least recently
 * used, loaded or called, first: the order of the log, so a replay unloads the same ones), which were unloaded to
 * stay within `maxLoaded`, and how an answer's calls change it.
 */
import type { Chat, Tool, Workflow } from "@artana/core"
import { Json } from "@artana/core"
import * as Either from "effect/Either"
import type { Options } from "../AutonomousAgent.js"
import type { SkillSummary } from "../ContextBuilder.js"
import * as Skills from "../Skills.js"
import type { Carried } from "./schemas.js"

export interface WorkingSet {
  readonly skills: ReadonlyArray<Skills.Skill>
  readonly byName: ReadonlyMap<string, Skills.Skill>
  /** Loaded skills' instructions and examples, shown in the skills list while they are loaded. */
  readonly guides: ReadonlyMap<string, string | undefined>
  readonly progressive: boolean
  /** Adaptive (no `maxLoaded`): starts at `Skills.WORKING_SET`, grows on each reload of an unloaded skill. */
  readonly adaptive: boolean
  readonly loaded: Set<string>
  readonly unloaded: Set<string>
  maxLoaded: number
}

export const make = (
  skills: ReadonlyArray<Skills.Skill>,
  setting: Options["progressiveSkills"],
  carried: Carried | undefined
): WorkingSet => {
  const options = typeof setting === "object" && setting !== null ? setting : undefined
  const adaptive = options?.maxLoaded === undefined
  return {
    skills,
    byName: new Map(skills.map((s) => [s.tool.name, s])),
    guides: new Map(skills.map((s) => [s.tool.name, Skills.guideOf(s)])),
    progressive: setting === true || options !== undefined,
    adaptive,
    loaded: new Set(carried?.loadedSkills ?? []),
    unloaded: new Set(carried?.unloadedSkills ?? []),
    maxLoaded: adaptive && carried?.maxLoaded !== undefined ? carried.maxLoaded : options?.maxLoaded ?? Skills.WORKING_SET
  }
}

/** Marks a skill used (most recently), unloading the least recently used beyond `maxLoaded`. */
export const use = (ws: WorkingSet, name: string): void => {
  ws.loaded.delete(name)
  ws.loaded.add(name)
  ws.unloaded.delete(name)
  for (const oldest of ws.loaded) {
    if (ws.loaded.size <= ws.maxLoaded) break
    ws.loaded.delete(oldest)
    ws.unloaded.add(oldest)
  }
}

/** The tools a turn offers: `own` (always offered), then the loaded skills' (every skill's without progressive skills). */
export const offered = (ws: WorkingSet, own: ReadonlyArray<Tool.Tool>): ReadonlyArray<Tool.Tool> =>
  ws.progressive
    ? [...own, ...ws.skills.filter((s) => ws.loaded.has(s.tool.name)).map((s) => s.tool)]
    : [...own, ...ws.skills.map((s) => s.tool)]

/** The skills list of the prompt (progressive skills only). */
export const listing = (ws: WorkingSet): ReadonlyArray<SkillSummary> | undefined =>
  ws.progressive
    ? ws.skills.map((s) => {
      const loaded = ws.loaded.has(s.tool.name)
      return { name: s.tool.name, summary: s.summary, loaded, guide: loaded ? ws.guides.get(s.tool.name) : undefined }
    })
    : undefined

/** The working set as the next run of a chain takes it over. */
export const carry = (ws: WorkingSet): Pick<Carried, "loadedSkills" | "unloadedSkills" | "maxLoaded"> => ({
  loadedSkills: [...ws.loaded],
  unloadedSkills: [...ws.unloaded],
  ...(ws.adaptive && Number.isFinite(ws.maxLoaded) ? { maxLoaded: ws.maxLoaded } : {})
})

/**
 * Before an answer's calls run: an answer that loads more skills than the working set holds needs them all, so an
 * adaptive set grows to fit them. Returns the skills unloaded before the answer.
 */
export const beforeCalls = (ws: WorkingSet, calls: ReadonlyArray<Chat.ToolCall>): ReadonlySet<string> => {
  if (ws.progressive && ws.adaptive) ws.maxLoaded = Math.max(ws.maxLoaded, calls.filter((c) => c.name === Skills.LOAD_SKILL).length)
  return new Set(ws.unloaded)
}

/**
 * What the model is told of a call once it ran, and what the call does to the working set: a skill not loaded is
 * explained; loading a skill (again, for one unloaded before the answer: the set is too small, so an adaptive one
 * grows) uses it; any call of a loaded skill keeps it in use.
 */
export const afterCall = (
  ws: WorkingSet,
  call: Chat.ToolCall,
  outcome: Workflow.ToolCallOutcome,
  offeredNames: ReadonlySet<string>,
  unloadedBefore: ReadonlySet<string>
): Chat.ChatMessage => {
  let message = outcome.message
  if (Either.isLeft(outcome.result)) {
    // A skill the model has not loaded: the kernel logged it as an unknown tool; the model is told what to do.
    if (ws.progressive && outcome.result.left._tag === "UnknownTool" && ws.byName.has(call.name) && !offeredNames.has(call.name)) {
      message = { ...message, content: Skills.notLoaded(call.name, ws.unloaded.has(call.name) ? ws.maxLoaded : undefined) }
    }
  } else if (call.name === Skills.LOAD_SKILL && ws.progressive) {
    const result = outcome.result.right
    const name = Json.isObject(result) ? result["name"] : undefined
    const skill = typeof name === "string" ? ws.byName.get(name) : undefined
    if (skill !== undefined) {
      if (ws.adaptive && unloadedBefore.has(skill.tool.name)) ws.maxLoaded++
      use(ws, skill.tool.name)
      // The log holds the whole answer; the prompt shows it from the next turn on (tool list, skills list).
      message = { ...message, content: Skills.inHistory(skill) }
    }
  }
  // A call (answered or failed) keeps its skill in use: the least recently used are unloaded first.
  if (ws.progressive && offeredNames.has(call.name) && ws.loaded.has(call.name)) use(ws, call.name)
  return message
}
