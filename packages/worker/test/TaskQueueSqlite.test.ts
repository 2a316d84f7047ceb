import { afterAll } from "@effect/vitest"
import { Layer } from "effect"
import { TaskQueueSuite } from "@artana/core/testing/suites"
import { SqliteStore } from "@artana/store-sqlite"
import { cleanup, tempDb } from "./helpers.js"

afterAll(cleanup)

// The SQL queue as the SQLite store bundles it: one database file per test.
TaskQueueSuite.suite("sqlite", () => Layer.orDie(SqliteStore.layer({ filename: tempDb() })))
TaskQueueSuite.suite("sqlite with tablePrefix", () => Layer.orDie(SqliteStore.layer({ filename: tempDb(), tablePrefix: "artana_" })))
