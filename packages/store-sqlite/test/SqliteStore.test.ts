import { afterAll, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Either, Exit, Layer } from "effect"
import { SqlClient } from "@effect/sql"
import { type Event, EventStore, Json, SqlEventStore, SqlMigrations, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { EventStoreSuite } from "@artana/core/testing/suites"
import { SqliteStore } from "@artana/store-sqlite"
import { createHash } from "node:crypto"
import { isRoot, openAsNobody, type OpenOutput, ownedByProcessUser } from "./helpers.js"
import { createRequire } from "node:module"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-store-sqlite-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

if (isRoot) fs.chmodSync(root, 0o711) // `nobody` may traverse it (not list it) to reach its scenario's directory

/** A fresh directory per call, so every test has its own database. */
const tempDir = () => fs.mkdtempSync(path.join(root, "db-"))
const tempDb = () => path.join(tempDir(), "artana.db")

EventStoreSuite.suite("sqlite", () => SqliteStore.layer({ filename: tempDb() }))
EventStoreSuite.suite("sqlite with tablePrefix", () => SqliteStore.layer({ filename: tempDb(), tablePrefix: "artana_" }))

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** Builds the layer in the test's scope and returns its services. */
const open = (options: SqliteStore.Options) =>
  Effect.map(Layer.build(SqliteStore.layer(options)), (context) => ({
    store: Context.get(context, EventStore.EventStore),
    sql: Context.get(context, SqlClient.SqlClient)
  }))

const started = (workflow = "w") => ({ _tag: "RunStarted", workflow, input: null, tenant }) as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

describe("SqliteStore", () => {
  it("runs on node:sqlite from Node.js 24 and on better-sqlite3 12 before; the store's file is readable with it", () => {
    const major = Number(process.versions.node.split(".")[0])
    expect(SqliteStore.driverName).toBe(major >= 24 ? "node:sqlite" : "better-sqlite3")
    if (SqliteStore.driverName === "better-sqlite3") {
      const require = createRequire(import.meta.url)
      expect(SqliteStore.driver()).toBe(require("better-sqlite3"))
      expect((require("better-sqlite3/package.json") as { version: string }).version).toMatch(/^12\./)
    }
    const Sqlite = SqliteStore.driver()
    const db = new Sqlite(":memory:")
    expect(db.prepare("SELECT sqlite_version() AS v").get()).toMatchObject({ v: expect.stringMatching(/^3\./) })
    expect(db.pragma("user_version", { simple: true })).toBe(0)
    db.close()
  })

  it("names a driver error as better-sqlite3 does (the code the stores read), on either driver", () => {
    const Sqlite = SqliteStore.driver()
    const db = new Sqlite(":memory:")
    try {
      db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE) WITHOUT ROWID")
      db.prepare("INSERT INTO t VALUES (1, 'a')").run()
      expect(() => db.prepare("INSERT INTO t VALUES (1, 'b')").run()).toThrow(expect.objectContaining({ code: "SQLITE_CONSTRAINT_PRIMARYKEY" }))
      expect(() => db.prepare("INSERT INTO t VALUES (2, 'a')").run()).toThrow(expect.objectContaining({ code: "SQLITE_CONSTRAINT_UNIQUE" }))
      expect(() => db.prepare("SELECT * FROM nope")).toThrow(expect.objectContaining({ code: "SQLITE_ERROR" }))
    } finally {
      db.close()
    }
  })

  it.scoped("safe integers hold for the query that asks for them only, in rows and in value arrays", () =>
    Effect.gen(function*() {
      const client = yield* SqliteStore.make({ filename: tempDb() })
      const big = client`SELECT 9007199254740993 AS n`
      const safe = Effect.provideService(SqlClient.SafeIntegers, true)
      expect(yield* safe(big)).toEqual([{ n: 9007199254740993n }])
      expect(typeof (yield* big)[0]!.n).toBe("number")
      expect(yield* safe(big.values)).toEqual([[9007199254740993n]])
      expect(typeof (yield* big.values)[0]![0]).toBe("number")
    }))

  it.scoped("the client keeps @effect/sql-sqlite-node's extras: export, and backup to a file another connection reads", () =>
    Effect.gen(function*() {
      const client = yield* SqliteStore.make({ filename: tempDb() })
      yield* client`CREATE TABLE notes (body TEXT)`
      yield* client`INSERT INTO notes ${client.insert({ body: "kept" })}`
      const bytes = yield* client.export
      expect(Buffer.from(bytes.subarray(0, 15)).toString("latin1")).toBe("SQLite format 3")
      const copy = tempDb()
      yield* client.backup(copy)
      const Sqlite = SqliteStore.driver()
      const other = new Sqlite(copy, { readonly: true })
      expect(other.prepare("SELECT body FROM notes").all()).toEqual([{ body: "kept" }])
      other.close()
    }))

  it.scoped("configures the connection: WAL, synchronous=FULL by default, busy_timeout, foreign keys", () =>
    Effect.gen(function*() {
      const { sql } = yield* open({ filename: tempDb() })
      expect(yield* sql`PRAGMA journal_mode`).toEqual([{ journal_mode: "wal" }])
      expect(yield* sql`PRAGMA synchronous`).toEqual([{ synchronous: 2 }])
      expect(yield* sql`PRAGMA busy_timeout`).toEqual([{ timeout: 5000 }])
      expect(yield* sql`PRAGMA foreign_keys`).toEqual([{ foreign_keys: 1 }])
    }))

  it.scoped("synchronous: \"normal\" is an explicit opt-in; busyTimeout is honoured", () =>
    Effect.gen(function*() {
      const { sql } = yield* open({ filename: tempDb(), synchronous: "normal", busyTimeout: "250 millis" })
      expect(yield* sql`PRAGMA synchronous`).toEqual([{ synchronous: 1 }])
      expect(yield* sql`PRAGMA busy_timeout`).toEqual([{ timeout: 250 }])
    }))

  it.scoped("creates its tables with the prefix, and provides the SqlClient to other services", () =>
    Effect.gen(function*() {
      const { sql } = yield* open({ filename: tempDb(), tablePrefix: "artana_" })
      const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
      expect(tables.map((t) => t.name)).toEqual(["artana_budget_holds", "artana_event_store_migrations", "artana_events", "artana_live_deltas", "artana_live_migrations", "artana_runs", "artana_task_queue_migrations", "artana_tasks"])
    }))

  it.scoped("what one layer appended survives closing it and opening the file again", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const events = TestLog.chain("run-1", "acme", [], [started(), step("a")])
      yield* Effect.scoped(Effect.flatMap(open({ filename }), ({ store }) =>
        store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })))
      const { store } = yield* open({ filename })
      expect(yield* store.readEvents("acme", "run-1")).toEqual(events)
      expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 2, status: "running" })
    }))

  it.scoped("integers that come back as bigint (SqlClient.SafeIntegers) are normalised to numbers", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open({ filename: tempDb() })
      const events = TestLog.chain("run-1", "acme", [], [started(), step("a")])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })
      const safe = <A, E>(effect: Effect.Effect<A, E>) => Effect.provideService(effect, SqlClient.SafeIntegers, true)
      expect(yield* safe(sql`SELECT head_seq FROM runs`)).toEqual([{ head_seq: 2n }])
      expect(yield* safe(store.readEvents("acme", "run-1"))).toEqual(events)
      expect(yield* safe(store.getRun("acme", "run-1"))).toMatchObject({ headSeq: 2, createdAt: events[0]!.timestamp })
      expect((yield* safe(store.listRuns("acme")))[0]?.updatedAt).toBe(events[1]!.timestamp)
    }))

  it.scoped("a file made before owner epochs gains the column (its runs at epoch 0) and is fenced from then on", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const before = TestLog.chain("run-1", "acme", [], [started(), step("a")])
      // The schema before the owner epoch (migrations 1 and 2), with a run appended through its head trigger.
      yield* Effect.gen(function*() {
        const sql = Context.get(yield* Layer.build(SqliteStore.layerClient({ filename })), SqlClient.SqlClient)
        const { "4_owner_epoch": _added, ...older } = SqlEventStore.migrations()
        yield* Effect.orDie(Effect.provideService(SqlMigrations.run({ name: "event_store", migrations: older }), SqlClient.SqlClient, sql))
        yield* sql`INSERT INTO runs (run_id, tenant_id, workflow, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at) VALUES ('run-1', 'acme', 'w', 'run-1', 'running', 0, ${before[0]!.prevHash}, 0, 0, 0)`
        for (const e of before) {
          yield* sql`INSERT INTO events (run_id, seq, event_id, tenant_id, timestamp, type, step_key, payload, prev_hash, hash) VALUES (${e.runId}, ${e.seq}, ${e.eventId}, ${e.tenantId}, ${e.timestamp}, ${e.type}, ${e.stepKey}, ${JSON.stringify(e.payload)}, ${e.prevHash}, ${e.hash})`
        }
        expect(yield* sql`SELECT name FROM pragma_table_info('runs') WHERE name = 'owner_epoch'`).toEqual([])
      }).pipe(Effect.scoped, Effect.orDie)

      const { store } = yield* open({ filename })
      expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 2, ownerEpoch: 0 })
      const claim = TestLog.chain("run-1", "acme", before, [{ _tag: "RunResumed", reason: "takeover" }])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 2, events: claim, ownerEpoch: 1, claim: true })
      // Opened again (every migration runs on each open on SQLite): the column is there once, the epoch kept.
      const again = yield* open({ filename })
      expect(yield* again.store.getRun("acme", "run-1")).toMatchObject({ headSeq: 3, ownerEpoch: 1 })
      const stale = TestLog.chain("run-1", "acme", [...before, ...claim], [step("stale")])
      expect(yield* Effect.flip(again.store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 3, events: stale, ownerEpoch: 0 })))
        .toMatchObject({ _tag: "OwnershipLost", ownerEpoch: 0 })
    }))

  describe("two connections on one file", () => {
    it.scoped("see each other's writes", () =>
      Effect.gen(function*() {
        const filename = tempDb()
        const a = yield* open({ filename })
        const b = yield* open({ filename })
        const first = TestLog.chain("run-1", "acme", [], [started()])
        yield* a.store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: first })
        expect(yield* b.store.readEvents("acme", "run-1")).toEqual(first)

        const second = TestLog.chain("run-1", "acme", first, [step("by-b")])
        yield* b.store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: second })
        expect(yield* a.store.readEvents("acme", "run-1")).toEqual([...first, ...second])
        expect(yield* a.store.getRun("acme", "run-1")).toEqual(yield* b.store.getRun("acme", "run-1"))
        expect((yield* a.store.listRuns("acme")).map((r) => r.headSeq)).toEqual([2])
      }))

    it.scoped("concurrent appends at the same expectedSeq: exactly one succeeds, the other is a SequenceConflict", () =>
      Effect.gen(function*() {
        const filename = tempDb()
        const a = yield* open({ filename })
        const b = yield* open({ filename })
        for (let round = 0; round < 20; round++) {
          const runId = `run-${round}`
          // Creating the run races too: both writers append at expectedSeq 0.
          const create = (name: string) =>
            TestLog.chain(runId, "acme", [], [started(name), step(name)], 1_000 * round)
          const created = yield* Effect.all([
            Effect.either(a.store.append({ runId, tenantId: "acme", expectedSeq: 0, events: create("a") })),
            Effect.either(b.store.append({ runId, tenantId: "acme", expectedSeq: 0, events: create("b") }))
          ], { concurrency: "unbounded" })
          expect(created.filter(Either.isRight).length).toBe(1)
          expect(created.filter(Either.isLeft).map((e) => e.left._tag)).toEqual(["SequenceConflict"])

          const head = yield* a.store.readEvents("acme", runId)
          const next = (name: string) => TestLog.chain(runId, "acme", head, [step(name), step(`${name}-2`)])
          const results = yield* Effect.all([
            Effect.either(b.store.append({ runId, tenantId: "acme", expectedSeq: 2, events: next("b") })),
            Effect.either(a.store.append({ runId, tenantId: "acme", expectedSeq: 2, events: next("a") }))
          ], { concurrency: "unbounded" })
          expect(results.filter(Either.isRight).length).toBe(1)
          expect(results.filter(Either.isLeft).map((e) => e.left)).toMatchObject([{ _tag: "SequenceConflict", expectedSeq: 2 }])

          // The log did not fork: one writer's batch, whole, and a valid chain.
          const log = yield* b.store.readEvents("acme", runId)
          expect(log.map((e) => e.seq)).toEqual([1, 2, 3, 4])
          expect(Verify.verifyEvents(runId, log).ok).toBe(true)
          expect(yield* a.store.getRun("acme", runId)).toMatchObject({ headSeq: 4, headHash: log[3]!.hash })
        }
      }))
  })

  describe("a database that cannot be opened fails with StoreUnavailable", () => {
    const unavailable = (filename: string) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(open({ filename }))
        // A typed failure, not a defect and not a raw SqlError.
        expect(Exit.isFailure(exit) && exit.cause._tag === "Fail").toBe(true)
        const error = yield* Effect.flip(open({ filename }))
        if (error._tag !== "StoreUnavailable") return yield* Effect.die(error)
        expect(error.store).toBe("sqlite")
        expect(error.location).toBe(filename)
        expect(error.message).toContain(filename)
        return error
      })

    it.scoped("its directory is missing (and is not created)", () =>
      Effect.gen(function*() {
        const dir = path.join(tempDir(), "missing")
        const error = yield* unavailable(path.join(dir, "artana.db"))
        expect(error.reason).toBe(`the directory ${dir} does not exist (create it first, or fix the path)`)
        expect(fs.existsSync(dir)).toBe(false)
      }))

    it.scoped("a part of the path is a regular file", () =>
      Effect.gen(function*() {
        const file = path.join(tempDir(), "plain-file")
        fs.writeFileSync(file, "not a directory")
        const error = yield* unavailable(path.join(file, "artana.db"))
        expect(error.reason).toBe(`${file} is a file, not a directory`)
        expect(fs.readFileSync(file, "utf8")).toBe("not a directory")
      }))

    it.scoped("the path is a directory", () =>
      Effect.gen(function*() {
        const dir = tempDir()
        const error = yield* unavailable(dir)
        expect(error.reason).toContain("is a directory, not a database file")
      }))

    it.scoped("the file is not a SQLite database", () =>
      Effect.gen(function*() {
        const filename = tempDb()
        fs.writeFileSync(filename, "name,amount\n".repeat(500))
        const error = yield* unavailable(filename)
        expect(error.reason).toContain("not a SQLite database")
        expect(fs.readFileSync(filename, "utf8")).toBe("name,amount\n".repeat(500))
      }))

    it.scoped("the file system refuses the path", () =>
      Effect.gen(function*() {
        const error = yield* unavailable("/proc/artana-store-test.db")
        // Root may create files in /proc as far as access(2) knows; anyone else is told permission is denied.
        expect(error.reason).toMatch(/SQLite cannot open the file|permission denied/)
      }))

    /**
     * Opens the store as a process that file permissions apply to, and returns its StoreUnavailable. Root
     * bypasses them, so as root (CI) the store is opened by a child process running as `nobody`: the
     * scenario's directory and file are then given to `nobody` (`ownedByProcessUser`), exactly as they are
     * this process's own when it is not root.
     */
    const unavailableToProcessUser = (filename: string) =>
      isRoot
        ? Effect.gen(function*() {
          const child = yield* openAsNobody(filename)
          expect(child.outcome, JSON.stringify(child)).toBe("error")
          const error = (child as Extract<OpenOutput, { outcome: "error" }>).error
          expect(error._tag).toBe("StoreUnavailable")
          expect(error.store).toBe("sqlite")
          expect(error.location).toBe(filename)
          expect(error.message).toContain(filename)
          return error
        })
        : unavailable(filename)

    it.scoped("permission denied on the file", () =>
      Effect.gen(function*() {
        const filename = tempDb()
        yield* Effect.scoped(open({ filename }))
        ownedByProcessUser(path.dirname(filename), filename)
        fs.chmodSync(filename, 0o000)
        const error = yield* unavailableToProcessUser(filename)
        expect(error.reason).toBe(`permission denied: this process may not read and write ${filename}`)
        fs.chmodSync(filename, 0o644)
      }))

    it.scoped("a file this process may only read", () =>
      Effect.gen(function*() {
        const filename = tempDb()
        yield* Effect.scoped(open({ filename }))
        ownedByProcessUser(path.dirname(filename), filename)
        fs.chmodSync(filename, 0o444)
        const error = yield* unavailableToProcessUser(filename)
        expect(error.reason).toBe(`permission denied: this process may not read and write ${filename} (to read it, open it with readOnly: true)`)
        fs.chmodSync(filename, 0o644)
      }))

    it.scoped("permission denied on the directory", () =>
      Effect.gen(function*() {
        const dir = tempDir()
        ownedByProcessUser(dir)
        fs.chmodSync(dir, 0o500)
        const filename = path.join(dir, "artana.db")
        const error = yield* unavailableToProcessUser(filename)
        expect(error.reason).toContain(`permission denied: this process may not create files in ${dir}`)
        expect(fs.existsSync(filename)).toBe(false)
        fs.chmodSync(dir, 0o700)
      }))
  })

  describe("tampering with the file is detectable with verifyEvents", () => {
    const seeded = Effect.gen(function*() {
      const opened = yield* open({ filename: tempDb() })
      const events = TestLog.chain("run-1", "acme", [], [started(), step("a"), step("b"), step("c"), { _tag: "RunCompleted", output: "c" }])
      yield* opened.store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })
      const verify = Effect.gen(function*() {
        const run = yield* opened.store.getRun("acme", "run-1")
        const read: ReadonlyArray<Event.Event> = yield* opened.store.readEvents("acme", "run-1")
        return Verify.verifyEvents("run-1", read, { heads: [{ source: "store", seq: run.headSeq, hash: run.headHash }] })
      })
      expect((yield* verify).ok).toBe(true)
      return { ...opened, verify }
    })

    it.scoped("an UPDATE of a payload names the altered seq", () =>
      Effect.gen(function*() {
        const { sql, verify } = yield* seeded
        yield* sql`UPDATE events SET payload = json_set(payload, '$.value', 'forged') WHERE run_id = 'run-1' AND seq = 3`
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 3 })
      }))

    it.scoped("a DELETE of an event names the missing seq", () =>
      Effect.gen(function*() {
        const { sql, verify } = yield* seeded
        yield* sql`DELETE FROM events WHERE run_id = 'run-1' AND seq = 2`
        const report = yield* verify
        expect(report).toMatchObject({ ok: false, firstBrokenSeq: 2 })
        expect(report.reason).toContain("missing")
      }))

    it.scoped("a DELETE of the last events is caught by the run row's head", () =>
      Effect.gen(function*() {
        const { sql, verify } = yield* seeded
        yield* sql`DELETE FROM events WHERE run_id = 'run-1' AND seq >= 4`
        const report = yield* verify
        expect(report).toMatchObject({ ok: false, firstBrokenSeq: 4 })
        expect(report.reason).toContain("truncated")
      }))

    it.scoped("a field added to a stored payload, which decoding drops, breaks the chain at its seq", () =>
      Effect.gen(function*() {
        const { sql, store, verify } = yield* seeded
        yield* sql`UPDATE events SET payload = json_set(payload, '$.admin', 1) WHERE run_id = 'run-1' AND seq = 3`
        // Decoding drops the field: the event reads back as it was, and only the stored bytes show the change.
        const read = yield* store.readEvents("acme", "run-1")
        expect(read[2]!.payload).toEqual(step("b"))
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 3 })
      }))

    it.scoped("any byte changed in a stored payload breaks the chain, even one JSON ignores", () =>
      Effect.gen(function*() {
        const { sql, verify } = yield* seeded
        yield* sql`UPDATE events SET payload = payload || ' ' WHERE run_id = 'run-1' AND seq = 2`
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 2 })
      }))

    it.scoped("a type column changed to another event type breaks the chain; to an unknown type, reading is a StoreError naming the row", () =>
      Effect.gen(function*() {
        const { sql, store, verify } = yield* seeded
        yield* sql`UPDATE events SET type = 'RunFailed' WHERE run_id = 'run-1' AND seq = 3`
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 3 })
        yield* sql`UPDATE events SET type = 'Forged' WHERE run_id = 'run-1' AND seq = 3`
        const error = yield* Effect.flip(store.readEvents("acme", "run-1"))
        expect(error._tag).toBe("StoreError")
        expect(error.message).toContain("run run-1 seq 3")
        expect(error.message).toContain(`unknown event type "Forged"`)
      }))

    it.scoped("a log written by an earlier release (hashes over the payload's canonical value) still verifies; spacing added to it does not", () =>
      Effect.gen(function*() {
        const { sql, store } = yield* open({ filename: tempDb() })
        // The earlier scheme: SHA-256(prevHash || canonical JSON of the event without hash), stored as JSON.stringify.
        let prevHash = "0".repeat(64)
        const legacy = TestLog.chain("old", "acme", [], [started(), step("a"), { _tag: "RunCompleted", output: "a" }]).map((e) => {
          const { hash: _hash, ...rest } = { ...e, prevHash }
          const hash = createHash("sha256").update(prevHash + Json.canonical(JSON.parse(JSON.stringify(rest)))).digest("hex")
          prevHash = hash
          return { ...rest, hash }
        })
        yield* store.append({ runId: "old", tenantId: "acme", expectedSeq: 0, events: legacy })
        const verify = Effect.map(store.readEvents("acme", "old"), (read) => Verify.verifyEvents("old", read))
        expect(yield* verify).toMatchObject({ ok: true, events: 3 })
        yield* sql`UPDATE events SET payload = replace(payload, '","', '", "') WHERE run_id = 'old' AND seq = 2`
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 2 })
      }))

    it.scoped("a payload that no longer decodes is a StoreError naming the run and seq", () =>
      Effect.gen(function*() {
        const { sql, store } = yield* seeded
        yield* sql`UPDATE events SET payload = '{"_tag":"StepCompleted"}' WHERE run_id = 'run-1' AND seq = 4`
        const error = yield* Effect.flip(store.readEvents("acme", "run-1"))
        expect(error._tag).toBe("StoreError")
        expect(error.message).toContain("run run-1 seq 4")
      }))
  })

  describe("layerConfig", () => {
    it.scoped("opens the file named by ARTANA_DB", () =>
      Effect.gen(function*() {
        const filename = tempDb()
        const config = Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["ARTANA_DB", filename]])))
        const context = yield* Layer.build(Layer.provide(SqliteStore.layerConfig(), config))
        const store = Context.get(context, EventStore.EventStore)
        yield* store.append({ runId: "r", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("r", "acme", [], [started()]) })
        expect(fs.existsSync(filename)).toBe(true)
        expect((yield* store.listRuns("acme")).map((r) => r.runId)).toEqual(["r"])
      }))

    it.scoped("without ARTANA_DB it fails with a ConfigError naming it", () =>
      Effect.gen(function*() {
        const config = Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))
        const error = yield* Effect.flip(Layer.build(Layer.provide(SqliteStore.layerConfig(), config)))
        expect(error._tag).not.toBe("StoreUnavailable")
        expect(String(error)).toContain("ARTANA_DB")
      }))
  })
})
