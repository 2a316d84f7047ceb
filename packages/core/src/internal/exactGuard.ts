/**
 * A fast answer to "would decoding this value with the schema return the value itself?", compiled once from the
 * schema's AST. Replay decodes every payload it reads; for the common payload (plain JSON that is exactly what the
 * schema describes: no excess keys, no transformation) the decoded value equals the parsed one, so the parse can be
 * skipped along with the copy it builds (a tenth of a replay, and much of its garbage). Whatever the guard cannot
 * vouch for (a transformation, a class, excess keys, a recursive schema, a failure) goes to the schema's own decoding,
 * which stays the authority and writes the error.
 */
import * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import { checkOf, Same } from "./exactCompile.js"

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
