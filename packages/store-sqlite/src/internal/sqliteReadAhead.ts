/**
 * The store's read-ahead (`SqlEventStore.readAhead`): a read-only connection of its own to the database file, in the
 * process's read-ahead worker thread, on the driver the store runs on (`sqliteDriver.ts`), reading the pages of a long
 * verified read while the main thread replays the page before. Not for a database in memory, a `file:` URI, nor a
 * read-only store's image of a file (only the store's connection sees those).
 */
import { SqlEventStore } from "@artana/core"
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"
import * as path from "node:path"
import type * as Scope from "effect/Scope"
import { driverName } from "./sqliteDriver.js"

/** What the worker's connection needs: its driver (better-sqlite3's module file, or `node:sqlite`), the file, the wait on a lock. */
interface Config {
  readonly driver: "node:sqlite" | "better-sqlite3"
  readonly module: string
  readonly filename: string
  readonly busyTimeoutMs: number
  /** SQLite's `cache_size` of the connection (see `CACHE_SIZE`). */
  readonly cacheSize: number
}

/**
 * The worker's page cache: 256 KiB (negative: KiB). It reads a run's pages in order, once each, so a cache serves it
 * little, and better-sqlite3's default (16 MB, its build's) filled as a long resume read its file: a 100,000-step
 * resume's peak RSS was ~25 MB higher with it (medians of 5 alternated runs; bench/scale/README.md).
 */
const CACHE_SIZE = -256

/**
 * Opens the worker's connection (evaluated there: self-contained, CommonJS). Read-only, a small page cache; the statements prepared once
 * (at most 16 kept), rows as arrays of values as the store's own read gives them (`sqliteRead.ts`).
 */
const OPENER = `(config) => {
  let db
  let prepare
  if (config.driver === "node:sqlite") {
    const { DatabaseSync } = require("node:sqlite")
    db = new DatabaseSync(config.filename, { readOnly: true })
    db.exec("PRAGMA busy_timeout = " + config.busyTimeoutMs)
    db.exec("PRAGMA cache_size = " + config.cacheSize)
    prepare = (text) => {
      const statement = db.prepare(text)
      statement.setReturnArrays(true)
      return statement
    }
  } else {
    const Database = require(config.module)
    db = new Database(config.filename, { readonly: true, timeout: config.busyTimeoutMs })
    db.exec("PRAGMA cache_size = " + config.cacheSize)
    prepare = (text) => db.prepare(text).raw(true)
  }
  const cache = new Map()
  return {
    rows: (text, params) => {
      let statement = cache.get(text)
      if (statement === undefined) {
        if (cache.size >= 16) cache.clear()
        statement = prepare(text)
        cache.set(text, statement)
      }
      return statement.all(...params)
    },
    close: () => db.close()
  }
}`

/**
 * The read-ahead of the store on `filename`, its connection closed with the scope; none for a database in memory, nor
 * a `file:` URI (the worker's connection would have to read it as the store's driver does).
 */
export const make = (filename: string, busyTimeoutMs: number): Effect.Effect<SqlEventStore.ReadAhead | undefined, never, Scope.Scope> => {
  if (filename === "" || filename.startsWith(":memory:") || filename.startsWith("file:")) return Effect.succeed(undefined)
  const config: Config = {
    driver: driverName,
    module: driverName === "node:sqlite" ? "" : createRequire(import.meta.url).resolve("better-sqlite3"),
    // The worker's own working directory is the process's: a relative name is resolved now, as the store's was.
    filename: path.resolve(filename),
    busyTimeoutMs,
    cacheSize: CACHE_SIZE
  }
  return SqlEventStore.readAhead({ source: OPENER, config })
}
