// The EventStore and TaskQueue contract suites from core, against PostgresStore: one fresh database per test.
import { describe } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlEventStore } from "@artana/core"
import { inject } from "vitest"
import { EventStoreSuite, TaskQueueSuite } from "@artana/core/testing/suites"
import { PgTest } from "@artana/store-postgres/testing"
import { freshStore } from "./pg.js"

const pg = PgTest.server(inject("artanaPg"))

describe.skipIf(pg.url === undefined)(`on PostgreSQL (${pg.description})`, () => {
  EventStoreSuite.suite("postgres", () => freshStore(pg.url!))
  EventStoreSuite.suite("postgres with tablePrefix", () => freshStore(pg.url!, { tablePrefix: "artana_" }))
  EventStoreSuite.suite("postgres, unnamed statements", () => freshStore(pg.url!, { preparedStatements: false }))
  // The event store on a client the application built: no prepared statements in context, so every statement
  // goes through SqlClient.
  EventStoreSuite.suite("postgres on a plain PgClient", () =>
    Layer.unwrapScoped(Effect.map(Effect.orDie(PgTest.freshDatabase(pg.url!)), (url) =>
      SqlEventStore.layer().pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url) }))))))
  TaskQueueSuite.suite("postgres", () => Layer.orDie(freshStore(pg.url!)))
  TaskQueueSuite.suite("postgres with tablePrefix", () => Layer.orDie(freshStore(pg.url!, { tablePrefix: "artana_" })))
})
