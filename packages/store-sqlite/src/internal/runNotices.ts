/**
 * `RunNotices` on a SQLite file: another process's commit is heard by watching the file's directory (`fs.watch`:
 * inotify on Linux, FSEvents on macOS, no timer) for writes to the database, its `-wal` or its journal, and told apart
 * from this process's own commits by `PRAGMA data_version` on this process's connection, which changes only when
 * another connection committed. A foreign commit wakes every ticket taken before it: SQLite says that the file
 * changed, not which run, so each waiter reads its run again (a small indexed read). `notify` sends nothing: the
 * commit is the notice.
 *
 * A write to the WAL comes before its commit is visible (the frames are written, then synced, then the commit is
 * published in shared memory, which no watcher sees): a write whose commit is not visible yet is read again after 1,
 * 2, 4, ... ms, up to `SETTLE_MS`, so a lone commit is heard once its sync ended. The reads go on after a change is
 * heard, too: a write seen may be a later commit's, merged by inotify with the earlier one's (see `check`). Measured on 2 loaded cores, a
 * commit every 20 ms from another process: heard a median 2.3 ms after the writer began it (its sync included),
 * against 10 ms for `PRAGMA data_version` polled every 10 ms, which also costs its CPU when nothing is written.
 * Polling stays the backstop (a watcher the platform refuses, a commit slower than `SETTLE_MS` with nothing after).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { RunNotices } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as Client from "./sqliteClient.js"
import type { Database, Statement } from "./sqliteDriver.js"

/**
 * How long a write whose commit is not visible yet is read again for (doubling waits from 1 ms): 8 s, as a sync under
 * `synchronous=FULL` on a loaded machine can take seconds (331 ms measured at load 20; CI reaches load 30). The four
 * reads past 512 ms cost a few microseconds each, once per burst of writes.
 */
const SETTLE_MS = 8192

/** Tickets that never fire: nothing another process writes can be heard (an in-memory database, no watcher). */
const deaf: RunNotices.Service = { notify: () => Effect.void, ticket: () => Effect.succeed(Effect.never), commitsHeard: true }

/** The notices of the SQLite file `filename`, over this process's connection to it (`SqlClient`). */
export const make = (filename: string, isMemory: boolean): Effect.Effect<RunNotices.Service, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    if (isMemory) return deaf
    const sql = yield* SqlClient.SqlClient
    const scope = yield* Effect.scope
    const runtime = yield* Effect.runtime<never>()
    const version = Effect.map(sql.unsafe<{ readonly data_version: number }>("PRAGMA data_version"), (rows) => Number(rows[0]?.data_version))
    const base = path.basename(filename)
    const lane = Client.laneOf(sql)
    let statement: Statement | undefined
    const readVersion = (db: Database): unknown => {
      statement ??= db.prepare("PRAGMA data_version")
      statement.raw(true)
      const row = statement.get()
      return Array.isArray(row) ? row[0] : undefined
    }

    // Every ticket taken since the last foreign commit heard waits on this; a commit heard resolves it.
    let generation = Deferred.unsafeMake<void>(FiberId.none)
    let seen: number | undefined
    let checking = false
    let again = false
    let delay = 0
    let retry: ReturnType<typeof setTimeout> | undefined

    const wake = () => {
      const woken = generation
      generation = Deferred.unsafeMake<void>(FiberId.none)
      Deferred.unsafeDone(woken, Exit.void)
    }
    /**
     * Reads the version: changed, the tickets wake. Changed or not, it is read again after 1, 2, 4, ... ms (from 1 ms
     * again after each change), up to `SETTLE_MS` after the last change: the write that started this check may belong to
     * a later commit still in flight (inotify merges a write into one not yet read), and nothing is written to a watched
     * file once that commit is published.
     */
    const check = (): void => {
      if (checking) return void (again = true)
      checking = true
      clearTimeout(retry)
      // On the store's own connection, when no transaction holds it: a plain synchronous read (a few microseconds),
      // not a statement through the client (a fiber, a span, the statement cache: ~200 µs of CPU measured on 2 loaded
      // cores, ~10 times after every commit, this process's own too, on the event loop beside a streamed reply).
      if (lane !== undefined && lane.idle()) {
        let now: number | undefined
        try {
          now = Number(lane.now(readVersion))
        } catch {
          now = undefined
        }
        return checked(now)
      }
      Runtime.runCallback(runtime)(version, {
        onExit: (exit) => checked(Exit.isSuccess(exit) && Number.isFinite(exit.value) ? exit.value : undefined)
      })
    }
    /** What a check read (`undefined`: nothing could be read), and the next check. */
    const checked = (read: number | undefined): void => {
      checking = false
      const now = read !== undefined && Number.isFinite(read) ? read : undefined
      const changed = now !== undefined && now !== seen
      if (changed) {
        seen = now
        wake()
      }
      if (again) {
        again = false
        delay = 0
        return check()
      }
      delay = changed || delay === 0 ? 1 : delay * 2
      if (delay <= SETTLE_MS) retry = setTimeout(check, delay)
      else delay = 0
    }
    const written = (name: string | null) => {
      if (name !== null && name.startsWith(base)) {
        delay = 0
        check()
      }
    }

    // Started by the first ticket (a process that never waits on a run watches nothing): the watcher, then the
    // version it compares with, both before the ticket's waiter reads its run, so no commit after that read is missed.
    let started: Effect.Effect<boolean> | undefined
    const start = Effect.suspend(() => {
      started ??= Effect.cached(Effect.gen(function*() {
        const watcher = yield* Effect.try(() => fs.watch(path.dirname(path.resolve(filename)), { persistent: false }, (_event, name) => written(name)))
        watcher.on("error", () => watcher.close())
        yield* Scope.addFinalizer(scope, Effect.sync(() => {
          watcher.close()
          clearTimeout(retry)
        }))
        seen = yield* version
        return true
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logWarning(`no notices of other processes' writes to ${filename} (waits poll instead)`, cause), false)
        )
      )).pipe(Effect.runSync)
      return started
    })

    return {
      notify: () => Effect.void,
      ticket: () => Effect.map(start, (watching) => (watching ? Deferred.await(generation) : Effect.never)),
      commitsHeard: true
    } satisfies RunNotices.Service
  })
