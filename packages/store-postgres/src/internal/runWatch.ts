/**
 * Notices of writes to runs that cost nothing while nobody follows the run. A reader that follows a run (a live reader
 * in any process) holds a shared session advisory lock on the run's key, on a connection of its own that LISTENs on the
 * runs channel; each append tries the same lock exclusively, for its transaction only (`noteCte`), and NOTIFYs (in its
 * own statement, sent at its commit) only when the try fails, that is when someone watches. No round trip, no NOTIFY
 * and so none of the commit-time lock every notifying transaction takes, for a run nobody watches.
 *
 * Why no write is missed: a watcher takes its lock after its LISTEN is up and before it reads the run. A write whose
 * statement tried the lock before the watcher took it held it until its commit, so the watcher's lock (and read) came
 * after that commit and sees the write; a write that tried after finds the lock taken and notifies. When the
 * connection drops, its LISTEN and locks go with it: it is opened again by the next listen (the channel's retry),
 * LISTENs, takes every watched run's lock again, and only then says `RunNotices.everyRun`, so every waiter reads again.
 * A hash collision of two runs' keys costs a notice nobody needed, or a watcher's wait for a write of the other run.
 */
import { RunNotices } from "@artana/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import Pg from "pg"

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The advisory lock key of a run (two int4 keys: the channel's hash, the run's), in SQL over `payload`. */
const lockKey = (channel: string, payload: string) => `hashtext(${literal(channel)}), hashtext(${payload})`

/** The payload of a run's notice, in SQL: `["<tenant>", "<run>"]` (as `RunNotices` reads it). */
const payloadOf = (tenant: string, run: string) => `json_build_array(${tenant}::text, ${run}::text)::text`

/**
 * A CTE named `note` that NOTIFYs the run's watchers, if any, at the statement's commit (SQL expressions `tenant` and
 * `run`). A statement must read it (`noteRead`) for it to run.
 */
export const noteCte = (channel: string, tenant: string, run: string): string =>
  `note AS (SELECT pg_notify(${literal(channel)}, k.p) FROM (SELECT ${payloadOf(tenant, run)} AS p) AS k WHERE NOT pg_try_advisory_xact_lock(${lockKey(channel, "k.p")}))`

/** A condition that is always true and runs `noteCte`. */
export const noteRead = "(SELECT count(*) FROM note) >= 0"

/**
 * `noteCte` as a condition of the rows a statement writes (SQL expressions `tenant` and `run`): always true, it tries
 * the lock and NOTIFYs when the try fails (`pg_notify` returns a void that is not NULL), for each row it is evaluated on
 * (a NOTIFY repeated in one transaction is sent once). No CTE to scan: the statement's plan carries one filter.
 */
export const noteCondition = (channel: string, tenant: string, run: string): string =>
  `(pg_try_advisory_xact_lock(${lockKey(channel, payloadOf(tenant, run))}) OR pg_notify(${literal(channel)}, ${payloadOf(tenant, run)}) IS NOT NULL)`

const failed = (message: string) => (cause: unknown) => new SqlError({ cause, message })

const query = (client: Pg.Client, text: string, values: Array<unknown> = []) =>
  Effect.tryPromise({ try: () => client.query(text, values), catch: failed(`runs channel: ${text.split("(")[0]}`) })

interface Listener {
  readonly heard: (payload: string) => void
  readonly lost: (error: SqlError) => void
}

/** Makes the listening connection's client (tests pass a client that fails at a chosen moment). */
export type ClientOf = (config: Pg.ClientConfig) => Pg.Client

/**
 * The runs channel `channel` with watches: `send` NOTIFYs through `sql` (signals: whether or not anyone watches),
 * `sendWatched` only when the run is watched, `listen` and `watch` on one connection made with `config`, opened on
 * first use and closed with the scope.
 */
