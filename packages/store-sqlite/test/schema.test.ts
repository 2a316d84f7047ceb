// The schema guard (a database from a newer Artana, or changed by hand, is refused on open, before anything is
// written; an older one migrates) and read-only stores (no migration, no write, on a file the process may only read).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { EventStore, type Errors, SqlEventStore, SqlMigrations, SqlTaskQueue, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { isRoot, openAsNobody, ownedByProcessUser } from "./helpers.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-schema-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
if (isRoot) fs.chmodSync(root, 0o711) // `nobody` may traverse it to reach its scenario's directory

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = { _tag: "RunStarted", workflow: "w", input: null, tenant } as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

/** The highest migration this code knows, per set: what a SchemaMismatch must name as this Artana's version. */
const codeVersion = (migrations: Readonly<Record<string, unknown>>) => Math.max(...Object.keys(migrations).map((id) => Number.parseInt(id, 10)))

/** A database file holding run-1 (two events), written and closed by this code; returns its path. */
const seeded = Effect.gen(function*() {
  const dir = fs.mkdtempSync(path.join(root, "db-"))
  const filename = path.join(dir, "artana.db")
  yield* Effect.scoped(Effect.gen(function*() {
    const store = Context.get(yield* Layer.build(SqliteStore.layer({ filename })), EventStore.EventStore)
    yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("run-1", "acme", [], [started, step("a")]) })
  }))
  return filename
})

/** Runs statements on the file with the driver directly, as a person (or another program) would. */
const byHand = (filename: string, ...statements: ReadonlyArray<string>) => {
  const Database = SqliteStore.driver()
  const db = new Database(filename)
  try {
    for (const statement of statements) db.exec(statement)
  } finally {
    db.close()
  }
}

/** What the driver reads from the file: its user_version and its tables. */
const inspect = (filename: string) => {
  const Database = SqliteStore.driver()
  const db = new Database(filename, { readonly: true })
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as ReadonlyArray<{ name: string }>
    return { userVersion: db.pragma("user_version", { simple: true }), tables: tables.map((t) => t.name) }
  } finally {
    db.close()
  }
}

/** The database file's bytes and its modification time, to show that opening it wrote nothing. */
const fingerprint = (filename: string) => ({
  sha256: crypto.createHash("sha256").update(fs.readFileSync(filename)).digest("hex"),
  mtimeMs: fs.statSync(filename).mtimeMs
})

/** The file as the Artana before the migration ledgers left it: no ledger tables, user_version 0. */
const asBeforeLedgers = (filename: string) =>
  byHand(filename, "DROP TABLE event_store_migrations", "DROP TABLE task_queue_migrations", "DROP TABLE live_deltas", "DROP TABLE live_migrations", "DROP TABLE budget_holds", "PRAGMA user_version = 0")

const open = (options: SqliteStore.Options) =>
  Effect.scoped(Effect.gen(function*() {
    const store = Context.get(yield* Layer.build(SqliteStore.layer(options)), EventStore.EventStore)
    return { runs: (yield* store.listRuns("acme")).map((r) => r.runId), events: (yield* store.readEvents("acme", "run-1")).length }
  }))

const mismatch = (options: SqliteStore.Options): Effect.Effect<Errors.SchemaMismatch, unknown> =>
  Effect.flatMap(Effect.flip(open(options)), (error) => (error._tag === "SchemaMismatch" ? Effect.succeed(error) : Effect.die(error)))

describe("a database from a newer schema is refused on open, naming both versions, and is not written", () => {
  it.effect("a SQLite user_version newer than this Artana's (999)", () =>
    Effect.gen(function*() {
      const filename = yield* seeded
      byHand(filename, "PRAGMA user_version = 999")
      const before = fingerprint(filename)
      for (const readOnly of [false, true]) {
        const error = yield* mismatch({ filename, readOnly })
        expect(error).toMatchObject({ schema: "sqlite file", databaseVersion: 999, codeVersion: SqlMigrations.SQLITE_FILE_VERSION })
        expect(error.message).toContain(`schema is at version 999, this Artana's at version ${SqlMigrations.SQLITE_FILE_VERSION}`)
        expect(error.message).toContain("upgrade Artana")
      }
      expect(fingerprint(filename).sha256).toBe(before.sha256)
      expect(inspect(filename).userVersion).toBe(999)
    }))

  it.effect("a migration in the ledger that this Artana does not know", () =>
    Effect.gen(function*() {
      const filename = yield* seeded
      byHand(filename, "INSERT INTO event_store_migrations (id) VALUES ('99_from_the_future')")
      const before = fingerprint(filename)
      for (const readOnly of [false, true]) {
        const error = yield* mismatch({ filename, readOnly })
        expect(error).toMatchObject({ schema: "event_store", databaseVersion: 99, codeVersion: codeVersion(SqlEventStore.migrations()) })
        expect(error.message).toContain("99_from_the_future")
        expect(error.message).toContain("upgrade Artana")
      }
      expect(fingerprint(filename).sha256).toBe(before.sha256)
    }))

  it.effect("a renamed column fails the open, naming the table and the column, not a later query", () =>
    Effect.gen(function*() {
      const filename = yield* seeded
      byHand(filename, "ALTER TABLE events RENAME COLUMN step_key TO step")
      const before = fingerprint(filename)
      for (const readOnly of [false, true]) {
        const error = yield* mismatch({ filename, readOnly })
        expect(error.schema).toBe("event_store")
        expect(error.reason).toContain("table events has no column step_key")
      }
      expect(fingerprint(filename).sha256).toBe(before.sha256)
      byHand(filename, "ALTER TABLE tasks RENAME COLUMN lease_expires_at TO lease_until", "ALTER TABLE events RENAME COLUMN step TO step_key")
      const queue = yield* mismatch({ filename })
      expect(queue).toMatchObject({ schema: "task_queue", codeVersion: codeVersion(SqlTaskQueue.migrations()) })
      expect(queue.reason).toContain("table tasks has no column lease_expires_at")
    }))
})

