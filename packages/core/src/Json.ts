/**
 * JSON values as they travel through the log: tool arguments and results, step values, run input and output.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { canonicalJson, sha256 } from "./internal/hash.js"

/** A JSON value. */
export type Json = string | number | boolean | null | ReadonlyArray<Json> | { readonly [key: string]: Json }

/**
 * True for a JSON value as `JSON.parse` produces it: strings, finite numbers, booleans, null, arrays, and plain
 * objects whose values are JSON (no `undefined`, no functions, no class instances).
 */
export const isJson = (u: unknown): u is Json => {
  switch (typeof u) {
    case "string":
    case "boolean":
      return true
    case "number":
      return Number.isFinite(u)
    case "object": {
      if (u === null) return true
      if (Array.isArray(u)) {
        for (let i = 0; i < u.length; i++) if (!isJson(u[i])) return false
        return true
      }
      const proto: unknown = Object.getPrototypeOf(u)
      if (proto !== Object.prototype && proto !== null) return false
      // `for in` over a plain object (its prototype has no enumerable key) visits its own keys, without the array
      // `Object.values` builds: every payload a replay reads has a JSON field or two, checked here.
      const record = u as { readonly [key: string]: unknown }
      for (const key in record) if (!isJson(record[key])) return false
      return true
    }
    default:
      return false
  }
}

/**
 * Schema of any JSON value. A declared schema with one recursive check rather than a recursive union: the
 * log decodes a JSON value in every payload it reads back, and a union decoded node by node costs several
 * times the `JSON.parse` of the same text.
 */
export const Json: Schema.Schema<Json> = Schema.declare(isJson, {
  identifier: "Json",
  description: "any JSON value",
  jsonSchema: {},
  // fast-check's JSON values, as a `Json` (its arrays are not readonly).
  arbitrary: () => (fc) => fc.jsonValue().map((value) => {
    const checked = fromUnknown(value)
    return checked.ok ? checked.json : null
  })
})

/** A JSON object (what a JSON Schema document, or a tool's arguments, is). */
export type JsonObject = { readonly [key: string]: Json }

/** Schema of a JSON object. */
export const JsonObject: Schema.Schema<JsonObject> = Schema.Record({ key: Schema.String, value: Json })

/**
 * Checks that a value is plain JSON (finite numbers, plain objects and arrays, no undefined inside arrays)
 * and returns it typed as such; `undefined` object fields are dropped as `JSON.stringify` drops them.
 */
export const fromUnknown = (value: unknown, path = "$"): { readonly ok: true; readonly json: Json } | { readonly ok: false; readonly error: string } => {
  if (value === null || typeof value === "string" || typeof value === "boolean") return { ok: true, json: value }
  if (typeof value === "number") {
    return Number.isFinite(value) ? { ok: true, json: value } : { ok: false, error: `${path} is ${value}, not a JSON number` }
  }
  if (Array.isArray(value)) {
    const out: Array<Json> = []
    for (let i = 0; i < value.length; i++) {
      const r = fromUnknown(value[i], `${path}[${i}]`)
      if (!r.ok) return r
      out.push(r.json)
    }
    return { ok: true, json: out }
  }
  if (typeof value === "object") {
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) return { ok: false, error: `${path} is a ${proto?.constructor?.name ?? "object"}, not a plain JSON object` }
    const out: Record<string, Json> = {}
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue
      const r = fromUnknown(v, `${path}.${k}`)
      if (!r.ok) return r
      out[k] = r.json
    }
    return { ok: true, json: out }
  }
  return { ok: false, error: `${path} is ${typeof value}, not JSON` }
}

/** True for a JSON object (not an array, not null). */
export const isObject = (value: Json | undefined): value is JsonObject =>
  value !== null && value !== undefined && typeof value === "object" && !Array.isArray(value)

/**
 * Canonical JSON (in the manner of RFC 8785: object keys sorted, no whitespace). Two values are the same JSON exactly
 * when their canonical texts are equal. (The log's hash chain covers payloads as stored, not this text.)
 *
 * @example
 * Json.canonical({ b: 1, a: [true, null] }) // '{"a":[true,null],"b":1}'
 */
export const canonical = (value: Json): string => canonicalJson(value)

/**
 * SHA-256 (hex) of a value's canonical JSON: a content hash that does not depend on key order or spacing, for
 * comparing tool arguments and results across runs and replays.
 */
export const hash = (value: Json): string => sha256(canonicalJson(value))
