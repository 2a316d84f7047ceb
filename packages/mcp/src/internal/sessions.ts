// The connections of one configured server: one for the whole process (`sessions: shared`), or one per tenant
// (`per_tenant`, the default), so a server that keeps state per connection (a browser, a scratch folder, a memory)
// never mixes two tenants' sessions. A tenant's connection is made on its first use and closed once it has been idle
// for the server's `idle_timeout_ms` with no call under way; the next use makes a new one.
import type * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import type { Server } from "../McpConfig.js"
import * as Connection from "./connection.js"

/** How long a tenant's connection to a `per_tenant` server is kept unused before it is closed (five minutes). */
export const DEFAULT_IDLE_MS = 300_000

interface Slot {
  readonly connection: Connection.Connection
  /** Lists and calls under way on it. */
  users: number
  lastUsed: number
}

export interface Sessions {
  readonly server: Server
  /** The connection `tenantId` uses (undefined: a use outside any run, as `artana mcp pin`'s listing). */
  readonly connection: (tenantId: string | undefined) => Connection.Connection
  /** Closes the tenants' connections idle since `now - idle_timeout_ms` (none for a shared server). */
  readonly sweep: (now: number) => Effect.Effect<void>
  /** Closes every connection, for good (the layer's scope closed). */
  readonly close: Effect.Effect<void>
}

export const perTenant = (server: Server): boolean => server.sessions !== "shared"

export const idleMillis = (server: Server): number => server.idle_timeout_ms ?? DEFAULT_IDLE_MS

export const make = (server: Server, provider: ConfigProvider.ConfigProvider): Sessions => {
  if (!perTenant(server)) {
    const shared = Connection.make(server, provider)
    return { server, connection: () => shared, sweep: () => Effect.void, close: shared.close }
  }
  const slots = new Map<string | undefined, Slot>()
  let closed = false
  // The slot is found (or made) and counted in one synchronous step, so a sweep never closes a connection a use holds.
  const use = <A, E>(tenantId: string | undefined, f: (c: Connection.Connection) => Effect.Effect<A, E>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        let slot = slots.get(tenantId)
        if (slot === undefined) {
          slot = { connection: Connection.make(server, provider), users: 0, lastUsed: Date.now() }
          // Once closed, a new connection refuses at once (`Connection.make` after `close`): nothing is left running.
          if (closed) Effect.runFork(slot.connection.close)
          else slots.set(tenantId, slot)
        }
        slot.users++
        return slot
      }),
      (slot) => f(slot.connection),
      (slot) =>
        Effect.sync(() => {
          slot.users--
          slot.lastUsed = Date.now()
        })
    )
  const connection = (tenantId: string | undefined): Connection.Connection => ({
    server,
    list: use(tenantId, (c) => c.list),
    call: (tool, qualified, args, options) => use(tenantId, (c) => c.call(tool, qualified, args, options)),
    // A tenant's connection is the pool's to close (idle, or with the layer).
    close: Effect.void
  })
  const idle = idleMillis(server)
  // Uninterruptible: the layer's scope, which interrupts the sweep before closing the rest, waits for the connections
  // a sweep took out of `slots` to be closed (else a process the sweep was ending outlived the scope).
  const sweep = (now: number) =>
    Effect.uninterruptible(Effect.suspend(() => {
      const stale: Array<Connection.Connection> = []
      for (const [tenantId, slot] of slots) {
        if (slot.users === 0 && now - slot.lastUsed >= idle) {
          slots.delete(tenantId)
          stale.push(slot.connection)
        }
      }
      return Effect.forEach(stale, (c) => c.close, { concurrency: "unbounded", discard: true })
    }))
  const close = Effect.suspend(() => {
    closed = true
    const all = [...slots.values()].map((s) => s.connection)
    slots.clear()
    return Effect.forEach(all, (c) => c.close, { concurrency: "unbounded", discard: true })
  })
  return { server, connection, sweep, close }
}
