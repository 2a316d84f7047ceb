/**
 * The store's read-ahead (`SqlEventStore.readAhead`): a read-only connection of its own to the database file, in the
 * process's read-ahead worker thread, reading the pages of a long verified read while the main thread replays the
 * page before. On better-sqlite3 only (Node.js 20 and 22). Not for a database in memory, a `file:` URI, nor a read-only
 * store's image of a file (only the store's connection sees those).
 *
 * Not on `node:sqlite` (Node.js 24+): measured there (Node 24.21, 2 cores), it cost the main thread's heap: the old
 * generation after a full collection peaked at 55-60 MB during a 200,000-step resume, 36 MB without, and that resume
 * in a 64 MB heap (store-sqlite's `longRun.test.ts`) ran out of memory in 3 of 6 runs (none of 6 without). Measured
 * again on Nov 28 with the next page asked for at once (the node:sqlite opener restored for the run): a 10,000-event
 * resume 23.7-25.5 ms against 28.6-28.9 without (`resume_10k_vs_floor` 1.27-1.33 against 1.52-1.54), and the same
 * 3 of 6 runs out of memory; 6 of 6 passed with `--max-semi-space-size=16` (with a 64 MB old space, V8's new space
 * grew to 67 MB on Node 24 and to 34 MB on Node 20), which a library cannot set for its host process. So it stays off.
 */
import { SqlEventStore } from "@artana/core"
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"
import * as path from "node:path"
import type * as Scope from "effect/Scope"
import { driverName } from "./sqliteDriver.js"

/** What the worker's connection needs: better-sqlite3's module file, the file, the wait on a lock. */
interface Config {
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
  const Database = require(config.module)
  const db = new Database(config.filename, { readonly: true, timeout: config.busyTimeoutMs })
  db.exec("PRAGMA cache_size = " + config.cacheSize)
  const prepare = (text) => db.prepare(text).raw(true)
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
 * a `file:` URI (the worker's connection would have to read it as the store's driver does), nor on `node:sqlite`.
 */
export const make = (filename: string, busyTimeoutMs: number): Effect.Effect<SqlEventStore.ReadAhead | undefined, never, Scope.Scope> => {
  if (driverName === "node:sqlite" || filename === "" || filename.startsWith(":memory:") || filename.startsWith("file:")) return Effect.succeed(undefined)
  const config: Config = {
    module: createRequire(import.meta.url).resolve("better-sqlite3"),
    // The worker's own working directory is the process's: a relative name is resolved now, as the store's was.
    filename: path.resolve(filename),
    busyTimeoutMs,
    cacheSize: CACHE_SIZE
  }
  return SqlEventStore.readAhead({ source: OPENER, config })
}
