// The ExperienceStore contract on every implementation: in memory, SQLite files, and PostgreSQL databases.
import { afterAll, describe } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { inject } from "vitest"
import { ExperienceStore, SqlExperienceStore } from "@artana/experience"
import { ExperienceStoreSuite } from "@artana/experience/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-experience-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

ExperienceStoreSuite.suite("memory", () => ExperienceStore.layerMemory)
ExperienceStoreSuite.suite("sqlite", () => SqlExperienceStore.layer().pipe(Layer.provide(SqliteStore.layer({ filename: tempDb() }))))
ExperienceStoreSuite.suite("sqlite with tablePrefix", () =>
  SqlExperienceStore.layer({ tablePrefix: "artana_" }).pipe(Layer.provide(SqliteStore.layer({ filename: tempDb(), tablePrefix: "artana_" }))))

const pg = PgTest.server(inject("artanaPg"))
describe.skipIf(pg.url === undefined)(`on PostgreSQL (${pg.description})`, () => {
  const fresh = (tablePrefix?: string) =>
    SqlExperienceStore.layer({ tablePrefix }).pipe(
      Layer.provide(Layer.unwrapScoped(Effect.map(Effect.orDie(PgTest.freshDatabase(pg.url!)), (url) => PostgresStore.layer({ url, tablePrefix }))))
    )
  ExperienceStoreSuite.suite("postgres", () => fresh())
  ExperienceStoreSuite.suite("postgres with tablePrefix", () => fresh("artana_"))
})
