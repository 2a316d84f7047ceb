/**
 * Tools for plugins: core's `Tool`, with parameters given as an Effect Schema or as raw JSON Schema (validated with
 * Ajv: `required`, `oneOf`/`anyOf`/`allOf`, types, enums, formats). Arguments are validated before any handler
 * runs; invalid ones are `InvalidToolArguments` naming the path of the first problem, logged, and the handler does
 * not run. A property the schema does not declare is invalid too: object schemas that say nothing about other
 * properties are closed (`additionalProperties: false`, in the schema the model sees as well). The handler receives the decoded arguments and, last, the call's context (run id, tenant, idempotency
 * key, step key): nothing else from the host.
 *
 * @since 0.1.0
 */
import { type Json, Tool } from "@artana/core"
import type * as Duration from "effect/Duration"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Tracer from "effect/Tracer"
import { closeObjects, fromJsonSchema, invalidSchema } from "./internal/jsonSchema.js"

/**
 * An Effect Schema that accepts what a raw JSON Schema accepts, validated with the same Ajv setup as tool parameters
 * (formats, compiled validators cached), with the schema taken as written: objects are not closed. For JSON a tool
 * receives rather than its arguments, such as an MCP tool's `structuredContent` against its `outputSchema`. Throws on
 * a schema Ajv cannot compile.
 *
 * @example
 * const Output = PluginTool.jsonSchema({ type: "object", properties: { bytes: { type: "integer" } }, required: ["bytes"] })
 * Schema.decodeUnknownEither(Output)({ bytes: "many" }) // Left: $.bytes must be integer
 */
export const jsonSchema = <A = Json.Json>(schema: JsonSchema): Schema.Schema<A, A> => fromJsonSchema<A>(schema)

/** Raw JSON Schema of a tool's arguments (an object schema). */
export type JsonSchema = Json.JsonObject

interface Common<Args, Result, ResultEncoded> {
  /** Unique name (`[a-zA-Z0-9_.-]`, at most 64 characters); plugins conventionally prefix theirs (`fs.read`). */
  readonly name: string
  readonly description: string
  /** Schema of the result; defaults to any JSON value. */
  readonly success?: Schema.Schema<Result, ResultEncoded> | undefined
  /** Capability the tenant must hold for the tool to be visible and callable; list it in the plugin's capabilities. */
  readonly requiresCapability?: string | undefined
  /** Safe to run again with the same idempotency key when a crash leaves the call in doubt. Default false. */
  readonly idempotent?: boolean | undefined
  /** Deadline for one call. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * A person approves each call before it runs (`true`, or a predicate of the decoded arguments): see core's
   * `Tool.make({ needsApproval })`. The predicate runs with none of the host's services, as the handler does.
   */
  readonly needsApproval?: Tool.NeedsApproval<Args> | undefined
  /** Who may decide this tool's approvals; default any approver of the tenant. */
  readonly approvers?: ReadonlyArray<string> | undefined
  readonly handler: (args: Args, context: Tool.ToolContext) => Effect.Effect<Result, unknown> | Promise<Result>
}

/** A tool whose parameters are an Effect Schema. */
export interface SchemaToolOptions<Args, ArgsEncoded, Result, ResultEncoded> extends Common<Args, Result, ResultEncoded> {
  readonly parameters: Schema.Schema<Args, ArgsEncoded>
}

/** A tool whose parameters are raw JSON Schema; `Args` is the type you promise the schema describes. */
export interface JsonSchemaToolOptions<Args, Result, ResultEncoded> extends Common<Args, Result, ResultEncoded> {
  readonly parameters: JsonSchema
}

const isEffectSchema = <Args>(parameters: Schema.Schema<Args, unknown> | JsonSchema): parameters is Schema.Schema<Args, unknown> =>
  Schema.isSchema(parameters)

/**
 * Defines a tool. Throws (a programming error, at definition time) on a name the model APIs refuse or a JSON
 * Schema Ajv cannot compile.
 *
 * @example
 * const convert = defineTool<{ amount: number; to: "EUR" | "USD" }>({
 *   name: "fx.convert",
 *   description: "Converts an amount",
 *   parameters: {
 *     type: "object",
 *     properties: { amount: { type: "number", minimum: 0 }, to: { enum: ["EUR", "USD"] } },
 *     required: ["amount", "to"],
 *     additionalProperties: false
 *   },
 *   idempotent: true,
 *   handler: ({ amount, to }) => Effect.succeed({ amount: amount * 1.1, currency: to })
 * })
 */
export function defineTool<Args, ArgsEncoded, Result = Json.Json, ResultEncoded = Json.Json>(
  options: SchemaToolOptions<Args, ArgsEncoded, Result, ResultEncoded>
): Tool.Tool<Args, Result>
export function defineTool<Args = Json.Json, Result = Json.Json, ResultEncoded = Json.Json>(
  options: JsonSchemaToolOptions<Args, Result, ResultEncoded>
): Tool.Tool<Args, Result>
export function defineTool<Args, Result, ResultEncoded>(
  options: SchemaToolOptions<Args, unknown, Result, ResultEncoded> | JsonSchemaToolOptions<Args, Result, ResultEncoded>
): Tool.Tool<Args, Result> {
  const parameters = options.parameters
  const handler = isolated(options.handler)
  const rule = options.needsApproval
  const needsApproval: Tool.NeedsApproval<Args> | undefined = typeof rule === "function" ? (args, context) => withoutHost(rule(args, context)) : rule
  if (isEffectSchema(parameters)) return Tool.make({ ...options, parameters, handler, needsApproval })
  const invalid = invalidSchema(parameters)
  if (invalid !== undefined) throw new Error(`tool "${options.name}": its parameters are not a JSON Schema Ajv can use: ${invalid}`)
  return Tool.make({ ...options, parameters: fromJsonSchema<Args>(closeObjects(parameters)), handler, needsApproval })
}

/**
 * The handler, run with none of the host's services: a plugin gets its config and the call's context, nothing else.
 * Its types already say so (a handler requires no service); this holds at run time too, for code that looks a
 * service up anyway (`Effect.serviceOption`). Only the current span stays, so a plugin's spans nest under the call's.
 */
const isolated = <Args, Result>(handler: Common<Args, Result, unknown>["handler"]): Common<Args, Result, unknown>["handler"] => (args, context) => {
  const out = handler(args, context)
  return Effect.isEffect(out) ? withoutHost(out) : out
}

/** An effect run with none of the host's services, only the current span. */
const withoutHost = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.mapInputContext(effect, (host: Context.Context<never>) =>
    Option.match(Context.getOption(host, Tracer.ParentSpan), { onNone: () => Context.empty(), onSome: (span) => Context.make(Tracer.ParentSpan, span) })
  )
