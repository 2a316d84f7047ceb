/**
 * The guard's compiler (see `exactGuard.ts`): a schema's AST compiled once, per direction, into a check answering
 * "would decoding (or encoding) this value fail, return the value itself, or something the check cannot tell?".
 * What it does not know (a transformation, a class, an index signature, a suspended schema) answers `Unknown`.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as SchemaAST from "effect/SchemaAST"

/** What decoding would do: fail, return the input itself, or something the guard cannot tell (decode to know). */
type Verdict = 0 | 1 | 2
const Rejects = 0
export const Same = 1
const Unknown = 2

/** A compiled check: the verdict on one value. */
export type Check = (u: unknown) => Verdict

/** Which way the value goes through the schema: the two agree but for a declaration's own functions. */
export type Direction = "decode" | "encode"

const unknown: Check = () => Unknown
const is = (test: (u: unknown) => boolean): Check => (u) => (test(u) ? Same : Rejects)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const typeLiteral = (ast: SchemaAST.TypeLiteral, direction: Direction): Check => {
  if (ast.indexSignatures.length > 0) return unknown
  const props: Array<readonly [string, boolean, Check]> = []
  for (const p of ast.propertySignatures) {
    if (typeof p.name !== "string") return unknown
    props.push([p.name, p.isOptional, compile(p.type, direction)])
  }
  return (u) => {
    if (!isRecord(u)) return typeof u === "object" && u !== null ? Unknown : Rejects
    let verdict: Verdict = Same
    let present = 0
    for (let i = 0; i < props.length; i++) {
      const [name, optional, check] = props[i]!
      if (!Object.hasOwn(u, name)) {
        if (!optional) return Rejects
        continue
      }
      present++
      const value = u[name]
      const r = value === undefined ? Unknown : check(value)
      if (r === Rejects) return Rejects
      if (r === Unknown) verdict = Unknown
    }
    // Excess keys are dropped by decoding: the decoded value is not the input.
    return present === keyCount(u) ? verdict : Unknown
  }
}

/**
 * The keys `for in` visits in `u`: its own enumerable ones, and inherited enumerable ones (which only raise the count,
 * so the check answers `Unknown` and decoding decides). Counted without `Object.keys`' array: that array per object
 * checked was 2-3 MB of a 10,000-event replay's allocation (bench/scale/README.md).
 */
const keyCount = (u: object): number => {
  let n = 0
  for (const _key in u) n++
  return n
}

const array = (ast: SchemaAST.TupleType, direction: Direction): Check => {
  if (ast.elements.length > 0 || ast.rest.length !== 1) return unknown
  const item = compile(ast.rest[0]!.type, direction)
  return (u) => {
    if (!Array.isArray(u)) return Rejects
    let verdict: Verdict = Same
    for (let i = 0; i < u.length; i++) {
      const r = item(u[i])
      if (r === Rejects) return Rejects
      if (r === Unknown) verdict = Unknown
    }
    return verdict
  }
}

/** The literal a struct requires of property `key`, if it is a struct that does. */
const literalOf = (ast: SchemaAST.AST, key: string): SchemaAST.LiteralValue | undefined => {
  if (ast._tag !== "TypeLiteral") return undefined
  const p = ast.propertySignatures.find((p) => p.name === key)
  return p !== undefined && !p.isOptional && p.type._tag === "Literal" ? p.type.literal : undefined
}

/** The property the union's structs are told apart by: one every struct member requires as a literal (`_tag`, `role`). */
const discriminantOf = (ast: SchemaAST.Union): string | undefined => {
  const first = ast.types.find((m) => m._tag === "TypeLiteral")
  if (first === undefined || first._tag !== "TypeLiteral") return undefined
  for (const p of first.propertySignatures) {
    const key = p.name
    if (typeof key === "string" && ast.types.every((m) => m._tag !== "TypeLiteral" || literalOf(m, key) !== undefined)) return key
  }
  return undefined
}

/**
 * Decoding a union takes the first member that accepts: so does this, and that member's verdict is the union's. A
 * plain object with a defined discriminant (`_tag`, `role`) is tried only against the members that require that
 * value of it and the members that require none, in the union's order: every other member rejects it (a struct
 * rejects a required property of another literal), so the answer is the same, without trying each member of a union
 * of many (the event payloads).
 */
const union = (ast: SchemaAST.Union, direction: Direction): Check => {
  const members = ast.types.map((member) => compile(member, direction))
  const first = (candidates: ReadonlyArray<Check>, u: unknown): Verdict => {
    for (let i = 0; i < candidates.length; i++) {
      const r = candidates[i]!(u)
      if (r !== Rejects) return r
    }
    return Rejects
  }
  const key = discriminantOf(ast)
  if (key === undefined) return (u) => first(members, u)
  const tags = ast.types.map((member) => literalOf(member, key))
  const untagged = members.filter((_, i) => tags[i] === undefined)
  const byTag = new Map<unknown, ReadonlyArray<Check>>()
  for (const tag of tags) {
    if (tag !== undefined && !byTag.has(tag)) byTag.set(tag, members.filter((_, i) => tags[i] === tag || tags[i] === undefined))
  }
  return (u) => {
    if (!isRecord(u) || !Object.hasOwn(u, key) || u[key] === undefined) return first(members, u)
    return first(byTag.get(u[key]) ?? untagged, u)
  }
}

const refinement = (ast: SchemaAST.Refinement, direction: Direction): Check => {
  const from = compile(ast.from, direction)
  return (u) => {
    const r = from(u)
    if (r !== Same) return r
    return Option.isNone(ast.filter(u, SchemaAST.defaultParseOption, ast)) ? Same : Rejects
  }
}

/** A declaration without type parameters (`Schema.declare(is)`): its own decoding, which answers synchronously. */
const declaration = (ast: SchemaAST.Declaration, direction: Direction): Check => {
  if (ast.typeParameters.length > 0) return unknown
  const parse = direction === "decode" ? ast.decodeUnknown() : ast.encodeUnknown()
  return (u) => {
    const result = parse(u, SchemaAST.defaultParseOption, ast)
    if (!Either.isEither(result)) return Unknown
    if (Either.isLeft(result)) return Rejects
    return result.right === u ? Same : Unknown
  }
}

const compile = (ast: SchemaAST.AST, direction: Direction): Check => {
  switch (ast._tag) {
    case "StringKeyword":
      return is((u) => typeof u === "string")
    case "NumberKeyword":
      return is((u) => typeof u === "number")
    case "BooleanKeyword":
      return is((u) => typeof u === "boolean")
    case "Literal": {
      const literal = ast.literal
      return is((u) => u === literal)
    }
    case "TypeLiteral":
      return typeLiteral(ast, direction)
    case "TupleType":
      return array(ast, direction)
    case "Union":
      return union(ast, direction)
    case "Refinement":
      return refinement(ast, direction)
    case "Declaration":
      return declaration(ast, direction)
    default:
      return unknown
  }
}

const compiled = { decode: new WeakMap<SchemaAST.AST, Check>(), encode: new WeakMap<SchemaAST.AST, Check>() }

/** The check of `ast` in `direction`: compiled on first use, then kept (by AST, for as long as the schema lives). */
export const checkOf = (ast: SchemaAST.AST, direction: Direction): Check => {
  let check = compiled[direction].get(ast)
  if (check === undefined) {
    check = compile(ast, direction)
    compiled[direction].set(ast, check)
  }
  return check
}
