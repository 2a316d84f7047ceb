// The SqlEventStore migration suite from core against PostgreSQL: a database of an earlier schema (one fresh
// database per test), opened by the current code through PostgresStore (prepared statements included).
import { describe } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { inject } from "vitest"
import { SqlEventStoreSuite } from "@artana/core/testing/suites"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))

const database = (tablePrefix?: string) =>
  Effect.map(Effect.orDie(PgTest.freshDatabase(pg.url!)), (url) => ({
    client: PgClient.layer({ url: Redacted.make(url) }),
    store: PostgresStore.layer({ url, tablePrefix }),
    tablePrefix
  }))

describe.skipIf(pg.url === undefined)(`on PostgreSQL (${pg.description})`, () => {
  SqlEventStoreSuite.suite("postgres", database())
  SqlEventStoreSuite.suite("postgres with tablePrefix", database("artana_"))
})
