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

/** Keywords by which a schema says, itself, what other properties an object may have: such an object is kept as written. */
const OPEN_KEYWORDS = ["additionalProperties", "patternProperties", "unevaluatedProperties"]

/** Sub-schemas that apply to the same object as their parent (their properties are the parent's too). */
const SAME_OBJECT = ["allOf", "if", "then", "else", "dependentSchemas"] as const

/**
 * The schema with every object schema that says nothing about other properties closed (`additionalProperties:
 * false`): an argument the tool does not declare is refused as invalid, never passed on or dropped silently, as for
 * Effect Schema tools. An object composed of parts (`allOf`, `if`/`then`/`else`, `dependentSchemas`, a local `$ref`
 * among them) is closed once, at its own level, over the properties every part declares (closing each part would
 * refuse the properties of the others); a part that says `additionalProperties` (or `patternProperties`) leaves it
 * as written. `oneOf`/`anyOf` branches are whole alternatives, each closed. Descends into `properties`, `items`,
 * `prefixItems`, the branches, `$defs`/`definitions`, and the properties of the parts.
 */
export const closeObjects = (schema: Json.JsonObject): Json.JsonObject => {
  const defs = (name: string): Json.Json | undefined => {
    for (const prefix of ["#/$defs/", "#/definitions/"]) {
      if (!name.startsWith(prefix)) continue
      const table = schema[prefix === "#/$defs/" ? "$defs" : "definitions"]
      const key = name.slice(prefix.length)
      if (Json.isObject(table) && Object.hasOwn(table, key)) return table[key]
    }
    return undefined
  }

  /** The parts that apply to `node`'s object itself: `node`, its composed parts, and local references, recursively. */
  const parts = (node: Json.JsonObject, seen: ReadonlySet<string> = new Set()): Array<Json.JsonObject> => {
    const out: Array<Json.JsonObject> = [node]
    const ref = node.$ref
    if (typeof ref === "string" && !seen.has(ref)) {
      const target = defs(ref)
      if (Json.isObject(target)) out.push(...parts(target, new Set([...seen, ref])))
    }
    for (const key of SAME_OBJECT) {
      const value = node[key]
      const children = Array.isArray(value) ? value : key === "dependentSchemas" && Json.isObject(value) ? Object.values(value) : [value]
      for (const child of children) if (Json.isObject(child)) out.push(...parts(child, seen))
    }
    return out
  }

  /** `node` with the schemas of its properties, items and branches closed (not `node` itself). */
  const inside = (node: Json.JsonObject): Record<string, Json.Json> => {
    const out: Record<string, Json.Json> = { ...node }
    for (const key of ["properties", "$defs", "definitions"]) {
      const children = node[key]
      if (Json.isObject(children)) out[key] = Object.fromEntries(Object.entries(children).map(([k, v]) => [k, close(v)]))
    }
    for (const key of ["items", "prefixItems", "oneOf", "anyOf"]) {
      const child = node[key]
      if (child !== undefined) out[key] = close(child)
    }
    for (const key of SAME_OBJECT) {
      const value = node[key]
      if (Array.isArray(value)) out[key] = value.map((v) => (Json.isObject(v) ? inside(v) : v))
      else if (key === "dependentSchemas" && Json.isObject(value)) {
        out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Json.isObject(v) ? inside(v) : v]))
      } else if (Json.isObject(value)) out[key] = inside(value)
    }
    return out
  }

  const close = (node: Json.Json): Json.Json => {
    if (Array.isArray(node)) return node.map(close)
    if (!Json.isObject(node)) return node
    const out = inside(node)
    const all = parts(node)
    const isObject = all.some((p) => p.type === "object" || (Array.isArray(p.type) && p.type.includes("object")) || Json.isObject(p.properties))
    // A reference alone is closed where it points (`$defs` are closed in place).
    const referenceOnly = typeof node.$ref === "string" && Object.keys(node).length === 1
    if (!isObject || referenceOnly || all.some((p) => OPEN_KEYWORDS.some((k) => p[k] !== undefined))) return out
    // Every property any part declares is one of this object's, under every schema a part gives it (closed, so a part
    // whose keyword the validator does not apply still has its nested objects closed); anything else is refused.
    const declared = new Map<string, Array<Json.Json>>()
    for (const p of all) {
      if (!Json.isObject(p.properties)) continue
      for (const [name, schema] of Object.entries(p.properties)) declared.set(name, [...(declared.get(name) ?? []), close(schema)])
    }
    out.properties = Object.fromEntries([...declared].map(([name, schemas]) => [name, schemas.length === 1 ? schemas[0]! : { allOf: schemas }]))
    out.additionalProperties = false
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
