/**
 * Progressive skills. With `progressiveSkills: true` an agent's prompt lists its skills by name and one line; the
 * model calls `load_skill` to get a skill's full parameters (JSON Schema), instructions and examples, and the
 * skill's tool is offered from the next model step on. Fifty tools cost a few lines of prompt until they are used.
 *
 * Any tool is a skill (its description's first sentence is the summary); `Skills.make` adds instructions and
 * examples, which only a loaded skill shows.
 *
 * @since 0.1.0
 */
import { Json, Tool } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { UnknownSkill } from "./AgentErrors.js"

/** An example call of a skill, shown when it is loaded. */
export interface Example<Args> {
  readonly description?: string | undefined
  readonly arguments: Args
  readonly result?: Json.Json | undefined
}

/** A tool with what the model needs to use it well: a one-line summary, instructions, examples. */
export interface Skill {
  readonly _tag: "Skill"
  readonly tool: Tool.Tool
  /** What the skills list shows: one line. */
  readonly summary: string
  readonly instructions: string | undefined
  /** Examples, their arguments encoded as the model writes them. */
  readonly examples: ReadonlyArray<{ readonly description?: string | undefined; readonly arguments: Json.Json; readonly result?: Json.Json | undefined }>
}

/** Options of progressive skills (`AutonomousAgent`'s `progressiveSkills`). */
export interface Progressive {
  /**
   * At most this many skills loaded at once: loading one more unloads the least recently used (loaded or called),
   * so the tool specs a prompt carries stay bounded over a long run. `Infinity`: never unload. Default: an adaptive
   * working set, `WORKING_SET` skills to start with, one more each time the model loads a skill again that was
   * unloaded.
   */
  readonly maxLoaded?: number | undefined
}

/**
 * How many skills progressive skills keep loaded at first, when `maxLoaded` is not set: a handful, as a step of work
 * rarely needs more tools at once; the set grows when the model shows it needs more (it loads an unloaded skill again).
 */
export const WORKING_SET = 5

/** The name of the tool that loads a skill. */
export const LOAD_SKILL = "load_skill"

const MAX_SUMMARY = 120

/** The first sentence (or line) of a description, at most 120 characters: what the skills list shows. */
export const summaryOf = (description: string): string => {
  const firstLine = description.trim().split("\n")[0] ?? ""
  const sentence = /^(.+?[.!?])(\s|$)/.exec(firstLine)?.[1] ?? firstLine
  return sentence.length <= MAX_SUMMARY ? sentence : `${sentence.slice(0, MAX_SUMMARY - 1).trimEnd()}…`
}

/**
 * Makes a skill of a tool. Example arguments are typed as the tool's and checked now: a wrong example is a
 * programming error and throws.
 *
 * @example
 * const revenue = Skills.make(queryRevenue, {
 *   instructions: "Amounts are in EUR. Quarters are written 2024-Q1.",
 *   examples: [{ description: "Q1 revenue in EMEA", arguments: { region: "EMEA", quarter: "2024-Q1" } }]
 * })
 */
export const make = <Args, Result>(
  tool: Tool.Tool<Args, Result>,
  options: {
    readonly summary?: string | undefined
    readonly instructions?: string | undefined
    readonly examples?: ReadonlyArray<Example<Args>> | undefined
  } = {}
): Skill => ({
  _tag: "Skill",
  tool,
  summary: options.summary ?? summaryOf(tool.description),
  instructions: options.instructions,
  examples: (options.examples ?? []).map((example, i) => {
    const encoded = tool.encodeArguments(example.arguments)
    if (Either.isLeft(encoded)) throw new Error(`example ${i + 1} of skill "${tool.name}": ${encoded.left.message}`)
    const json: unknown = JSON.parse(encoded.right)
    if (!Json.isJson(json)) throw new Error(`example ${i + 1} of skill "${tool.name}" does not encode to JSON`)
    return { description: example.description, arguments: json, result: example.result }
  })
})

/** A skill, or a tool taken as one. */
export const of = (toolOrSkill: Tool.Tool | Skill): Skill => ("_tag" in toolOrSkill ? toolOrSkill : make(toolOrSkill))

