// The runs channel's listening connection (`internal/runWatch.ts`): the watched runs' locks it holds, and what its
// listeners hear when it drops and another is opened, at the worst moments. Driven for real on a throwaway PostgreSQL:
// backends terminated with `pg_terminate_backend`, locks read from `pg_locks`.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Context, Effect, Layer } from "effect"
import * as SqlClient from "@effect/sql/SqlClient"
import { RunNotices } from "@artana/core"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import pgDriver from "pg"
import * as RunWatch from "../src/internal/runWatch.js"
import { session } from "./session.js"

const pg = PgTest.server(inject("artanaPg"))

/**
 * Clients of the channel whose first one, once its first watched run's lock is granted, is terminated by `admin` and
 * answers the lock's query only after it heard its own end.
 */
const droppingFirst = (admin: pgDriver.Client): { readonly clientOf: RunWatch.ClientOf; readonly made: () => number } => {
  let made = 0
  const clientOf: RunWatch.ClientOf = (config) => {
    const client = new pgDriver.Client(config)
    if (made++ > 0) return client
    const query = client.query.bind(client)
    const ended = new Promise<void>((resolve) => client.once("end", () => resolve()))
    Object.defineProperty(client, "query", {
      value: async (text: string, values?: Array<unknown>) => {
        const result = await query(text, values)
        if (text.includes("pg_advisory_lock_shared")) {
          const own = await query("SELECT pg_backend_pid() AS pid")
          await admin.query("SELECT pg_terminate_backend($1)", [own.rows[0].pid])
          await ended
        }
        return result
      }
    })
    return client
  }
  return { clientOf, made: () => made }
}

/** This test database's shared advisory locks (a watched run's), one row per lock held by a session. */
const watchLocks = (admin: pgDriver.Client) =>
  Effect.promise(async () => {
    const ours = "locktype = 'advisory' AND mode = 'ShareLock' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    const rows = await admin.query(`SELECT pid FROM pg_locks WHERE ${ours}`)
    return rows.rows.map((r: { pid: number }) => r.pid)
  })

/** The runs channel's notices on a fresh database, its listening connections made by `clientOf` (given the test's session). */
const channelOn = (clientOf?: (admin: pgDriver.Client) => RunWatch.ClientOf) =>
  Effect.gen(function*() {
    const url = yield* PgTest.freshDatabase(pg.url!)
    const admin = yield* session(url)
    const sql = Context.get(yield* Layer.build(PostgresStore.layerClient({ url })), SqlClient.SqlClient)
    const channel = PostgresStore.runsChannel()
    const notices = yield* Effect.flatMap(RunWatch.make({ connectionString: url }, channel, sql, clientOf?.(admin)), RunNotices.fromChannel)
    return { admin, channel, notices, watch: notices.watch! }
  })

const within = (what: string) => Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(what) })

describe.skipIf(pg.url === undefined)(`the runs channel's listening connection (${pg.description})`, () => {
  // Dropped after the server answered the last query of its opening (a watched run's lock), before the opening went
  // on: the answer is handed on only once the client heard its end, the order a busy process can see them in.
  it.scopedLive("a connection lost while it is opened is not taken as the channel's: the next listen opens another, holding the watches", () =>
    Effect.gen(function*() {
      let dropping: ReturnType<typeof droppingFirst> | undefined
      const { admin, channel, notices, watch } = yield* channelOn((session) => (dropping = droppingFirst(session)).clientOf)
      // The watch opens the connection (the one that drops as its lock is granted); the ticket then starts the listener.
      yield* watch("acme", "watched")
      const woken = yield* notices.ticket("acme", "watched")
      yield* woken.pipe(within("the listener was left on a dead connection"))
      expect(dropping?.made()).toBe(2)
      // The second connection LISTENs and holds the watched run's lock: a notice sent for the run reaches the listener.
      expect(yield* watchLocks(admin)).toHaveLength(1)
      const next = yield* notices.ticket("acme", "watched")
      yield* Effect.promise(() => admin.query("SELECT pg_notify($1, $2)", [channel, JSON.stringify(["acme", "watched"])]))
      yield* next.pipe(within("the run's notice was not heard"))
    }), 60_000)

  it.scopedLive("a watch that opens the connection holds its run's lock once: once it ends, the run is not watched", () =>
    Effect.gen(function*() {
      const { admin, watch } = yield* channelOn()
      yield* Effect.scoped(Effect.gen(function*() {
        yield* watch("acme", "once")
        expect(yield* watchLocks(admin)).toHaveLength(1)
      }))
      // Still held, every append to the run would NOTIFY (and take the commit-time lock a notice takes) for nobody.
      const held = yield* Effect.promise(() =>
        admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")
      )
      expect(held.rows[0].n).toBe(0)
    }), 60_000)

  it.scopedLive("a listener that comes back to a connection another watch opened meanwhile still wakes the runs' waiters", () =>
    Effect.gen(function*() {
      const made: Array<pgDriver.Client> = []
      const { admin, notices, watch } = yield* channelOn(() => (config) => {
        const client = new pgDriver.Client(config)
        made.push(client)
        return client
      })
      yield* notices.ticket("acme", "x").pipe(Effect.flatten, within("the listener did not come up"))
      yield* watch("acme", "x")
      // A reader of x waits for its next write; then the listening connection drops.
      const waiting = yield* notices.ticket("acme", "x")
      const first = made[0]!
      const ended = new Promise<void>((resolve) => first.once("end", () => resolve()))
      const [pid] = yield* watchLocks(admin)
      yield* Effect.promise(() => admin.query("SELECT pg_terminate_backend($1)", [pid]))
      yield* Effect.promise(() => ended)
      // While the listener's retry waits (its backoff), another reader's watch opens the next connection.
      yield* watch("acme", "y")
      expect(made).toHaveLength(2)
      // A write to x while nothing held its lock sent no notice: x's waiter must be woken by the connection coming back.
      yield* waiting.pipe(within("a waiter from before the drop was never woken"))
    }), 60_000)
})
