/**
 * Plans: a YAML list of tool steps, run through the kernel like any workflow (see `PlanRunner`).
 *
 * ```yaml
 * on_error: stop            # or continue; default stop
 * steps:
 *   - id: read-notes        # optional; default step-<n> (1-based)
 *     name: Read the notes  # optional, for people
 *     tool: fs.read
 *     args: { path: workspace/notes.txt }
 * ```
 *
 * `parse` / `load` check everything a plan can get wrong before anything runs: the YAML (file, line, column), the
 * shape (unknown fields, wrong types), step ids (unique), and, given the tools, that every tool exists and every
 * step's arguments decode with that tool's parameters.
 *
 * @since 0.1.0
 */
import type { ToolRegistry } from "@artana/core"
import { Json } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { Yaml } from "@artana/plugin-sdk"

/** What a plan does when a step is denied or fails: stop the run (it fails), or go on with the next step. */
export const OnError = Schema.Literal("stop", "continue").annotations({
  message: (issue) => `expected "stop" or "continue", got ${JSON.stringify(issue.actual) ?? String(issue.actual)}`
})
export type OnError = typeof OnError.Type

const STEP_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

/** A step id: letters, digits, `_`, `.`, `-`, at most 64 characters; it names the step's key in the log. */
export const StepId = Schema.String.pipe(
  Schema.pattern(STEP_ID, { message: () => "a step id is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit" })
)

/** One step as written in the file. */
export const StepDocument = Schema.Struct({
  id: Schema.optional(StepId),
  name: Schema.optional(Schema.String),
  tool: Schema.NonEmptyTrimmedString,
  args: Schema.optional(Json.JsonObject)
})

/** The file format. */
export const PlanDocument = Schema.Struct({
  on_error: Schema.optional(OnError),
  steps: Schema.Array(StepDocument).pipe(Schema.minItems(1, { message: () => "a plan needs at least one step" }))
})

/** A step, normalized: its id is always set and `args` is an object. */
export const Step = Schema.Struct({
  id: Schema.String,
  name: Schema.optional(Schema.String),
  tool: Schema.String,
  args: Json.JsonObject
})
export type Step = typeof Step.Type

/** A plan, normalized. This is what a plan run logs as its input. */
export const Plan = Schema.Struct({
  onError: OnError,
  steps: Schema.Array(Step)
})
export type Plan = typeof Plan.Type

/** What went wrong with a plan. */
export const PlanErrorKind = Schema.Literal("unreadable", "yaml", "schema", "duplicate_id", "unknown_tool", "invalid_arguments")

/** A plan that cannot run: the file, where in it (1-based line and column), the path of the field, and why. */
export class PlanError extends Schema.TaggedError<PlanError>()("PlanError", {
  file: Schema.String,
  kind: PlanErrorKind,
  line: Schema.optional(Schema.Int),
  column: Schema.optional(Schema.Int),
  path: Schema.optional(Schema.String),
  reason: Schema.String
}) {
  override get message() {
    const at = this.line === undefined ? this.file : `${this.file}:${this.line}:${this.column ?? 1}`
    const field = this.path === undefined || this.path === "$" ? "" : ` ${this.path.slice(2)}:`
    return `${at}:${field} ${this.reason}`
  }
}

/** The key of a step's events in the log: `step:<id>`. */
export const stepKey = (id: string): string => `step:${id}`

/** The step id of a log step key, or undefined for keys a plan does not write. */
export const stepIdOf = (key: string): string | undefined => (key.startsWith("step:") ? key.slice("step:".length) : undefined)

export interface ParseOptions {
  /** Shown in errors (the path the user gave). */
  readonly file: string
  /** When given, every step's tool must be registered and its arguments must decode with the tool's parameters. */
  readonly tools?: ToolRegistry.Service | undefined
}

/**
 * Parses and checks a plan's text.
 *
 * @example
 * const plan = Plan.parse("steps:\n  - tool: fs.read\n    args: { path: notes.txt }\n", { file: "plan.yaml", tools })
 */
