/**
 * The event store's commits flushed off the event loop, for a store at `synchronous = "full"` (the default).
 *
 * In WAL mode, SQLite's FULL is NORMAL plus one sync of the -wal file after each commit, made on the thread that
 * commits: the event loop, blocked for the disk's flush. Here the store's own appends commit at NORMAL (the frames
 * are written to the -wal file, no sync), and this module syncs the -wal file with `fdatasync` on the process's sync
 * thread (`SYNCER`); each caller is answered once a sync begun after its commit has ended, so an acknowledged append
 * is as durable as under FULL, and the loop runs other work (other runs, timers, I/O) while the disk flushes.
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
 *   interrupted in flight). After a failed flush Linux may drop the pages it could not write and report the next flush
 *   as a success, while the failed commit stays visible: a later commit, written after it in the -wal file, would be
 *   lost with it in a crash. So from then on every write of the store (its appends, in a transaction or not, and every
 *   statement of its client that writes; not a rollback) first checkpoints (`wal_checkpoint(TRUNCATE)`): every commit,
 *   the failed ones included, copied into the database file, which SQLite syncs, and the -wal file emptied. Until a
 *   checkpoint succeeds, every write fails with the sync's error. The failure is kept by -wal file for the whole
 *   process, so a store opened again on the file in this process checkpoints first too. (Another process's next sync
 *   of the file reports the same error: Linux reports a writeback error to every file description open on it.)
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import { Worker } from "node:worker_threads"
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
  /**
   * Undefined when the store may write; else the error of a failed sync it has not recovered from. With
   * `recover` (the connection `db` holds no transaction), a checkpoint is tried first (see the module's comment).
   */
  readonly refused: (db: Database, recover: boolean) => Error | undefined
}

/** The failed syncs not recovered from yet, by -wal file, for every store of this process. */
const failures = new Map<string, Error>()

/**
 * The flush of the -wal file of the database file `database` (its path as SQLite opened it), for the store's
 * connection, whose `synchronous` is FULL and which has read the file (so the -wal file exists); closed with the scope,
 * after the sync in flight (if any) has ended. Undefined when the -wal file cannot be opened: the store then commits
 * at FULL, on the loop.
 */
export const make = (database: string, busyTimeoutMs: number): Effect.Effect<WalFlush | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const walPath = `${database}-wal`
    const fd = openWal(walPath)
    if (fd === undefined) return undefined
    stores++
    // The callers of the sync in flight, and those of the next one (their commits came after it began).
    let inFlight = false
    let next: Array<(error: Error | undefined) => void> = []
    // Set once the scope closes: called when the sync in flight ends; `fd` is closed after it.
    let closing: (() => void) | undefined
    let closed = false

    const begin = () => {
      const waiting = next
      next = []
      inFlight = true
      const ended = (error: Error | null) => {
        inFlight = false
        if (error !== null && !failures.has(walPath)) {
          failures.set(walPath, new Error(`flushing ${walPath} failed (${error.message})`, { cause: error }))
        }
        // A sync that succeeds after one that failed proves nothing (the failed one's pages may be gone, and these
        // commits follow them in the file): its commits fail too, until a checkpoint recovers.
        const failed = failures.get(walPath)
        for (const done of waiting) done(failed)
        if (next.length > 0 && !closed) begin()
        else if (closing !== undefined) {
          const close = closing
          closing = undefined
          close()
        }
      }
      try {
        syncOffLoop(fd, ended)
      } catch (cause) {
        // The sync thread could not be started: what waited fails, as a failed sync.
        ended(cause instanceof Error ? cause : new Error(String(cause)))
      }
    }

    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        const close = () => {
          closed = true
          fs.closeSync(fd)
          released()
          // Asked for after the store closed: never synced, so never answered as durable.
          for (const done of next.splice(0)) done(new Error(`the store on ${database} is closed`))
          resume(Effect.void)
        }
        if (inFlight) closing = close
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
        if (closed) return done(new Error(`the store on ${database} is closed`))
        next.push(done)
        if (!inFlight) begin()
      },
      refused: (db, recover) => {
        const failed = failures.get(walPath)
        if (failed === undefined || !recover || !checkpointed(db, fd, busyTimeoutMs)) return failed
        failures.delete(walPath)
        return undefined
      }
    }
  })

/**
 * The process's sync thread: a worker thread that runs `fdatasync` for every store, one sync at a time, and answers
 * each (not libuv's thread pool, whose four threads `dns.lookup`, file reads and zlib may all hold for as long as they
 * take). Started at the first sync; it keeps the process alive only while a sync is in flight, and ends when the
 * last store using it closes.
 */
const SYNCER = `
const { parentPort } = require("node:worker_threads")
const fs = require("node:fs")
parentPort.on("message", ({ id, fd }) => {
  let error
  try {
    fs.fdatasyncSync(fd)
  } catch (cause) {
    error = String(cause && cause.message || cause)
  }
  parentPort.postMessage({ id, error })
})
`

let syncer: { readonly worker: Worker; readonly waiting: Map<number, (error: Error | null) => void>; next: number } | undefined
/** The open stores that sync on the thread: the last to close ends it (a test runner that loads modules anew for every file would otherwise keep one thread per file). */
let stores = 0

/** One store closed (its syncs all answered): the thread ends with the last. */
const released = () => {
  stores--
  if (stores === 0 && syncer !== undefined && syncer.waiting.size === 0) {
    const { worker } = syncer
    syncer = undefined
    void worker.terminate()
  }
}

/** Syncs `fd` on the sync thread; `ended` hears how it went. */
const syncOffLoop = (fd: number, ended: (error: Error | null) => void) => {
  if (syncer === undefined) {
    const worker = new Worker(SYNCER, { eval: true })
    const started = { worker, waiting: new Map<number, (error: Error | null) => void>(), next: 0 }
    worker.on("message", ({ error, id }: { readonly id: number; readonly error?: string }) => {
      const done = started.waiting.get(id)
      started.waiting.delete(id)
      if (started.waiting.size === 0) worker.unref()
      done?.(error === undefined ? null : new Error(error))
      // Every store closed while this sync was in flight: the thread ends now.
      if (stores === 0 && started.waiting.size === 0 && syncer === started) {
        syncer = undefined
        void worker.terminate()
      }
    })
    // A thread that died (or failed to start) fails what it was asked, and the next sync starts another. (One ended by
    // `released` was asked nothing.)
    const gone = (cause: unknown) => {
      if (syncer === started) syncer = undefined
      const error = new Error(`the sync thread stopped (${String(cause)})`)
      for (const done of started.waiting.values()) done(error)
      started.waiting.clear()
    }
    worker.on("error", gone)
    worker.on("exit", gone)
    syncer = started
  }
  const id = syncer.next++
  syncer.waiting.set(id, ended)
  syncer.worker.ref()
  syncer.worker.postMessage({ id, fd })
}

/**
 * Checkpoints every commit of the -wal file (open as `fd`) into the database file, which SQLite syncs, and empties the
 * -wal file: whether it did (not when a reader holds an older snapshot, nor when a sync fails again). It does not wait
 * for readers (a busy timeout of 0 while it runs, `busyTimeoutMs` after): every write tries it, on the loop.
 */
const checkpointed = (db: Database, fd: number, busyTimeoutMs: number): boolean => {
  try {
    db.exec("PRAGMA busy_timeout = 0")
    const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as ReadonlyArray<{ readonly busy: number }>
    return result !== undefined && result.busy === 0 && fs.fstatSync(fd).size === 0
  } catch {
    return false
  } finally {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  }
}
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
