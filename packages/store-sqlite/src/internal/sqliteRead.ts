/**
 * The store's own SQLite read (`SqlEventStore.ReadDialect` for its client): the pages of `readEvents` run on the
 * driver's own prepared statements, rows as arrays (`raw`), under the client's one permit.
 *
 * Why not through the `SqlClient`: each of its statements costs a span, a compile, a cache lookup and a few fibers
 * (~100 us of CPU for a page of one event, where the bare statement costs ~15 us), once per page of a replay, a
 * resume's catch-up and every read of a run's head.
 */
import type { SqlEventStore } from "@artana/core"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type { Lane } from "./sqliteClient.js"
import type { Database, Statement } from "./sqliteDriver.js"

/** More distinct statements than this and the cache starts again (the store reads with one). */
const CACHE_LIMIT = 16

/** Rows read with `raw` on: arrays of values. */
const isRows = (rows: Array<unknown>): rows is Array<ReadonlyArray<unknown>> => rows.every((row) => Array.isArray(row))

/** The read on the connection of `lane`. */
export const make = (lane: Lane): SqlEventStore.ReadValues => {
  const cache = new Map<string, Statement>()
  const rows = (db: Database, text: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError> => {
    try {
      let statement = cache.get(text)
      if (statement === undefined) {
        if (cache.size >= CACHE_LIMIT) cache.clear()
        statement = db.prepare(text)
        statement.raw(true)
        cache.set(text, statement)
      }
      const read = statement.all(...params)
      return isRows(read) ? Effect.succeed(read) : Effect.fail(new SqlError({ message: "a read statement gave rows that are not arrays" }))
    } catch (cause) {
      return Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
    }
  }
  return (text, params, inTransaction) =>
    Effect.withFiberRuntime((fiber) => {
      // In the caller's transaction of this client (its fiber holds the connection), or when none holds it: at once,
      // synchronously (nothing else runs on the connection meanwhile). Else after the transaction that holds it.
      if (inTransaction && lane.holds(fiber.currentContext)) return Effect.flatten(lane.inTransaction((db) => rows(db, text, params)))
      if (lane.idle()) return lane.now((db) => rows(db, text, params))
      return Effect.flatten(lane.exclusive((db) => rows(db, text, params)))
    })
}
