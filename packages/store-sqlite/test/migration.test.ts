// The SqlEventStore migration suite from core against SQLite files: a database of an earlier schema, opened by the
// current code.
import { afterAll } from "@effect/vitest"
import { Effect } from "effect"
import { SqlEventStoreSuite } from "@artana/core/testing/suites"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-store-sqlite-migration-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const database = (tablePrefix?: string) =>
  Effect.sync(() => {
    const filename = path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")
    return { client: SqliteStore.layerClient({ filename }), store: SqliteStore.layer({ filename, tablePrefix }), tablePrefix }
  })

SqlEventStoreSuite.suite("sqlite", database())
SqlEventStoreSuite.suite("sqlite with tablePrefix", database("artana_"))