export const parse = (text: string, options: ParseOptions): Either.Either<Plan, PlanError> => {
  const { file } = options
  const fail = (kind: typeof PlanErrorKind.Type, issue: Omit<Yaml.Issue, "kind">) =>
    Either.left(new PlanError({ file, kind, line: issue.line, column: issue.column, path: issue.path, reason: issue.reason }))
  const source = Yaml.parse(text)
  if (Either.isLeft(source)) return fail("yaml", source.left)
  if (source.right.value === null || source.right.value === undefined) {
    return fail("schema", { path: "$", line: 1, column: 1, reason: "the plan is empty; it needs a `steps` list" })
  }
  const document = Yaml.decode(source.right, PlanDocument)
  if (Either.isLeft(document)) return fail("schema", document.left)
  const at = (path: ReadonlyArray<PropertyKey>, reason: string) => ({ ...source.right.locate(path), path: Yaml.formatPath(path), reason })

  const seen = new Map<string, number>()
  const steps: Array<Step> = []
  for (const [i, step] of document.right.steps.entries()) {
    const id = step.id ?? `step-${i + 1}`
    const previous = seen.get(id)
    if (previous !== undefined) {
      const why = step.id === undefined ? ` (the default id of step ${i + 1})` : ""
      return fail("duplicate_id", at(["steps", i, step.id === undefined ? "tool" : "id"], `step id "${id}"${why} is already used by step ${previous + 1}; step ids must be unique`))
    }
    seen.set(id, i)
    steps.push({ id, ...(step.name === undefined ? {} : { name: step.name }), tool: step.tool, args: step.args ?? {} })
  }

  const plan: Plan = { onError: document.right.on_error ?? "stop", steps }
  if (options.tools === undefined) return Either.right(plan)
  const problem = toolProblem(plan, options.tools)
  if (problem === undefined) return Either.right(plan)
  return fail(problem.kind, at(["steps", problem.index, ...problem.path], problem.reason))
}

const toolProblem = (plan: Plan, tools: ToolRegistry.Service) => {
  for (const [index, step] of plan.steps.entries()) {
    const tool = tools.get(step.tool)
    if (tool === undefined) {
      const available = tools.list().map((t) => t.name)
      const reason = `unknown tool "${step.tool}"; available tools: ${available.join(", ") || "(none)"}`
      return { kind: "unknown_tool", index, path: ["tool"], reason } as const
    }
    const decoded = tool.decodeArguments(JSON.stringify(step.args))
    if (Either.isLeft(decoded)) {
      const reason = `invalid arguments for ${step.tool}: ${decoded.left.reason}`
      return { kind: "invalid_arguments", index, path: ["args", ...Yaml.parsePath(decoded.left.path)], reason } as const
    }
  }
  return undefined
}

/**
 * Checks a plan built in code (or read back from a log) against the tools: every tool registered, every step's
 * arguments decoding, step ids unique. `file` names the plan in errors.
 */
export const check = (plan: Plan, tools: ToolRegistry.Service, file = "<plan>"): Either.Either<Plan, PlanError> => {
  const ids = new Set<string>()
  for (const [i, step] of plan.steps.entries()) {
    if (!STEP_ID.test(step.id)) {
      return Either.left(new PlanError({ file, kind: "schema", path: `$.steps[${i}].id`, reason: `"${step.id}" is not a valid step id` }))
    }
    if (ids.has(step.id)) {
      return Either.left(new PlanError({ file, kind: "duplicate_id", path: `$.steps[${i}].id`, reason: `step id "${step.id}" is used twice` }))
    }
    ids.add(step.id)
  }
  const problem = toolProblem(plan, tools)
  if (problem === undefined) return Either.right(plan)
  return Either.left(new PlanError({ file, kind: problem.kind, path: Yaml.formatPath(["steps", problem.index, ...problem.path]), reason: problem.reason }))
}

/** Reads and parses a plan file; see `parse`. */
export const load = (file: string, options: Omit<ParseOptions, "file"> = {}): Effect.Effect<Plan, PlanError> =>
  Effect.flatMap(
    Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) => new PlanError({ file, kind: "unreadable", reason: `cannot read the plan: ${e instanceof Error ? e.message : String(e)}` })
    }),
    (text) => parse(text, { ...options, file })
  )
