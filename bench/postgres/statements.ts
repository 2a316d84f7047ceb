// Statements sent by every `pg` client of this process (each is one round trip to the server), for the PostgreSQL
// benchmarks: `statements()` reads the count so far.
import pg from "pg"

let sent = 0
const query = pg.Client.prototype.query
pg.Client.prototype.query = function(this: pg.Client, ...args: Array<unknown>) {
  sent++
  return Reflect.apply(query, this, args)
} as typeof query

/** Statements sent so far by this process's `pg` clients. */
export const statements = (): number => sent
