/**
 * The cursor of a page of `listRunsPage`: where the page ended in the order runs are listed (newest first, runs
 * created in the same millisecond in the store's own order), as opaque text. It names a position, not a filter: the
 * next page is asked with the same filter and this cursor.
 */
import * as Either from "effect/Either"
import { InvalidInput } from "../Errors.js"

/**
 * A position: the last listed run's creation time and its id. Runs created in the same millisecond are ordered by the
 * store's own tie-breaker (SQLite's rowid, the run id on PostgreSQL, the in-memory store's creation count), which each
 * store looks up from the run id: a cursor never shows a store-wide counter, which would tell a tenant how many runs
 * every tenant made between two of its pages.
 */
export interface Position {
  readonly createdAt: number
  readonly runId: string
}

const VERSION = "r2"

/** The cursor's text: `r2.` and base64url JSON, so a person copies it whole and no shell quoting is needed. */
export const encode = (position: Position): string =>
  `${VERSION}.${Buffer.from(JSON.stringify([position.createdAt, position.runId]), "utf8").toString("base64url")}`

const invalid = (text: string, reason: string) =>
  new InvalidInput({
    what: "cursor",
    reason: `"${text.length > 80 ? `${text.slice(0, 80)}...` : text}" ${reason}: pass the cursor the previous page printed, unchanged (\`next\`)`
  })

/** The position a cursor names; `InvalidInput` for text no page gave out (or a cursor of an older version, `r1.`). */
export const decode = (text: string): Either.Either<Position, InvalidInput> => {
  const dot = text.indexOf(".")
  const version = dot < 0 ? undefined : text.slice(0, dot)
  if (version === "r1") return Either.left(invalid(text, "was given out by an older version of Artana: list again from the first page"))
  if (version !== VERSION) return Either.left(invalid(text, "is not a run list cursor"))
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(text.slice(dot + 1), "base64url").toString("utf8"))
  } catch {
    return Either.left(invalid(text, "is not a run list cursor"))
  }
  if (!Array.isArray(value) || value.length !== 2) return Either.left(invalid(text, "is not a run list cursor"))
  const [createdAt, runId]: ReadonlyArray<unknown> = value
  if (typeof createdAt !== "number" || !Number.isFinite(createdAt) || typeof runId !== "string") {
    return Either.left(invalid(text, "is not a run list cursor"))
  }
  return Either.right({ createdAt, runId })
}
