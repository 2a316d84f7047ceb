/**
 * The store's read-ahead (`SqlEventStore.readAhead`): a read-only connection of its own to the database file, in the
 * process's read-ahead worker thread, on the driver the store runs on (`sqliteDriver.ts`), reading the pages of a long
 * verified read while the main thread replays the page before. Not for a database in memory, a `file:` URI, nor a
 * read-only store's image of a file (only the store's connection sees those).
 *
 * On `node:sqlite` (Node.js 24+) only in a heap of `NODE_SQLITE_MIN_HEAP` or more. Measured on Node 24.21 (2 cores,
 * Nov 28): a 200,000-step resume (store-sqlite's `longRun.test.ts`) with a 64 MB old space ran out of memory in 3 of
 * 6 runs with the read-ahead, none without, and none in 4 runs each with 128 and 320 MB. Heap snapshots taken during
 * that resume held 43 MB, the same at every page (the read-ahead keeps two pages, ~120,000 characters each), so it is
 * not a leak: with the read-ahead V8 grew the main thread's young generation to 64 MB (32 MB without it; 16 MB at
 * most on Node 20), and the young objects live at its full collections (up to 20 MB promoted at once, against 0.5 MB
 * without) pushed the old space over its 64 MB. A library cannot set V8's young generation for
 * its host (`--max-semi-space-size=16` made 6 of 6 pass), but it can read the heap's limit: a host that caps its heap
 * that low gets the main thread's read, which allocates less. Node 20 and 22 (better-sqlite3) read ahead in any heap:
 * `longRun.test.ts` passes there with it in 64 MB.
 */
import { SqlEventStore } from "@artana/core"
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"
import * as path from "node:path"
import { getHeapStatistics } from "node:v8"
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
 * The heap limit (V8's `heap_size_limit`: the old space's and the young generation's) from which a store on
 * `node:sqlite` reads ahead: 512 MiB. Node 24 gives 256 MiB for a 64 MB old space (which ran out of memory, see
 * above), 320 for 128 MB (which did not), and ~4 GiB by default on a machine with 16 GiB or more.
 */
export const NODE_SQLITE_MIN_HEAP = 512 * 1024 * 1024

/** Whether a store on `driver` reads ahead in this process's heap (see `NODE_SQLITE_MIN_HEAP`). */
export const roomFor = (driver: typeof driverName): boolean =>
  driver !== "node:sqlite" || getHeapStatistics().heap_size_limit >= NODE_SQLITE_MIN_HEAP

/**
 * The read-ahead of the store on `filename`, its connection closed with the scope; none for a database in memory, nor
 * a `file:` URI (the worker's connection would have to read it as the store's driver does), nor on `node:sqlite` in a
 * small heap (`roomFor`).
 */
export const make = (filename: string, busyTimeoutMs: number): Effect.Effect<SqlEventStore.ReadAhead | undefined, never, Scope.Scope> => {
  if (!roomFor(driverName) || filename === "" || filename.startsWith(":memory:") || filename.startsWith("file:")) return Effect.succeed(undefined)
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
