// The MemoryStore contract on every implementation: in memory, SQLite (a temp file per test) and PostgreSQL (a
// fresh database per test), plus what only a database can show: memory that outlives the process's connection.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { inject } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { MemoryStore, SqlMemoryStore } from "@artana/agent"
import { MemoryStoreSuite } from "@artana/agent/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { SqliteStore } from "@artana/store-sqlite"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-agent-memory-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
let files = 0
const tempFile = () => path.join(root, `memory-${++files}.db`)

const sqlite = (filename: string, tablePrefix?: string) =>
  Layer.orDie(SqlMemoryStore.layer({ tablePrefix }).pipe(Layer.provide(SqliteStore.layerClient({ filename }))))

MemoryStoreSuite.suite("in memory", () => MemoryStore.layerMemory)
MemoryStoreSuite.suite("sqlite", () => sqlite(tempFile()))
MemoryStoreSuite.suite("sqlite with tablePrefix", () => sqlite(tempFile(), "artana_"))

describe("SqlMemoryStore on SQLite", () => {
  it.effect("memory outlives the connection: a new process (a new layer) on the same file reads it", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      const scope = { tenantId: "acme", agentId: "analyst" }
      // The store bundle and the memory store on one connection, as an application composes them.
      const live = SqlMemoryStore.layer().pipe(Layer.provideMerge(SqliteStore.layer({ filename })), Layer.orDie)
      yield* Effect.flatMap(MemoryStore.MemoryStore, (m) => m.append(scope, "The fiscal year starts in April.")).pipe(Effect.provide(live))
      const again = yield* Effect.flatMap(MemoryStore.MemoryStore, (m) => m.list(scope)).pipe(Effect.provide(live))
      expect(again.map((e) => e.content)).toEqual(["The fiscal year starts in April."])
    }))
})

const pg = PgTest.server(inject("artanaPg"))

describe.skipIf(pg.url === undefined)(`on PostgreSQL (${pg.description})`, () => {
  const fresh = (tablePrefix?: string) =>
    Layer.orDie(Layer.unwrapScoped(Effect.map(Effect.orDie(PgTest.freshDatabase(pg.url!)), (url) =>
      SqlMemoryStore.layer({ tablePrefix }).pipe(Layer.provide(PostgresStore.layerClient({ url }))))))
  MemoryStoreSuite.suite("postgres", () => fresh())
  MemoryStoreSuite.suite("postgres with tablePrefix", () => fresh("artana_"))
})
