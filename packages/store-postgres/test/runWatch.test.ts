// The runs channel's listening connection (`internal/runWatch.ts`) when it drops at the worst moment: after the server
// answered the last query of its opening (a watched run's lock), before the opening went on. Driven for real: the
// connection's backend is terminated right after that answer, and the answer is handed on only once the client heard
// its end, which is the order a busy process can see them in.
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

describe.skipIf(pg.url === undefined)(`the runs channel's listening connection (${pg.description})`, () => {
  it.scopedLive("a connection lost while it is opened is not taken as the channel's: the next listen opens another, holding the watches", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const admin = yield* session(url)
      const sql = Context.get(yield* Layer.build(PostgresStore.layerClient({ url })), SqlClient.SqlClient)
      const channel = PostgresStore.runsChannel()
      const dropping = droppingFirst(admin)
      const notices = yield* Effect.flatMap(RunWatch.make({ connectionString: url }, channel, sql, dropping.clientOf), RunNotices.fromChannel)
      // The watch opens the connection (the one that drops as its lock is granted); the ticket then starts the listener.
      yield* notices.watch!("acme", "watched")
      const woken = yield* notices.ticket("acme", "watched")
      yield* woken.pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the listener was left on a dead connection") }))
      expect(dropping.made()).toBe(2)
      // The second connection LISTENs and holds the watched run's lock: a notice sent for the run reaches the listener.
      const locks = yield* Effect.promise(() =>
        admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")
      )
      expect(locks.rows[0].n).toBe(1)
      const next = yield* notices.ticket("acme", "watched")
      yield* Effect.promise(() => admin.query("SELECT pg_notify($1, $2)", [channel, JSON.stringify(["acme", "watched"])]))
      yield* next.pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the run's notice was not heard") }))
    }), 60_000)
})
