// Raw JSON Schema parameters, validated with Ajv (draft 2020-12 keywords Ajv 8 supports by default: required,
// oneOf/anyOf/allOf, types, enums, formats through ajv-formats), as an Effect Schema: core's `Tool.make` then does
// the rest (decoding the model's arguments, the error path, the tool spec), one code path for both kinds of tool.
import { Json } from "@artana/core"
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv"
import ajvFormats from "ajv-formats"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

// ajv-formats is CommonJS: under NodeNext its default import is `module.exports`, whose `default` is the plugin.
const addFormats = ajvFormats.default

/**
 * Validators by schema text. Each distinct schema gets an Ajv instance of its own, so plugins never share validator
 * state (two schemas with the same `$id` do not collide); the same schema, defined again (a plugin loaded twice),
 * reuses its compiled validator. At most `MAX_COMPILED` are kept, the least recently used dropped first, so a host
 * that defines tools from generated schemas for as long as it runs does not keep every one: a tool keeps its own
 * validator, and one dropped here is only compiled again if the schema is defined again.
 */
const compiled = new Map<string, ValidateFunction>()
const makeAjv = (validateSchema: boolean): Ajv => {
  const ajv = new Ajv({ allErrors: false, strict: false, validateFormats: true, validateSchema })
  addFormats(ajv)
  return ajv
}
const metaChecker = makeAjv(true)
const MAX_COMPILED = 512

const compile = (schema: Json.JsonObject): ValidateFunction => {
  const key = JSON.stringify(schema)
  const known = compiled.get(key)
  if (known !== undefined) {
    compiled.delete(key)
    compiled.set(key, known)
    return known
  }
  // The schema is checked against its meta-schema by one shared instance: a fresh instance would compile the
  // meta-schema again for every schema (12 ms a tool, against 1.5 ms so).
  if (!metaChecker.validateSchema(schema)) throw new Error(`schema is invalid: ${metaChecker.errorsText(metaChecker.errors)}`)
  const ajv = makeAjv(false)
  const validate = ajv.compile(schema)
  compiled.set(key, validate)
  for (const oldest of compiled.keys()) {
    if (compiled.size <= MAX_COMPILED) break
    compiled.delete(oldest)
  }
  return validate
}

/** The path of an Ajv error in the arguments, as property keys (array indices as numbers). */
const pathOf = (error: ErrorObject): ReadonlyArray<PropertyKey> => {
  const base = error.instancePath === ""
    ? []
    : error.instancePath.slice(1).split("/").map((segment) => {
      const key = segment.replaceAll("~1", "/").replaceAll("~0", "~")
      return /^\d+$/.test(key) ? Number(key) : key
    })
  const params: Record<string, unknown> = error.params
  if (error.keyword === "required" && typeof params.missingProperty === "string") return [...base, params.missingProperty]
  if (error.keyword === "additionalProperties" && typeof params.additionalProperty === "string") return [...base, params.additionalProperty]
  return base
}

const messageOf = (error: ErrorObject): string => {
  const params: Record<string, unknown> = error.params
  switch (error.keyword) {
    case "required":
      return "is missing"
    case "additionalProperties":
      return "is not allowed (no such property)"
    case "enum":
      return `must be one of ${JSON.stringify(params.allowedValues)}`
    default:
      return error.message ?? error.keyword
  }
}

/**
 * The error worth reporting. Without `allErrors`, Ajv stops at the first failing keyword; when that is a
 * combinator (`oneOf`, `anyOf`), the errors of its branches come first and its own last. A branch error deeper in
 * the arguments than the combinator says what is wrong (`$.to.email must match format "email"`); otherwise the
 * combinator's own does (`$.to must match exactly one schema in oneOf`).
 */
const mostUseful = (errors: ReadonlyArray<ErrorObject>): ErrorObject | undefined => {
  const last = errors[errors.length - 1]
  if (last === undefined || (last.keyword !== "oneOf" && last.keyword !== "anyOf")) return errors[0]
  let best = last
  for (const error of errors) {
    if (error.instancePath.startsWith(last.instancePath) && error.instancePath.length > best.instancePath.length) best = error
  }
  return best
}

const OPEN_KEYWORDS = ["additionalProperties", "patternProperties", "unevaluatedProperties", "allOf", "$ref", "if"]

/**
 * The schema with every object schema that says nothing about other properties closed (`additionalProperties:
 * false`): an argument the tool does not declare is refused as invalid, never passed on or dropped silently, as for
 * Effect Schema tools. An object that says `additionalProperties` (or `patternProperties`), or is composed with
 * `allOf`/`$ref`/`if` (where closing one part would refuse the properties of another), is left as written.
 * Descends into `properties`, `items`, `prefixItems`, `oneOf`/`anyOf` branches and `$defs`/`definitions`.
 */
export const closeObjects = (schema: Json.JsonObject): Json.JsonObject => {
  const close = (node: Json.Json): Json.Json => {
    if (Array.isArray(node)) return node.map(close)
    if (!Json.isObject(node)) return node
    const out: Record<string, Json.Json> = { ...node }
    for (const key of ["properties", "$defs", "definitions"]) {
      const children = node[key]
      if (Json.isObject(children)) out[key] = Object.fromEntries(Object.entries(children).map(([k, v]) => [k, close(v)]))
    }
    for (const key of ["items", "prefixItems", "oneOf", "anyOf"]) {
      const child = node[key]
      if (child !== undefined) out[key] = close(child)
    }
    const isObject = node.type === "object" || Json.isObject(node.properties)
    if (isObject && OPEN_KEYWORDS.every((k) => node[k] === undefined)) out.additionalProperties = false
    return out
  }
  const closed = close(schema)
  return Json.isObject(closed) ? closed : schema
}

/** Why a raw JSON Schema cannot be used, or undefined. */
export const invalidSchema = (schema: Json.JsonObject): string | undefined => {
  try {
    compile(schema)
    return undefined
  } catch (cause) {
    return cause instanceof Error ? cause.message : String(cause)
  }
}

/**
 * An Effect Schema that accepts what `schema` accepts (decoding and encoding alike) and whose JSON Schema, as the
 * model sees it, is `schema` itself. Throws on a schema Ajv cannot compile.
 */
export const fromJsonSchema = <Args = Json.Json>(schema: Json.JsonObject): Schema.Schema<Args, Args> => {
  const validate = compile(schema)
  // What the schema accepts is what the tool's author says `Args` is (`defineTool<Args>`).
  const accepts = (input: unknown): input is Args => validate(input)
  const check = (input: unknown, ast: Schema.Schema.Any["ast"]) => {
    if (accepts(input)) return ParseResult.succeed(input)
    const error = mostUseful(validate.errors ?? [])
    if (error === undefined) return ParseResult.fail(new ParseResult.Type(ast, input, "does not match the JSON Schema"))
    const issue = new ParseResult.Type(ast, input, messageOf(error))
    const [head, ...tail] = pathOf(error)
    return ParseResult.fail(head === undefined ? issue : new ParseResult.Pointer([head, ...tail], input, issue))
  }
  return Schema.declare([], {
    decode: () => (input, _options, ast) => check(input, ast),
    encode: () => (input, _options, ast) => check(input, ast)
  }, { jsonSchema: schema, ...(typeof schema.description === "string" ? { description: schema.description } : {}) })
}
