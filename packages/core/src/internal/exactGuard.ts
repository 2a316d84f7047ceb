/**
 * A fast answer to "would decoding this value with the schema return the value itself?", compiled once from the
 * schema's AST. Replay decodes every payload it reads; for the common payload (plain JSON that is exactly what the
 * schema describes: no excess keys, no transformation) the decoded value equals the parsed one, so the parse can be
 * skipped along with the copy it builds (a tenth of a replay, and much of its garbage). Whatever the guard cannot
 * vouch for (a transformation, a class, excess keys, a recursive schema, a failure) goes to the schema's own decoding,
 * which stays the authority and writes the error.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as SchemaAST from "effect/SchemaAST"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** What decoding would do: fail, return the input itself, or something the guard cannot tell (decode to know). */
type Verdict = 0 | 1 | 2
const Rejects = 0
const Same = 1
const Unknown = 2

type Check = (u: unknown) => Verdict

/** Which way the value goes through the schema: the two agree but for a declaration's own functions. */
type Direction = "decode" | "encode"

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
    return present === Object.keys(u).length ? verdict : Unknown
  }
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

const checkOf = (ast: SchemaAST.AST, direction: Direction): Check => {
  let check = compiled[direction].get(ast)
  if (check === undefined) {
    check = compile(ast, direction)
    compiled[direction].set(ast, check)
  }
  return check
}

/**
 * A guard that is true only when decoding `u` with `schema` would succeed and return `u` itself (so `u` may be used
 * as the decoded value); false means "decode to know".
 */
export const exactGuard = <A, I, R>(schema: Schema.Schema<A, I, R>): (u: unknown) => u is A => {
  const check = checkOf(schema.ast, "decode")
  return (u: unknown): u is A => check(u) === Same
}

/** `exactGuard` of a schema given by its AST: true only when decoding `u` would succeed and return `u` itself. */
export const exactCheck = (ast: SchemaAST.AST): (u: unknown) => boolean => {
  const check = checkOf(ast, "decode")
  return (u) => check(u) === Same
}

/** `exactGuard(schema)(u)` without building the guard: for a schema met once per call (a workflow's step). */
export const isExact = <A, I, R>(schema: Schema.Schema<A, I, R>, u: unknown): u is A => checkOf(schema.ast, "decode")(u) === Same

/**
 * `decodeExact(schema)(u)` without building the decoder: the schema's own decoding is made only when the guard cannot
 * vouch for `u` (a workflow's step decodes one logged value per call; building both each time was a tenth of a replay).
 */
export const decodeExactOnce = <A, I>(schema: Schema.Schema<A, I, never>, u: unknown): Either.Either<A, ParseResult.ParseError> =>
  isExact(schema, u) ? Either.right(u) : Schema.decodeUnknownEither(schema)(u)

/**
 * `Schema.decodeUnknownEither(schema)`, answering without a parse when the guard vouches for the input. The options
 * may only change what a failing or transformed input gives (`errors`, `onExcessProperty`): the guard's inputs have
 * neither.
 */
export const decodeExact = <A, I>(schema: Schema.Schema<A, I, never>) => {
  const exact = exactGuard(schema)
  const decode = Schema.decodeUnknownEither(schema)
  return (u: unknown, options?: SchemaAST.ParseOptions): Either.Either<A, ParseResult.ParseError> =>
    exact(u) ? Either.right(u) : decode(u, options)
}

/**
 * `Schema.encodeEither(schema)`, answering without a parse when the value's way through the schema has no
 * transformation, no excess key and no failure: encoding returns such a value unchanged.
 */
export const encodeExact = <A, I>(schema: Schema.Schema<A, I, never>) => {
  const check = checkOf(schema.ast, "encode")
  const exact = (a: A): a is A & I => check(a) === Same
  const encode = Schema.encodeEither(schema)
  return (a: A, options?: SchemaAST.ParseOptions): Either.Either<I, ParseResult.ParseError> =>
    exact(a) ? Either.right(a) : encode(a, options)
}

/**
 * `encodeExact(schema)(a)` without building the encoder: for a schema met once per call (a workflow's step value),
 * the schema's own encoding made only when the guard cannot vouch for `a`.
 */
export const encodeExactOnce = <A, I>(schema: Schema.Schema<A, I, never>, a: A): Either.Either<I, ParseResult.ParseError> =>
  checkOf(schema.ast, "encode")(a) === Same ? Either.right(a as A & I) : Schema.encodeEither(schema)(a)
