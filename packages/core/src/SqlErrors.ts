/**
 * Errors of the SQL stores and the retries they take: a driver failure as the `StoreError` callers see, its code and
 * text, `withTransaction`'s defects put back in the error channel, and a cheap retry for statements on a hot path.
 * Shared by every SQL store (`SqlEventStore`, `SqlTaskQueue`, `SqlMigrations`, and the stores of other packages).
 *
 * @since 0.1.0
 */
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { StoreError } from "./Errors.js"

/** The text of a driver error's cause. */
export const causeText = (cause: unknown): string =>
  Predicate.hasProperty(cause, "message") && typeof cause.message === "string" ? cause.message : String(cause)

/** A driver failure as the `StoreError` callers see, naming the operation. */
export const storeError = (operation: string, error: SqlError): StoreError =>
  new StoreError({ operation, reason: causeText(error.cause ?? error), cause: error.cause ?? error })

/**
 * `withTransaction` turns a failed COMMIT or ROLLBACK into a defect; for a store that is a driver failure like any
 * other, so it is put back in the error channel.
 */
export const transactionDefects = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchSomeDefect(effect, (defect) => (defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none()))

/** The driver's error code (`SQLITE_BUSY`, `23505`, ...), or "". */
export const errorCode = (error: SqlError): string =>
  Predicate.hasProperty(error.cause, "code") && typeof error.cause.code === "string" ? error.cause.code : ""

/** SQLite's `SQLITE_BUSY` (and its extended codes): the database was locked. */
export const sqliteBusy = (error: SqlError): boolean => errorCode(error).startsWith("SQLITE_BUSY")

/**
 * `effect`, run again at once while it fails with an error `again` accepts, at most `times` more times. The retry
 * is built when a failure comes, not on every call as `Effect.retry`'s schedule is: for statements on a hot path.
 */
export const retryWhile = <A, E, R>(effect: Effect.Effect<A, E, R>, again: (error: E) => boolean, times: number): Effect.Effect<A, E, R> =>
  times === 0 ? effect : Effect.catchIf(effect, again, () => retryWhile(effect, again, times - 1))

/**
 * A database URL with its password hidden (the user info's, or a `password=` parameter's), for messages and logs.
 *
 * @example
 * redactUrl("postgres://app:s3cret@db:5432/artana") // "postgres://app:***@db:5432/artana"
 */
export const redactUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    if (parsed.searchParams.has("password")) parsed.searchParams.set("password", "***")
    return parsed.toString()
  } catch {
    // Not a URL the WHATWG parser takes (a key=value string): hide whatever follows a password.
    return url.replace(/(:\/\/[^:/@]*:)[^@]*@/, "$1***@").replace(/(password\s*=\s*)[^\s&]*/gi, "$1***")
  }
}