describe("an older database migrates as before", () => {
  it.effect("a file from before the ledgers opens, is recorded in the ledgers and user_version, and keeps its runs", () =>
    Effect.gen(function*() {
      const filename = yield* seeded
      asBeforeLedgers(filename)
      expect(inspect(filename)).toEqual({ userVersion: 0, tables: ["events", "runs", "tasks"] })
      expect(yield* open({ filename })).toEqual({ runs: ["run-1"], events: 2 })
      expect(inspect(filename)).toEqual({
        userVersion: SqlMigrations.SQLITE_FILE_VERSION,
        tables: ["budget_holds", "event_store_migrations", "events", "live_deltas", "live_migrations", "runs", "task_queue_migrations", "tasks"]
      })
      const Database = SqliteStore.driver()
      const db = new Database(filename, { readonly: true })
      const ledger = (db.prepare("SELECT id FROM event_store_migrations ORDER BY id").all() as ReadonlyArray<{ id: string }>).map((r) => r.id)
      db.close()
      expect(ledger).toEqual(Object.keys(SqlEventStore.migrations()).sort())
    }))
})

/** Tests that start child processes (a TypeScript loader's cold start each): slow on a busy machine, not wrong. */
const CHILD_TIMEOUT = 600_000

describe("readOnly: true", () => {
  it.effect("reads without migrating or writing: an older file keeps its schema and its bytes, and an append is refused", () =>
    Effect.gen(function*() {
      const filename = yield* seeded
      asBeforeLedgers(filename)
      const before = fingerprint(filename)
      const appended = yield* Effect.scoped(Effect.gen(function*() {
        const store = Context.get(yield* Layer.build(SqliteStore.layer({ filename, readOnly: true })), EventStore.EventStore)
        expect((yield* store.listRuns("acme")).map((r) => r.runId)).toEqual(["run-1"])
        expect((yield* store.readEvents("acme", "run-1")).map((e) => e.seq)).toEqual([1, 2])
        return yield* Effect.either(store.append({ runId: "run-2", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("run-2", "acme", [], [started]) }))
      }))
      expect(appended._tag).toBe("Left")
      expect(inspect(filename)).toEqual({ userVersion: 0, tables: ["events", "runs", "tasks"] })
      expect(fingerprint(filename)).toEqual(before)
    }))

  it.effect("a missing file is StoreUnavailable, and is not created", () =>
    Effect.gen(function*() {
      const filename = path.join(fs.mkdtempSync(path.join(root, "db-")), "absent.db")
      const error = yield* Effect.flip(open({ filename, readOnly: true }))
      expect(error).toMatchObject({ _tag: "StoreUnavailable", location: filename, reason: `there is no file ${filename} (a read-only store creates none)` })
      expect(fs.existsSync(filename)).toBe(false)
    }))

  // As root (CI), the store is opened by a child running as `nobody`, whom the permissions stop.
  it.live("opens a file this process may only read, which a writable open refuses, and leaves its bytes as they were", () =>
    Effect.gen(function*() {
      const filename = yield* seeded
      ownedByProcessUser(path.dirname(filename), filename)
      fs.chmodSync(filename, 0o444)
      const before = fingerprint(filename)
      const writable = yield* openAsNobody(filename)
      expect(writable).toMatchObject({ outcome: "error", error: { _tag: "StoreUnavailable" } })
      const read = yield* openAsNobody(filename, { readOnly: true })
      expect(read).toEqual({ outcome: "opened", runs: ["run-1"] })
      expect(fingerprint(filename)).toEqual(before)
    }), CHILD_TIMEOUT)

  it.live("opens a WAL file in a directory this process may not write (no -wal or -shm can be created beside it)", () =>
    Effect.gen(function*() {
      const filename = yield* seeded
      const dir = path.dirname(filename)
      ownedByProcessUser(dir, filename)
      fs.chmodSync(filename, 0o444)
      fs.chmodSync(dir, 0o555)
      const before = fingerprint(filename)
      const read = yield* openAsNobody(filename, { readOnly: true })
      expect(read).toEqual({ outcome: "opened", runs: ["run-1"] })
      expect(fs.readdirSync(dir)).toEqual(["artana.db"])
      expect(fingerprint(filename)).toEqual(before)
      fs.chmodSync(dir, 0o755)
    }), CHILD_TIMEOUT)
})
