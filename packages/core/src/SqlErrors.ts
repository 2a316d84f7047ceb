/**
 * Errors of the SQL stores and the retries they take: a driver failure as the `StoreError` callers see, its code and
 * text, `withTransaction`'s defects put back in the error channel, and a cheap retry for statements on a hot path.
 * Shared by every SQL store (`SqlEventStore`, `SqlTaskQueue`, `SqlMigrations`, and the stores of other packages).
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
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

/**
 * `sql.withTransaction(body)`, its defects in the error channel (`transactionDefects`), failing with the body's own
 * failure when the rollback after it failed as well: SQLite may have rolled the transaction back itself (a full disk,
 * an I/O error), and then the rollback's "no such savepoint" or "no transaction is active" would hide why.
 */
export const transaction = <A, E, R>(sql: SqlClient.SqlClient, body: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.suspend(() => {
    let own: Cause.Cause<E> | undefined
    const tracked = Effect.tapErrorCause(body, (cause) => Effect.sync(() => void (own = cause)))
    return Effect.catchAllCause(transactionDefects(sql.withTransaction(tracked)), (cause) => Effect.failCause(own ?? cause))
  })

/**
 * The driver's error code (`SQLITE_BUSY`, `23505`, ...), or "": of a `SqlError`, or of the `StoreError` made of one
 * (`storeError` keeps the driver's error as its cause).
 */
export const errorCode = (error: { readonly cause?: unknown }): string =>
  Predicate.hasProperty(error.cause, "code") && typeof error.cause.code === "string" ? error.cause.code : ""

/**
 * Whether a failure inside a SQLite transaction may have ended the transaction. SQLite rolls a whole transaction back
 * by itself on some errors (a full disk, an I/O error, out of memory): a savepoint's rollback then fails, and the
 * statements after it would run in a new transaction of their own. Only a constraint SQLite refused a statement for
 * (`SQLITE_CONSTRAINT...`, which undoes that statement alone) or a failure no statement made (a batch refused before
 * it was written) leaves the transaction usable; a defect or an interruption may have ended it as well.
 */
export const endsSqliteTransaction = (cause: Cause.Cause<unknown>): boolean =>
  Cause.isDie(cause) || Cause.isInterrupted(cause) ||
  Option.exists(Cause.failureOption(cause), (error) => error instanceof SqlError && !errorCode(error).startsWith("SQLITE_CONSTRAINT"))

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