/** What `load_skill` returns: everything about the skill. */
export const Loaded = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: Json.JsonObject,
  instructions: Schema.optional(Schema.String),
  examples: Schema.optional(Schema.Array(Schema.Struct({
    description: Schema.optional(Schema.String),
    arguments: Json.Json,
    result: Schema.optional(Json.Json)
  }))),
  note: Schema.String
})
export type Loaded = typeof Loaded.Type

/** What `load_skill` tells the model about a skill. */
export const describe = (skill: Skill): Loaded => ({
  name: skill.tool.name,
  description: skill.tool.description,
  parameters: skill.tool.spec.parameters,
  ...(skill.instructions === undefined ? {} : { instructions: skill.instructions }),
  ...(skill.examples.length === 0
    ? {}
    : {
      examples: skill.examples.map((e) => ({
        ...(e.description === undefined ? {} : { description: e.description }),
        arguments: e.arguments,
        ...(e.result === undefined ? {} : { result: e.result })
      }))
    }),
  note: `"${skill.tool.name}" is loaded: call it from your next turn on.`
})

/**
 * A loaded skill's instructions and examples as the skills list shows them while it is loaded, or undefined when it
 * has neither. They live in the system prompt, not in the history: compaction cannot fold them away while the tool is
 * still offered, and unloading the skill takes them out with its tool.
 */
export const guideOf = (skill: Skill): string | undefined => {
  if (skill.instructions === undefined && skill.examples.length === 0) return undefined
  return [
    `How to use ${skill.tool.name}:${skill.instructions === undefined ? "" : ` ${skill.instructions}`}`,
    ...skill.examples.map((e) =>
      `  Example${e.description === undefined ? "" : ` (${e.description})`}: ${JSON.stringify(e.arguments)}${e.result === undefined ? "" : ` -> ${JSON.stringify(e.result)}`}`
    )
  ].join("\n")
}

/**
 * What the agent's history keeps of a `load_skill` answer: that the skill is loaded. The log holds the whole answer;
 * the prompt carries the rest from the next turn on (the schema and description in the tool list, the instructions
 * and examples in the skills list), so keeping them in the history too would pay for them twice on every later turn.
 */
export const inHistory = (skill: Skill): string => JSON.stringify({ loaded: skill.tool.name })

/**
 * The `load_skill` tool over `skills`. Idempotent and free of side effects; a name that is no skill fails with
 * `UnknownSkill`, listing the skills, which the model reads as the call's error.
 */
export const loadSkillTool = (skills: ReadonlyArray<Skill>): Tool.Tool<{ readonly name: string }, Loaded> => {
  const byName = new Map(skills.map((s) => [s.tool.name, s]))
  return Tool.make({
    name: LOAD_SKILL,
    description: "Loads a skill from the skills list: returns its full parameters, instructions and examples. " +
      "The skill's tool can be called from your next turn on.",
    parameters: Schema.Struct({ name: Schema.String.annotations({ description: "The skill's name, as the skills list shows it" }) }),
    success: Loaded,
    idempotent: true,
    handler: ({ name }) => {
      const skill = byName.get(name)
      return skill === undefined
        ? Effect.fail(new UnknownSkill({ skill: name, available: [...byName.keys()] }))
        : Effect.succeed(describe(skill))
    }
  })
}

/**
 * The message a model gets when it calls a skill it has not loaded; with `maxLoaded`, one that was unloaded to
 * stay within that many.
 */
export const notLoaded = (name: string, maxLoaded?: number): string =>
  JSON.stringify({
    error: "SkillNotLoaded",
    message: maxLoaded === undefined
      ? `"${name}" is a skill that is not loaded yet: call ${LOAD_SKILL} with {"name": "${name}"} first; its tool can be called from the next turn on`
      : `"${name}" was unloaded to make room for other skills (at most ${maxLoaded} are loaded at once): call ${LOAD_SKILL} with {"name": "${name}"} again; its tool can be called from the next turn on`
  })
