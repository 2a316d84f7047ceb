// TCP keepalive on the store's connections (`PostgresStore.Options.keepAlive`): the pool's, the runs channel's
// listening connection and the `PgClient.listen` connection all have the OS's keepalive timer armed, at the idle time
// asked for, so a connection dropped in silence (a NAT, a load balancer) is found dead. Read from the kernel's own
// table of this process's sockets (`/proc/net/tcp`: a socket's `tr` is 2 while its keepalive timer is pending, and
// `tm->when` the clock ticks left), against a throwaway PostgreSQL over TCP. Linux only (that table).
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { Context, Effect, Fiber, Layer, Schedule, Stream } from "effect"
import * as SqlClient from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { RunNotices } from "@artana/core"
import type { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { freshStore } from "./pg.js"

const pg = PgTest.server(inject("artanaPg"))

/** The clock ticks a second in `/proc/net/tcp` (`USER_HZ`: 100 on every Linux architecture Node.js runs on). */
const TICKS = 100

interface Socket {
  /** `tr`: 2 while the keepalive timer is pending, 0 when no timer is. */
  readonly timer: number
  /** `tm->when`: the clock ticks until the timer fires. */
  readonly ticks: number
}

/** This process's established TCP connections to `port`, by socket inode. */
const connectionsTo = (port: number): Map<string, Socket> => {
  const own = new Set<string>()
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1]
      if (inode !== undefined) own.add(inode)
    } catch {
      // Closed since the directory was read.
    }
  }
  const found = new Map<string, Socket>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length < 10 || f[3] !== "01" || !own.has(f[9]!)) continue
      if (Number.parseInt(f[2]!.split(":")[1]!, 16) !== port) continue
      const [timer, ticks] = f[5]!.split(":")
      found.set(f[9]!, { timer: Number.parseInt(timer!, 16), ticks: Number.parseInt(ticks!, 16) })
    }
  }
  return found
}

/**
 * Opens a store on a fresh database with `options`, and each of its connections: the pool's (a query), the runs
 * channel's (a watch) and `PgClient.listen`'s. The connections to the server it opened (none before it), once each
 * is `settled`: a socket is established in the kernel a moment before the client's connect callback sets its
 * keepalive, so a test expecting the timer waits for it there (and fails on the wait if it never comes).
 */
const storeConnections = (options: Omit<PostgresStore.Options, "url">, settled: (socket: Socket) => boolean) =>
  Effect.gen(function*() {
    const port = Number(new URL(pg.url!).port)
    const before = new Set(connectionsTo(port).keys())
    const context = yield* Layer.build(freshStore(pg.url!, options))
    yield* Context.get(context, SqlClient.SqlClient)`SELECT 1`
    yield* Context.get(context, RunNotices.RunNotices).watch!("acme", "kept-alive")
    const listening = yield* Effect.fork(Stream.runDrain(Context.get(context, PgClient.PgClient).listen("artana_keepalive_test")))
    // Three connections of the store's own (the pool may hold more): wait until the listen's is open and every one
    // is settled.
    const opened = Effect.suspend(() => {
      const now = [...connectionsTo(port)].filter(([inode]) => !before.has(inode)).map(([, socket]) => socket)
      return now.length >= 3 && now.every(settled) ? Effect.succeed(now) : Effect.fail(now)
    })
    const sockets = yield* Effect.retry(opened, { schedule: Schedule.spaced("20 millis"), times: 500 }).pipe(
      Effect.orDieWith((now) =>
        new Error(`the store's three connections (pool, runs channel, listen) did not open and settle: ${JSON.stringify(now)}`)
      )
    )
    yield* Fiber.interrupt(listening)
    return sockets
  })

/** The keepalive timer (`tr` 2) is pending. */
const keptAlive = (socket: Socket) => socket.timer === 2

/** No statement's bytes unacknowledged (the retransmit timer, `tr` 1, is shown instead of the keepalive's). */
const quiet = (socket: Socket) => socket.timer !== 1

describe.skipIf(pg.url === undefined || process.platform !== "linux")(`keepalive on the store's connections (${pg.description})`, () => {
  it.scopedLive("every connection has its keepalive timer armed at the idle time asked for", () =>
    Effect.gen(function*() {
      const sockets = yield* storeConnections({ keepAlive: "5 seconds" }, keptAlive)
      expect(sockets.length).toBeGreaterThanOrEqual(3)
      for (const socket of sockets) {
        expect(socket.timer).toBe(2)
        expect(socket.ticks).toBeGreaterThan(0)
        expect(socket.ticks).toBeLessThanOrEqual(5 * TICKS)
      }
    }))

  it.scopedLive("by default, probes start after 30 seconds idle", () =>
    Effect.gen(function*() {
      const sockets = yield* storeConnections({}, keptAlive)
      for (const socket of sockets) {
        expect(socket.timer).toBe(2)
        expect(socket.ticks).toBeGreaterThan(5 * TICKS)
        expect(socket.ticks).toBeLessThanOrEqual(30 * TICKS)
      }
    }))

  it.scopedLive("keepAlive: false leaves the OS's default: no keepalive timer", () =>
    Effect.gen(function*() {
      const sockets = yield* storeConnections({ keepAlive: false }, quiet)
      expect(sockets.length).toBeGreaterThanOrEqual(3)
      for (const socket of sockets) expect(socket.timer).toBe(0)
    }))
})