export const make = (
  config: Pg.ClientConfig,
  channel: string,
  sql: SqlClient.SqlClient,
  clientOf: ClientOf = (c) => new Pg.Client(c)
): Effect.Effect<RunNotices.Channel<SqlError>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const permit = yield* Effect.makeSemaphore(1)
    const serially = <A, E>(effect: Effect.Effect<A, E>) => permit.withPermits(1)(effect)
    const watched = new Map<string, { readonly tenantId: string; readonly runId: string; count: number }>()
    const listeners = new Set<Listener>()
    let client: Pg.Client | undefined
    /** The store's scope closed: no connection is opened again. */
    let closed = false
    const lockText = (fn: string) => `SELECT ${fn}(${lockKey(channel, payloadOf("$1", "$2"))})`
    const takeLock = (c: Pg.Client, w: { readonly tenantId: string; readonly runId: string }) => query(c, lockText("pg_advisory_lock_shared"), [w.tenantId, w.runId])

    const lose = (c: Pg.Client, cause: unknown) => {
      if (client !== c) return
      client = undefined
      void c.end().catch(() => {})
      const error = failed("runs channel: the listening connection was lost")(cause)
      for (const l of listeners) l.lost(error)
    }
    /**
     * The connection, LISTENing with every watched run's lock held; opened when there is none. Run serially. A
     * connection that drops while it is being opened (its last query answered, its end heard before the open went on)
     * fails the open: it is not the channel's yet, so `lose` tells nobody, and taken as the channel's it would leave
     * every listener waiting on a dead LISTEN until its poll.
     */
    const opened: Effect.Effect<Pg.Client, SqlError> = Effect.suspend(() => {
      if (client !== undefined) return Effect.succeed(client)
      if (closed) return Effect.fail(failed("runs channel: closed with its store")(undefined))
      const c = clientOf(config)
      let dropped: { readonly cause: unknown } | undefined
      const drop = (cause: unknown) => {
        dropped ??= { cause }
        lose(c, cause)
      }
      c.on("error", drop)
      c.on("end", () => drop("ended"))
      c.on("notification", (n) => {
        if (n.channel === channel && n.payload !== undefined) for (const l of listeners) l.heard(n.payload)
      })
      return Effect.tryPromise({ try: () => c.connect(), catch: failed("runs channel: cannot connect") }).pipe(
        Effect.zipRight(query(c, `LISTEN "${channel.replaceAll("\"", "\"\"")}"`)),
        Effect.zipRight(Effect.forEach(watched.values(), (w) => takeLock(c, w), { discard: true })),
        Effect.flatMap(() => {
          if (dropped !== undefined) return Effect.fail(failed("runs channel: the listening connection was lost while it was opened")(dropped.cause))
          client = c
          for (const l of listeners) l.heard(RunNotices.everyRun)
          return Effect.succeed(c)
        }),
        // Failed or interrupted (the store's scope closing meanwhile): the connection is nobody's, end it.
        Effect.onExit(() => client === c ? Effect.void : Effect.sync(() => void c.end().catch(() => {})))
      )
    })
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const c = client
        client = undefined
        return c === undefined ? Effect.void : Effect.promise(() => c.end().catch(() => {})).pipe(Effect.timeoutOption(1000))
      })
    )

    const listen = Stream.asyncPush<string, SqlError>((emit) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const l: Listener = { heard: (p) => void emit.single(p), lost: (e) => void emit.fail(e) }
          listeners.add(l)
          return l
        }),
        (l) => Effect.sync(() => void listeners.delete(l))
      ).pipe(Effect.tap(() =>
        serially(opened).pipe(
          // Up: this listener reads again (`everyRun`) whether it opened the connection or another open did (a watch
          // that opened it while this listener's retry waited heard nobody: what was sent before went unheard).
          Effect.match({ onFailure: (e) => void emit.fail(e), onSuccess: () => void emit.single(RunNotices.everyRun) })
        )
      ))
    )

    const watch = (tenantId: string, runId: string) => {
      const key = `${tenantId}\u0000${runId}`
      return Effect.asVoid(Effect.acquireRelease(
        serially(Effect.suspend(() => {
          const w = watched.get(key)
          if (w !== undefined) return Effect.sync(() => void w.count++)
          const added = { tenantId, runId, count: 1 }
          watched.set(key, added)
          // Not connected: opening takes every watched run's lock, this one's too (and `everyRun` then wakes the
          // reader); a failed open is the next listen's to retry. Connected: its lock, and a lock that cannot be taken
          // drops the connection, so that the next listen opens another holding every watched run's lock.
          const c = client
          if (c === undefined) return Effect.ignore(opened)
          return Effect.catchAll(takeLock(c, added), (e) => Effect.sync(() => lose(c, e)))
        })),
        () =>
          serially(Effect.suspend(() => {
            const w = watched.get(key)
            if (w === undefined || --w.count > 0) return Effect.void
            watched.delete(key)
            return client === undefined ? Effect.void : Effect.ignore(query(client, lockText("pg_advisory_unlock_shared"), [tenantId, runId]))
          }))
      ))
    }

    return {
      // `pg_notify` rather than `PgClient.notify`: its `NOTIFY channel, $1` is no statement PostgreSQL parses.
      send: (payload) => Effect.asVoid(sql`SELECT pg_notify(${channel}, ${payload})`),
      sendWatched: (tenantId, runId) => Effect.asVoid(sql.unsafe(`WITH ${noteCte(channel, "$1", "$2")} SELECT ${noteRead}`, [tenantId, runId])),
      listen,
      watch
    }
  })
