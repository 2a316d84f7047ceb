/**
 * The event store's commits flushed off the event loop, for a store at `synchronous = "full"` (the default).
 *
 * In WAL mode, SQLite's FULL is NORMAL plus one sync of the -wal file after each commit, made on the thread that
 * commits: the event loop, blocked for the disk's flush. Here the store's own appends commit at NORMAL (the frames
 * are written to the -wal file, no sync), and this module syncs the -wal file with `fs.fdatasync` on libuv's thread
 * pool; each caller is answered once a sync begun after its commit has ended, so an acknowledged append is as durable
 * as under FULL, and the loop runs other work (other runs, timers, I/O) while the disk flushes.
 *
 * - One sync at a time: the commits made while one is in flight are made durable by the next, begun when it ends (a
 *   second level of group commit, for disks whose flush is long).
 * - Readers (this connection's, other processes') may see a commit before its sync ended. What they act on is only
 *   ever written after it in the same -wal file, and a sync flushes the whole file, so nothing that depends on a
 *   commit can be durable without it; what a commit's caller does next (a tool's handler after its `ToolRequested`)
 *   waits for the sync.
 * - SQLite still makes its own syncs at NORMAL: the -wal file before a checkpoint, the database file after it, the
 *   -wal header when the file is reused. A checkpoint (every 1,000 pages of -wal) still runs on the loop, in the
 *   commit that triggers it.
 * - The -wal file is opened (read-write: Windows flushes only a handle that may write) when the store opens, after its
 *   first read made it exist, and its directory is synced then: SQLite would sync the directory of a new -wal file at
 *   its first sync of it, which at NORMAL may come only at the first checkpoint. The -wal file is not replaced while
 *   the store's connection is open (SQLite deletes it only when the last connection closes). Where it cannot be
 *   opened, the store commits at FULL, on the loop, as before.
 * - A sync that fails (an I/O error) fails the appends waiting for it, which may or may not be in the log (as a write
 *   interrupted in flight), and every later append of the store, unwritten: after a failed flush, Linux may drop the
 *   pages it could not write and report the next flush as a success, so nothing is trusted until the store is opened
 *   again (SQLite then reads what the disk kept).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Database } from "./sqliteDriver.js"

/** Syncs the store's -wal file off the event loop (see the module's comment). */
export interface WalFlush {
  /**
   * Runs `write` on the connection `db` (outside any transaction: the safety level cannot change inside one) with its
   * commit's sync left to `after`.
   */
  readonly unsynced: <A>(db: Database, write: () => A) => A
  /** Calls `done` once every commit made before this call is durable, or with the sync's error. */
  readonly after: (done: (error: Error | undefined) => void) => void
  /** The error of a sync that failed, after which the store writes nothing. */
  readonly failed: () => Error | undefined
}

/**
 * The flush of the -wal file of the database file `database` (its path as SQLite opened it), for the store's
 * connection, whose `synchronous` is FULL and which has read the file (so the -wal file exists); closed with the scope,
 * after the sync in flight (if any) has ended. Undefined when the -wal file cannot be opened: the store then commits
 * at FULL, on the loop.
 */
export const make = (database: string): Effect.Effect<WalFlush | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const walPath = `${database}-wal`
    const fd = openWal(walPath)
    if (fd === undefined) return undefined
    let failure: Error | undefined
    // The callers of the sync in flight, and those of the next one (their commits came after it began).
    let inFlight = false
    let next: Array<(error: Error | undefined) => void> = []
    let closed: (() => void) | undefined

    const begin = () => {
      const waiting = next
      next = []
      inFlight = true
      const ended = (error: Error | null) => {
        inFlight = false
        if (error !== null) failure ??= new Error(`flushing ${walPath} failed (${error.message})`, { cause: error })
        for (const done of waiting) done(failure)
        if (next.length > 0) begin()
        else closed?.()
      }
      if (failure !== undefined) return ended(null)
      fs.fdatasync(fd, ended)
    }

    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        const close = () => {
          fs.closeSync(fd)
          resume(Effect.void)
        }
        if (inFlight) closed = close
        else close()
      })
    )

    return {
      // `exec`, not a prepared statement: SQLite applies the safety level when it compiles the pragma, so a prepared
      // one run again may leave the level as it is.
      unsynced: (db, write) => {
        db.exec("PRAGMA synchronous = NORMAL")
        try {
          return write()
        } finally {
          restore(db)
        }
      },
      after: (done) => {
        next.push(done)
        if (!inFlight) begin()
      },
      failed: () => failure
    }
  })

/** Opens the -wal file and syncs its directory (see the module's comment); undefined when either fails. */
const openWal = (walPath: string): number | undefined => {
  let fd: number | undefined
  try {
    fd = fs.openSync(walPath, "r+")
    if (process.platform !== "win32") {
      const dir = fs.openSync(path.dirname(walPath), "r")
      try {
        fs.fsyncSync(dir)
      } finally {
        fs.closeSync(dir)
      }
    }
    return fd
  } catch {
    if (fd !== undefined) fs.closeSync(fd)
    return undefined
  }
}

/**
 * Puts the connection back to FULL. A write that left a transaction open (it cannot change the safety level inside
 * one) is rolled back first: none of its appends was answered as written.
 */
const restore = (db: Database) => {
  try {
    db.exec("PRAGMA synchronous = FULL")
  } catch {
    try {
      db.exec("ROLLBACK")
    } catch {
      // No transaction was open: the second attempt below reports the real error.
    }
    db.exec("PRAGMA synchronous = FULL")
  }
}
