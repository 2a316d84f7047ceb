/**
 * The cursor of a page of `listRunsPage`: where the page ended in the order runs are listed (newest first, runs
 * created in the same millisecond in the store's own order), as opaque text. It names a position, not a filter: the
 * next page is asked with the same filter and this cursor.
 */
import * as Either from "effect/Either"
import { InvalidInput } from "../Errors.js"

/**
 * A position: the last listed run's creation time and the store's tie-breaker for it (SQLite's rowid, the run id on
 * PostgreSQL, the in-memory store's creation count).
 */
export interface Position {
  readonly createdAt: number
  readonly key: number | string
}

const VERSION = "r1"

/** The cursor's text: `r1.` and base64url JSON, so a person copies it whole and no shell quoting is needed. */
export const encode = (position: Position): string =>
  `${VERSION}.${Buffer.from(JSON.stringify([position.createdAt, position.key]), "utf8").toString("base64url")}`

const invalid = (text: string, reason: string) =>
  new InvalidInput({
    what: "cursor",
    reason: `"${text.length > 80 ? `${text.slice(0, 80)}...` : text}" ${reason}: pass the cursor the previous page printed, unchanged (\`next\`)`
  })

/** The position a cursor names; `InvalidInput` for text no page gave out, or a cursor of a store of another kind. */
export const decode = (text: string, keyType: "number" | "string"): Either.Either<Position, InvalidInput> => {
  const dot = text.indexOf(".")
  if (dot < 0 || text.slice(0, dot) !== VERSION) return Either.left(invalid(text, "is not a run list cursor"))
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(text.slice(dot + 1), "base64url").toString("utf8"))
  } catch {
    return Either.left(invalid(text, "is not a run list cursor"))
  }
  if (!Array.isArray(value) || value.length !== 2) return Either.left(invalid(text, "is not a run list cursor"))
  const [createdAt, key]: ReadonlyArray<unknown> = value
  if (typeof createdAt !== "number" || !Number.isFinite(createdAt)) return Either.left(invalid(text, "is not a run list cursor"))
  if (typeof key !== keyType || (typeof key === "number" && !Number.isSafeInteger(key))) {
    return Either.left(invalid(text, "was given out by a store of another kind"))
  }
  return typeof key === "number" || typeof key === "string" ? Either.right({ createdAt, key }) : Either.left(invalid(text, "is not a run list cursor"))
}
