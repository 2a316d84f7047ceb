/**
 * YAML documents decoded with an Effect Schema, with every problem located in the source: the `yaml` library
 * parses (its errors carry line and column), the schema decodes, and a schema issue's path is walked back through
 * the document's nodes to the line and column of the offending key or value. For plugin configs written in YAML
 * (a sandbox policy) and for hosts reading YAML (a plan).
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument } from "yaml"

/** A problem in a YAML document: where (1-based line and column, when known), at which path, and why. */
export interface Issue {
  readonly kind: "yaml" | "schema"
  readonly line?: number | undefined
  readonly column?: number | undefined
  /** `$`, `$.steps[0].tool`, ... */
  readonly path: string
  readonly reason: string
}

/** A parsed document: its value, and where each path of it was written. */
export interface Source {
  readonly value: unknown
  /** Line and column of the node at `path` (of its key when `key` is set); the nearest existing ancestor otherwise. */
  readonly locate: (path: ReadonlyArray<PropertyKey>, key?: boolean) => { readonly line: number; readonly column: number } | undefined
}

export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : `${acc}.${String(key)}`), "$")

/** Parses `$.a[0].b` back into `["a", 0, "b"]` (the form tools report argument paths in). */
export const parsePath = (path: string): ReadonlyArray<PropertyKey> => {
  const out: Array<PropertyKey> = []
  const re = /\.([^.[\]]+)|\[(\d+)\]/g
  for (const m of path.slice(1).matchAll(re)) out.push(m[2] === undefined ? m[1]! : Number(m[2]))
  return out
}

/** Parses one YAML document (aliases bounded, duplicate keys refused); an empty document is `null`. */
export const parse = (text: string): Either.Either<Source, Issue> => {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true })
  const position = (offset: number | undefined) => {
    if (offset === undefined) return undefined
    const { line, col } = lineCounter.linePos(offset)
    return { line: Math.max(line, 1), column: col }
  }
  const error = doc.errors[0]
  if (error !== undefined) {
    const at = position(error.pos[0])
    return Either.left({ kind: "yaml", line: at?.line, column: at?.column, path: "$", reason: error.message.split("\n")[0]! })
  }
  let value: unknown
  try {
    value = doc.toJS({ maxAliasCount: 100 })
  } catch (e) {
    return Either.left({ kind: "yaml", path: "$", reason: e instanceof Error ? e.message : String(e) })
  }
  const locate: Source["locate"] = (path, key = false) => {
    let node: unknown = doc.contents
    let keyNode: unknown = undefined
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment))
        if (pair === undefined) break
        keyNode = pair.key
        node = pair.value
      } else if (isSeq(node) && typeof segment === "number" && node.items[segment] !== undefined) {
        keyNode = undefined
        node = node.items[segment]
      } else break
    }
    const target = key && keyNode !== undefined ? keyNode : node
    const range = target !== null && typeof target === "object" && "range" in target && Array.isArray(target.range) ? target.range : undefined
    return position(typeof range?.[0] === "number" ? range[0] : undefined)
  }
  return Either.right({ value, locate })
}

/**
 * Decodes a parsed document with `schema`; unknown keys are refused (a misspelt field is an error, not a silently
 * ignored one). The issue points at the first problem.
 */
export const decode = <A, I>(source: Source, schema: Schema.Schema<A, I>): Either.Either<A, Issue> =>
  Either.mapLeft(Schema.decodeUnknownEither(schema)(source.value, { errors: "first", onExcessProperty: "error" }), (error) => {
    const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
    const path = first?.path ?? []
    // An unexpected key is pointed at by its key; a wrong value by its value; a missing key by its parent.
    const at = source.locate(path, first?._tag === "Unexpected")
    const reason = first === undefined ? error.message : first._tag === "Unexpected" ? `unknown field "${String(path[path.length - 1])}"` : first.message
    return { kind: "schema", line: at?.line, column: at?.column, path: formatPath(path), reason }
  })
