// The EventStore and TaskQueue contract suites from core, against PostgresStore: one fresh database per test.
import { describe } from "@effect/vitest"
import { Layer } from "effect"
import { inject } from "vitest"
import { EventStoreSuite, TaskQueueSuite } from "@artana/core/testing/suites"
import { PgTest } from "@artana/store-postgres/testing"
import { freshStore } from "./pg.js"

const pg = PgTest.server(inject("artanaPg"))

describe.skipIf(pg.url === undefined)(`on PostgreSQL (${pg.description})`, () => {
  EventStoreSuite.suite("postgres", () => freshStore(pg.url!))
  EventStoreSuite.suite("postgres with tablePrefix", () => freshStore(pg.url!, { tablePrefix: "artana_" }))
  TaskQueueSuite.suite("postgres", () => Layer.orDie(freshStore(pg.url!)))
  TaskQueueSuite.suite("postgres with tablePrefix", () => Layer.orDie(freshStore(pg.url!, { tablePrefix: "artana_" })))
})
