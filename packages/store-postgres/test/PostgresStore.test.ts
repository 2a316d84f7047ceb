import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { ConfigProvider, Context, Deferred, Effect, Either, Exit, Fiber, Layer, Option, Redacted } from "effect"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { type Event, EventStore, SqlEventStore, SqlMigrations, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import * as net from "node:net"

const pg = PgTest.server(inject("artanaPg"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = (workflow = "w") => ({ _tag: "RunStarted", workflow, input: null, tenant }) as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

/** Builds the layer in the test's scope (one pool) and returns its services. */
const open = (options: PostgresStore.Options) =>
  Effect.map(Layer.build(PostgresStore.layer(options)), (context) => ({
    store: Context.get(context, EventStore.EventStore),
    sql: Context.get(context, SqlClient.SqlClient),
    pg: Context.get(context, PgClient.PgClient)
  }))

/** Holds an EXCLUSIVE lock on `events` from another connection; the effect it returns releases it. */
const lockEvents = (url: string) =>
  Effect.gen(function*() {
    const locked = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const holder = yield* Effect.fork(PgTest.withClient(url, (other) =>
      other.withTransaction(Effect.gen(function*() {
        yield* other`LOCK TABLE events IN EXCLUSIVE MODE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      }))))
    yield* Deferred.await(locked)
    return Effect.zipRight(Deferred.succeed(release, undefined), Fiber.join(holder))
  })

/** A port on 127.0.0.1 that nothing listens on (bound, read, released). */
const closedPort = Effect.async<number>((resume) => {
  const server = net.createServer().listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 1
    server.close(() => resume(Effect.succeed(port)))
  })
})

describe("redactUrl", () => {
  it("hides the password in the user info and in a password parameter, and keeps the rest", () => {
    expect(PostgresStore.redactUrl("postgres://app:s3cret@db.internal:5433/artana?sslmode=require"))
      .toBe("postgres://app:***@db.internal:5433/artana?sslmode=require")
    expect(PostgresStore.redactUrl("postgresql://app@db/artana?password=s3cret&application_name=x"))
      .toBe("postgresql://app@db/artana?password=***&application_name=x")
    expect(PostgresStore.redactUrl("postgres://db/artana")).toBe("postgres://db/artana")
    expect(PostgresStore.redactUrl("host=db user=app password=s3cret dbname=artana")).toBe("host=db user=app password=*** dbname=artana")
  })
})

describe("a URL the store cannot use", () => {
  it.effect("fails with StoreUnavailable before any connection, saying what a URL looks like, the password hidden", () =>
    Effect.gen(function*() {
      const reasons = yield* Effect.forEach(
        ["postgres://app:s3cret@db:notaport/artana", "mysql://app:s3cret@db/artana", "  "],
        (url) => Effect.flip(Effect.scoped(PostgresStore.make({ url })))
      )
      expect(reasons.map((e) => e._tag)).toEqual(["StoreUnavailable", "StoreUnavailable", "StoreUnavailable"])
      expect(reasons[0]!.reason).toContain("not a valid connection URL (expected postgres://user:password@host:5432/database")
      expect(reasons[0]!.location).toBe("postgres://app:***@db:notaport/artana")
      expect(reasons[1]!.reason).toBe("not a PostgreSQL URL: the scheme is mysql: (expected postgres://user:password@host:5432/database)")
      expect(reasons[2]!.reason).toContain("no connection URL was given")
      expect(reasons.map((e) => e.message).join("\n")).not.toContain("s3cret")
    }))
})

describe.skipIf(pg.url === undefined)(`PostgresStore (${pg.description})`, () => {
  const server = pg.url!
  const fresh = PgTest.freshDatabase(server)

  it.scoped("creates its tables with the prefix, and provides the SqlClient and PgClient to other services", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const { pg: client, sql } = yield* open({ url: Redacted.make(url), tablePrefix: "artana_", pool: { max: 3 }, applicationName: "artana-test" })
      const tables = yield* sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`
      expect(tables.map((t) => t.table_name)).toEqual(["artana_budget_holds", "artana_event_store_migrations", "artana_events", "artana_live_deltas", "artana_live_migrations", "artana_runs", "artana_task_queue_migrations", "artana_tasks"])
      // Appends move the head in their own statement: no trigger, no foreign key check per event.
      const triggers = yield* sql<{ trigger_name: string }>`SELECT DISTINCT trigger_name FROM information_schema.triggers WHERE event_object_table = 'artana_events'`
      expect(triggers).toEqual([])
      const keys = yield* sql`SELECT conname FROM pg_constraint WHERE conrelid = 'artana_events'::regclass AND contype = 'f'`
      expect(keys).toEqual([])
      // At most `pool.max` connections: six statements at once run on three backends.
      const pids = yield* Effect.all(
        Array.from({ length: 6 }, () => sql<{ pid: number }>`SELECT pg_backend_pid() AS pid, pg_sleep(0.05)`),
        { concurrency: "unbounded" }
      )
      expect(new Set(pids.map(([row]) => row!.pid)).size).toBe(3)
      expect(yield* sql`SELECT current_setting('application_name') AS name`).toEqual([{ name: "artana-test" }])
      // The same client, not a second pool.
      expect(client).toBe(sql)
    }))

  it.scoped("a tool step's events leave the run's row alone; a status or cost change writes it, with the head", () =>
      Effect.gen(function*() {
        const { sql, store } = yield* open({ url: yield* fresh })
        const version = Effect.map(sql<{ v: string }>`SELECT xmin::text AS v FROM runs WHERE run_id = 'run-1'`, ([row]) => row!.v)
        const log = TestLog.chain("run-1", "acme", [], [started()])
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: log })
        const created = yield* version
        const tool = TestLog.chain("run-1", "acme", log, [
          { _tag: "ToolRequested", tool: "echo", arguments: "{}", idempotencyKey: "k" },
          { _tag: "ToolCompleted", tool: "echo", result: null }
        ])
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: tool.slice(0, 1) })
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 2, events: tool.slice(1) })
        expect(yield* version).toBe(created)
        expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 3, headHash: tool[1]!.hash, updatedAt: tool[1]!.timestamp })
        const done = TestLog.chain("run-1", "acme", [...log, ...tool], [{ _tag: "RunCompleted", output: null }])
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 3, events: done })
        expect(yield* version).not.toBe(created)
        const [row] = yield* sql<{ head_seq: number; status: string }>`SELECT head_seq::int AS head_seq, status FROM runs WHERE run_id = 'run-1'`
        expect(row).toEqual({ head_seq: 4, status: "completed" })
      }))

  it.scoped("times and costs keep their fractions; integers come back as numbers", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open({ url: yield* fresh })
      const events = TestLog.chain("run-1", "acme", [], [started(), step("a")], 1_700_000_000_000.25)
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })
      expect(yield* store.readEvents("acme", "run-1")).toEqual(events)
      expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 2, createdAt: events[0]!.timestamp, updatedAt: events[1]!.timestamp })
      const columns = yield* sql<{ column_name: string; data_type: string }>`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'runs' AND column_name IN ('head_seq', 'created_at', 'cost_usd') ORDER BY column_name`
      expect(columns).toEqual([
        { column_name: "cost_usd", data_type: "double precision" },
        { column_name: "created_at", data_type: "double precision" },
        { column_name: "head_seq", data_type: "bigint" }
      ])
    }))

  it.scoped("what one pool appended survives closing it; opening again migrates nothing twice", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const events = TestLog.chain("run-1", "acme", [], [started(), step("a")])
      yield* Effect.scoped(Effect.flatMap(open({ url }), ({ store }) => store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })))
      const { sql, store } = yield* open({ url })
      expect(yield* store.readEvents("acme", "run-1")).toEqual(events)
      expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 2, status: "running" })
      // Every migration once (text order, as the query sorts).
      const all = Object.keys(SqlEventStore.migrations()).sort().map((id) => ({ id }))
      expect(all.map((m) => m.id)).toContain("3_tenant_run_key")
      expect(yield* sql`SELECT id FROM event_store_migrations ORDER BY id`).toEqual(all)
    }))

  it.scoped("a database made by the first schema (head trigger, foreign key) is upgraded, keeps its runs, and fences them", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const before = TestLog.chain("run-1", "acme", [], [started(), step("a")])
      // The schema as the first release left it, with a run appended through its trigger.
      yield* PgTest.withClient(url, (sql) =>
        Effect.gen(function*() {
          yield* Effect.orDie(SqlMigrations.run({ name: "event_store", migrations: { "1_event_store": SqlEventStore.migrations()["1_event_store"]! } }))
          yield* sql`INSERT INTO runs (run_id, tenant_id, workflow, root_run_id, status, head_seq, head_hash, cost_usd, created_at, updated_at) VALUES ('run-1', 'acme', 'wf', 'run-1', 'running', 0, ${before[0]!.prevHash}, 0, 0, 0)`
          for (const e of before) {
            yield* sql`INSERT INTO events (run_id, seq, event_id, tenant_id, timestamp, type, step_key, payload, prev_hash, hash) VALUES (${e.runId}, ${e.seq}, ${e.eventId}, ${e.tenantId}, ${e.timestamp}, ${e.type}, ${e.stepKey}, ${JSON.stringify(e.payload)}, ${e.prevHash}, ${e.hash})`
          }
          const [head] = yield* sql<{ head_seq: string }>`SELECT head_seq FROM runs WHERE run_id = 'run-1'`
          expect(Number(head!.head_seq)).toBe(2)
        }).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
      const { sql, store } = yield* open({ url })
      expect(yield* sql`SELECT trigger_name FROM information_schema.triggers WHERE event_object_table = 'events'`).toEqual([])
      // Its runs start at owner epoch 0; the next execution claims epoch 1, and fences epoch 0 from then on.
      expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 2, ownerEpoch: 0 })
      const after = TestLog.chain("run-1", "acme", before, [{ _tag: "RunResumed", reason: "takeover" }, step("b"), { _tag: "RunCompleted", output: "b" }])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 2, events: after, ownerEpoch: 1, claim: true })
      expect(yield* store.readEvents("acme", "run-1")).toEqual([...before, ...after])
      expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 5, headHash: after[2]!.hash, status: "completed", ownerEpoch: 1 })
      const stale = TestLog.chain("run-1", "acme", [...before, ...after], [step("stale")])
      expect(yield* Effect.flip(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 5, events: stale, ownerEpoch: 0 })))
        .toMatchObject({ _tag: "OwnershipLost", ownerEpoch: 0 })
    }))

  it.scoped("several stores opening one fresh database at once all migrate it (the advisory lock)", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const stores = yield* Effect.forEach([1, 2, 3, 4, 5, 6], () => open({ url, pool: { max: 2 } }), { concurrency: "unbounded" })
      const events = TestLog.chain("run-1", "acme", [], [started()])
      yield* stores[0]!.store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })
      for (const { store } of stores) expect(yield* store.readEvents("acme", "run-1")).toEqual(events)
    }))

  it.scoped("a store in a schema of its own (a search_path in the URL) keeps its tables there", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(server, "schema")
      const { sql, store } = yield* open({ url })
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("run-1", "acme", [], [started()]) })
      const [schema] = yield* sql<{ schema: string }>`SELECT current_schema() AS schema`
      expect(schema!.schema).toMatch(/^artana_t/)
      const tables = yield* sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema!.schema} ORDER BY table_name`
      expect(tables.map((t) => t.table_name)).toEqual(["budget_holds", "event_store_migrations", "events", "live_deltas", "live_migrations", "runs", "task_queue_migrations", "tasks"])
    }))

  it.scoped("one freshDatabase effect gives every run a database of its own", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* fresh, yield* fresh]
      expect(a).not.toBe(b)
      const names = yield* PgTest.withClient(server, (sql) =>
        sql<{ datname: string }>`SELECT datname FROM pg_database WHERE datname IN (${new URL(a).pathname.slice(1)}, ${new URL(b).pathname.slice(1)})`)
      expect(names.length).toBe(2)
    }))

  it.scoped("a user without CREATEDB (an ARTANA_TEST_PG_URL server, say) gets a fresh schema instead of a database", () =>
    Effect.gen(function*() {
      const base = yield* fresh
      const user = `artana_nodb_${Math.random().toString(36).slice(2, 8)}`
      yield* PgTest.withClient(base, (sql) => sql.unsafe(`CREATE ROLE ${user} LOGIN PASSWORD 'pw' NOCREATEDB`))
      yield* PgTest.withClient(base, (sql) => sql.unsafe(`GRANT CREATE ON DATABASE ${new URL(base).pathname.slice(1)} TO ${user}`))
      yield* Effect.addFinalizer(() =>
        Effect.ignore(PgTest.withClient(base, (sql) => Effect.zipRight(sql.unsafe(`DROP OWNED BY ${user}`), sql.unsafe(`DROP ROLE ${user}`)))))
      const asUser = new URL(base)
      asUser.username = user
      asUser.password = "pw"
      const url = yield* PgTest.freshDatabase(asUser.toString())
      expect(new URL(url).searchParams.get("options")).toMatch(/^-c search_path=artana_t/)
      const { store } = yield* open({ url })
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("run-1", "acme", [], [started()]) })
      expect((yield* store.listRuns("acme")).map((r) => r.runId)).toEqual(["run-1"])
    }))

  it.scoped("a prefix with capitals names the same tables in the DDL, the trigger and the hot INSERT", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open({ url: yield* fresh, tablePrefix: "Artana_" })
      const events = TestLog.chain("run-1", "acme", [], [started(), step("a")])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 2, events: TestLog.chain("run-1", "acme", events, [step("b")]) })
      expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 3 })
      const tables = yield* sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`
      expect(tables.map((t) => t.table_name)).toEqual(["Artana_budget_holds", "Artana_event_store_migrations", "Artana_events", "Artana_live_deltas", "Artana_live_migrations", "Artana_runs", "Artana_task_queue_migrations", "Artana_tasks"])
    }))

  it.scopedLive("opening a store while other workers hold appends in flight neither waits for them nor deadlocks", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const { sql } = yield* open({ url })
      // An append in flight holds ROW EXCLUSIVE locks on both tables until it commits; DDL on every open (CREATE
      // INDEX, CREATE TRIGGER) would queue behind it, and deadlock with the next append.
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE events, runs IN ROW EXCLUSIVE MODE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      })))
      yield* Deferred.await(locked)
      // The open ends while the append is in flight, or one of its statements waits on a lock (what the server says,
      // not a time limit, which a loaded machine can pass however the open behaves).
      const second = yield* Effect.fork(Effect.either(open({ url })))
      const waited = yield* PgTest.withClient(url, (admin) =>
        Effect.gen(function*() {
          while (Option.isNone(yield* Fiber.poll(second))) {
            const waiting = yield* admin`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
            if (waiting.length > 0) return true
            yield* Effect.sleep("20 millis")
          }
          return false
        }))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      expect(waited).toBe(false)
      expect(Either.isRight(yield* Fiber.join(second))).toBe(true)
    }))

  it.scoped("connections the server ends are a StoreError while in flight; the pool reconnects for what follows", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const database = new URL(url).pathname.slice(1)
      const { store } = yield* open({ url, pool: { max: 2 } })
      const events = TestLog.chain("run-1", "acme", [], [started(), step("a")])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })
      // What a server restart or a failover does to the pool's open connections.
      const ended = yield* PgTest.withClient(server, (sql) =>
        sql`SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = ${database} AND pid <> pg_backend_pid()`)
      expect(ended.length).toBeGreaterThan(0)
      const next = TestLog.chain("run-1", "acme", events, [step("b")])
      // Each pooled connection the server ended fails the statement that finds it dead (at most pool.max of them),
      // as a StoreError the caller may retry; the pool then opens fresh ones.
      const failures: Array<string> = []
      for (let attempt = 0; attempt <= 2; attempt++) {
        const result = yield* Effect.either(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 2, events: next }))
        if (Either.isRight(result)) break
        failures.push(result.left._tag)
      }
      expect(failures.every((tag) => tag === "StoreError")).toBe(true)
      expect(failures.length).toBeLessThanOrEqual(2)
      expect(yield* store.readEvents("acme", "run-1")).toEqual([...events, ...next])
    }))

  it.scoped("inside the caller's transaction a conflict rolls back only the append, and the transaction goes on", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open({ url: yield* fresh })
      const first = TestLog.chain("run-1", "acme", [], [started()])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: first })
      const second = TestLog.chain("run-1", "acme", first, [step("a")])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: second })
      const stale = TestLog.chain("run-1", "acme", first, [step("stale")])
      const next = TestLog.chain("run-1", "acme", [...first, ...second], [step("b")])
      const conflict = yield* sql.withTransaction(Effect.gen(function*() {
        const lost = yield* Effect.flip(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: stale }))
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 2, events: next })
        return lost._tag
      }))
      expect(conflict).toBe("SequenceConflict")
      expect(yield* store.readEvents("acme", "run-1")).toEqual([...first, ...second, ...next])
    }))

  it.scopedLive("an append interrupted while it waits is cancelled on the server, not written later", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const { store } = yield* open({ url })
      const first = TestLog.chain("run-1", "acme", [], [started()])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: first })
      const unlock = yield* lockEvents(url)
      const next = TestLog.chain("run-1", "acme", first, [step("late")])
      const result = yield* Effect.either(Effect.timeout(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: next }), "200 millis"))
      expect(Either.isLeft(result) && result.left._tag).toBe("TimeoutException")
      yield* Effect.sleep("300 millis")
      yield* unlock
      expect(yield* store.readEvents("acme", "run-1")).toEqual(first)
    }))

  it.scopedLive("with every connection busy, an interrupted append is still cancelled, and the cancel reaches no other statement", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const { sql, store } = yield* open({ url, pool: { max: 1 } })
      const first = TestLog.chain("run-1", "acme", [], [started()])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: first })
      for (let round = 0; round < 3; round++) {
        const unlock = yield* lockEvents(url)
        const late = TestLog.chain("run-1", "acme", first, [step(`late-${round}`)])
        const result = yield* Effect.either(Effect.timeout(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: late }), "100 millis"))
        expect(Either.isLeft(result) && result.left._tag).toBe("TimeoutException")
        // The pool's only connection: the next statement runs on it, after the cancel was answered.
        expect(yield* sql<{ one: number }>`SELECT 1 AS one, pg_sleep(0.05)`).toMatchObject([{ one: 1 }])
        yield* unlock
        expect(yield* store.readEvents("acme", "run-1")).toEqual(first)
      }
    }))

  /** The pid of the backend whose statement waits for a lock on `events`, once it waits. */
  const waitingBackend = (sql: SqlClient.SqlClient) =>
    Effect.gen(function*() {
      for (let i = 0; i < 200; i++) {
        const rows = yield* sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO%events%'`
        if (rows[0] !== undefined) return rows[0].pid
        yield* Effect.sleep("10 millis")
      }
      return yield* Effect.die("no append waited for the lock")
    })

  it.scopedLive("a FATAL end of an append's session drops its connection; the statement queued behind it runs", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const { store } = yield* open({ url, pool: { max: 1 } })
      const first = TestLog.chain("run-1", "acme", [], [started()])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: first })
      const unlock = yield* lockEvents(url)
      const next = TestLog.chain("run-1", "acme", first, [step("ended")])
      const ended = yield* Effect.fork(Effect.either(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: next })))
      const pid = yield* PgTest.withClient(url, waitingBackend)
      const queued = yield* Effect.fork(Effect.either(store.readEvents("acme", "run-1")))
      yield* PgTest.withClient(url, (sql) => sql`SELECT pg_terminate_backend(${pid})`)
      const result = yield* Fiber.join(ended)
      expect(Either.isLeft(result) && result.left._tag).toBe("StoreError")
      expect(yield* Fiber.join(queued)).toEqual(Either.right(first))
      yield* unlock
    }))

  it.scopedLive("a connection ended while its interrupted statement's cancel is pending does not crash the process", () =>
    Effect.gen(function*() {
      const url = yield* fresh
      const context = yield* Layer.build(PostgresStore.layer({ url, pool: { max: 2 } }))
      const prepared = Context.get(context, SqlEventStore.PreparedStatements)
      // An open connection, so that the terminate arrives before the cancel's own connection is up.
      const admin = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(url) })), SqlClient.SqlClient)
      for (let round = 0; round < 3; round++) {
        const slow = yield* Effect.fork(prepared.execute("SELECT pg_sleep(2)", []))
        let pid: number | undefined
        while (pid === undefined) {
          const rows = yield* admin<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(2)' AND state = 'active'`
          pid = rows[0]?.pid
          if (pid === undefined) yield* Effect.sleep("5 millis")
        }
        const interrupted = yield* Effect.fork(Fiber.interrupt(slow))
        yield* admin`SELECT pg_terminate_backend(${pid})`
        yield* Fiber.join(interrupted)
      }
      // Still here, and the pool serves the next statement.
      expect(yield* prepared.execute("SELECT 1", [])).toBe(1)
    }))

  it.scoped("a prepared statement the server dropped (DEALLOCATE ALL) is prepared again, on every connection", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open({ url: yield* fresh, pool: { max: 3 } })
      let log = TestLog.chain("run-1", "acme", [], [started()])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: log })
      // Every pooled connection prepares the statement, then every one loses it.
      const prepare = (i: number) => {
        const events = TestLog.chain(`warm-${i}`, "acme", [], [started()])
        return Effect.zipRight(
          store.append({ runId: `warm-${i}`, tenantId: "acme", expectedSeq: 0, events }),
          store.append({ runId: `warm-${i}`, tenantId: "acme", expectedSeq: 1, events: TestLog.chain(`warm-${i}`, "acme", events, [step("w")]) })
        )
      }
      yield* Effect.forEach([1, 2, 3, 4, 5, 6], prepare, { concurrency: "unbounded", discard: true })
      for (let i = 0; i < 3; i++) {
        yield* Effect.all([sql`DEALLOCATE ALL`, sql`DEALLOCATE ALL`, sql`DEALLOCATE ALL`], { concurrency: "unbounded", discard: true })
        const next = TestLog.chain("run-1", "acme", log, [step(`s${i}`)])
        yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: log.length, events: next })
        log = [...log, ...next]
      }
      expect(yield* store.readEvents("acme", "run-1")).toEqual(log)
    }))

  it.scopedLive("a connection lost in the middle of an append is a StoreError, and the process goes on", () =>
    Effect.gen(function*() {
      const url = new URL(yield* fresh)
      // A proxy whose sockets are destroyed mid-statement: the server sends nothing, the connection just ends.
      const sockets = new Set<net.Socket>()
      const proxy = net.createServer((socket) => {
        const upstream = net.connect(Number(url.port), url.hostname)
        sockets.add(socket).add(upstream)
        socket.on("error", () => {}).pipe(upstream.on("error", () => {})).pipe(socket)
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void proxy.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => proxy.close())
      )
      const address = proxy.address()
      const proxied = new URL(url)
      proxied.port = String(typeof address === "object" && address !== null ? address.port : 0)
      const { store } = yield* open({ url: proxied.toString(), pool: { max: 2 } })
      const first = TestLog.chain("run-1", "acme", [], [started()])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events: first })
      const unlock = yield* lockEvents(url.toString())
      const next = TestLog.chain("run-1", "acme", first, [step("lost")])
      const pending = yield* Effect.fork(Effect.either(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: next })))
      yield* Effect.sleep("200 millis")
      for (const socket of sockets) socket.destroy()
      const result = yield* Fiber.join(pending)
      expect(Either.isLeft(result) && result.left._tag).toBe("StoreError")
      yield* unlock
      // The statement's outcome is unknown to the client (here the server ran it once the lock was free, before
      // it noticed the connection was gone): the log says. The pool opens fresh connections (the proxy listens).
      const log = yield* store.readEvents("acme", "run-1")
      expect(log.length === 1 || (log.length === 2 && log[1]!.eventId === next[0]!.eventId)).toBe(true)
      const after = TestLog.chain("run-1", "acme", log, [step("after")])
      yield* store.append({ runId: "run-1", tenantId: "acme", expectedSeq: log.length, events: after })
      expect(yield* store.readEvents("acme", "run-1")).toEqual([...log, ...after])
    }))

  it.scoped("a store over another client does not borrow this pool's prepared statements", () =>
    Effect.gen(function*() {
      const a = yield* Layer.build(PostgresStore.layer({ url: yield* fresh }))
      const b = yield* Layer.build(PgClient.layer({ url: Redacted.make(yield* fresh) }))
      // B's client, with A's prepared statements still in context.
      const onB = yield* Effect.provide(SqlEventStore.make(), Context.merge(a, b))
      const events = TestLog.chain("run-1", "acme", [], [started()])
      yield* onB.append({ runId: "run-1", tenantId: "acme", expectedSeq: 0, events })
      yield* onB.append({ runId: "run-1", tenantId: "acme", expectedSeq: 1, events: TestLog.chain("run-1", "acme", events, [step("a")]) })
      expect((yield* onB.readEvents("acme", "run-1")).length).toBe(2)
      expect((yield* Effect.flip(Context.get(a, EventStore.EventStore).readEvents("acme", "run-1")))._tag).toBe("RunNotFound")
    }))

  describe("two pools on one database", () => {
    it.scoped("concurrent appends at the same expectedSeq: exactly one succeeds, the other is a SequenceConflict", () =>
      Effect.gen(function*() {
        const url = yield* fresh
        const a = yield* open({ url })
        const b = yield* open({ url })
        for (let round = 0; round < 20; round++) {
          const runId = `run-${round}`
          // Creating the run races too: both writers append at expectedSeq 0.
          const create = (name: string) => TestLog.chain(runId, "acme", [], [started(name), step(name)], 1_000 * round)
          const created = yield* Effect.all([
            Effect.either(a.store.append({ runId, tenantId: "acme", expectedSeq: 0, events: create("a") })),
            Effect.either(b.store.append({ runId, tenantId: "acme", expectedSeq: 0, events: create("b") }))
          ], { concurrency: "unbounded" })
          expect(created.filter(Either.isRight).length).toBe(1)
          expect(created.filter(Either.isLeft).map((e) => e.left._tag)).toEqual(["SequenceConflict"])

          // Round by round: a plain batch (one INSERT, no transaction), then one that changes status and cost.
          const head = yield* a.store.readEvents("acme", runId)
          const next = (name: string) =>
            round % 2 === 0
              ? TestLog.chain(runId, "acme", head, [step(name), step(`${name}-2`)])
              : TestLog.chain(runId, "acme", head, [step(name), { _tag: "RunCompleted", output: name }])
          const results = yield* Effect.all([
            Effect.either(b.store.append({ runId, tenantId: "acme", expectedSeq: 2, events: next("b") })),
            Effect.either(a.store.append({ runId, tenantId: "acme", expectedSeq: 2, events: next("a") }))
          ], { concurrency: "unbounded" })
          expect(results.filter(Either.isRight).length).toBe(1)
          expect(results.filter(Either.isLeft).map((e) => e.left)).toMatchObject([{ _tag: "SequenceConflict", expectedSeq: 2 }])

          // The log did not fork: one writer's batch, whole, and a valid chain matching the run's head.
          const log = yield* b.store.readEvents("acme", runId)
          expect(log.map((e) => e.seq)).toEqual([1, 2, 3, 4])
          expect(Verify.verifyEvents(runId, log).ok).toBe(true)
          const run = yield* a.store.getRun("acme", runId)
          expect(run).toMatchObject({ headSeq: 4, headHash: log[3]!.hash, status: round % 2 === 0 ? "running" : "completed" })
        }
      }))

    it.scoped("a batch of over 1,000 events whose transaction fails to serialize is written whole by its retry", () =>
      Effect.gen(function*() {
        const { store, sql } = yield* open({ url: yield* fresh })
        const runId = "retried"
        const first = TestLog.chain(runId, "acme", [], [started()])
        yield* store.append({ runId, tenantId: "acme", expectedSeq: 0, events: first })
        // The second chunk's first row fails its transaction once, as a serialization failure does (a sequence is not
        // rolled back with it): the append runs again, its first chunk from seq 2 again.
        yield* sql.unsafe("CREATE SEQUENCE fail_once")
        yield* sql.unsafe(`CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          IF nextval('fail_once') = 1 THEN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001'; END IF;
          RETURN NEW; END $$`)
        yield* sql.unsafe("CREATE TRIGGER fail_once BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.seq = 1002) EXECUTE FUNCTION fail_once()")
        const big = TestLog.chain(runId, "acme", first, Array.from({ length: 1_500 }, (_, i) => step(`s${i}`)))
        yield* store.append({ runId, tenantId: "acme", expectedSeq: 1, events: big })
        const [tried] = yield* sql<{ n: string }>`SELECT last_value AS n FROM fail_once`
        expect(Number(tried!.n)).toBeGreaterThanOrEqual(2)
        const log = yield* store.readEvents("acme", runId)
        expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 1_501 }, (_, i) => i + 1))
        expect(Verify.verifyEvents(runId, log).ok).toBe(true)
      }))

    it.scoped("appendAll's transaction that fails to serialize runs again, whole (continue-as-new's handover)", () =>
      Effect.gen(function*() {
        const { store, sql } = yield* open({ url: yield* fresh })
        const first = TestLog.chain("old", "acme", [], [started()])
        yield* store.append({ runId: "old", tenantId: "acme", expectedSeq: 0, events: first })
        // The old run's second event fails its transaction once, as a serialization failure does: inside appendAll's
        // transaction the append does not retry alone, and appendAll runs the whole transaction again.
        yield* sql.unsafe("CREATE SEQUENCE fail_once")
        yield* sql.unsafe(`CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          IF nextval('fail_once') = 1 THEN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001'; END IF;
          RETURN NEW; END $$`)
        yield* sql.unsafe("CREATE TRIGGER fail_once BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.seq = 2) EXECUTE FUNCTION fail_once()")
        const ended = TestLog.chain("old", "acme", first, [{ _tag: "RunCompleted", output: "continued" }])
        const successor = TestLog.chain("new", "acme", [], [started()])
        yield* store.appendAll([
          { runId: "old", tenantId: "acme", expectedSeq: 1, events: ended },
          { runId: "new", tenantId: "acme", expectedSeq: 0, events: successor }
        ])
        const [tried] = yield* sql<{ n: string }>`SELECT last_value AS n FROM fail_once`
        expect(Number(tried!.n)).toBe(2)
        expect(yield* store.readEvents("acme", "old")).toEqual([...first, ...ended])
        expect(yield* store.readEvents("acme", "new")).toEqual(successor)
        expect(yield* store.getRun("acme", "old")).toMatchObject({ status: "completed", headSeq: 2 })
      }))

    it.scopedLive("a batch of over 1,000 events racing a status change: one wins, the other conflicts, never a deadlock", () =>
      Effect.gen(function*() {
        const url = yield* fresh
        const a = yield* open({ url })
        const b = yield* open({ url })
        for (let round = 0; round < 12; round++) {
          const runId = `race-${round}`
          const first = TestLog.chain(runId, "acme", [], [started()])
          yield* a.store.append({ runId, tenantId: "acme", expectedSeq: 0, events: first })
          // Insert-only chunks first, the cost change in the last one: before the run's row was locked first,
          // this order deadlocked against a small batch that updates the row, then waits for the seq.
          const big = TestLog.chain(runId, "acme", first, [
            ...Array.from({ length: 1_000 }, (_, i) => step(`s${i}`)),
            { _tag: "ModelCompleted", model: "m", message: { role: "assistant", content: "x" }, usage: { inputTokens: 1, outputTokens: 1 }, costUsd: 0.3 }
          ])
          const small = TestLog.chain(runId, "acme", first, [{ _tag: "RunCompleted", output: "small" }])
          const results = yield* Effect.all([
            Effect.either(a.store.append({ runId, tenantId: "acme", expectedSeq: 1, events: big })),
            Effect.either(Effect.zipRight(Effect.sleep(`${round * 2} millis`), b.store.append({ runId, tenantId: "acme", expectedSeq: 1, events: small })))
          ], { concurrency: "unbounded" })
          expect(results.filter(Either.isRight).length).toBe(1)
          expect(results.filter(Either.isLeft).map((e) => e.left._tag)).toEqual(["SequenceConflict"])
          const log = yield* b.store.readEvents("acme", runId)
          expect(log.length === 1_002 || log.length === 2).toBe(true)
          expect(yield* a.store.getRun("acme", runId)).toMatchObject(
            log.length === 2 ? { status: "completed", costUsd: 0, headSeq: 2 } : { status: "running", costUsd: 0.3, headSeq: 1_002 }
          )
        }
      }), 60_000)

    it.scoped("under SERIALIZABLE, writers to different runs do not conflict, and a lost race on one run does", () =>
      Effect.gen(function*() {
        const url = yield* fresh
        const database = new URL(url).pathname.slice(1)
        yield* PgTest.withClient(server, (sql) => sql.unsafe(`ALTER DATABASE "${database}" SET default_transaction_isolation = 'serializable'`))
        // One opener migrates; under SERIALIZABLE, openers racing on a fresh database retry their migration.
        const pools = yield* Effect.forEach([1, 2, 3, 4], () => open({ url }), { concurrency: "unbounded" })
        const [isolation] = yield* pools[0]!.sql<{ level: string }>`SELECT current_setting('transaction_isolation') AS level`
        expect(isolation!.level).toBe("serializable")
        // Each pool its own run: serialization failures between them are retried, never reported as conflicts.
        yield* Effect.forEach(pools, ({ store }, i) =>
          Effect.gen(function*() {
            let log = TestLog.chain(`own-${i}`, "acme", [], [started()])
            yield* store.append({ runId: `own-${i}`, tenantId: "acme", expectedSeq: 0, events: log })
            for (let n = 0; n < 60; n++) {
              const next = TestLog.chain(`own-${i}`, "acme", log, [n % 5 === 4 ? { _tag: "RunResumed", reason: `${n}` } : step(`s${n}`)])
              yield* store.append({ runId: `own-${i}`, tenantId: "acme", expectedSeq: log.length, events: next })
              log = [...log, ...next]
            }
          }), { concurrency: "unbounded", discard: true })
        for (let round = 0; round < 30; round++) {
          const runId = `s-${round}`
          const first = TestLog.chain(runId, "acme", [], [started()])
          yield* pools[0]!.store.append({ runId, tenantId: "acme", expectedSeq: 0, events: first })
          const results = yield* Effect.forEach(pools, ({ store }, i) =>
            Effect.either(store.append({
              runId,
              tenantId: "acme",
              expectedSeq: 1,
              events: TestLog.chain(runId, "acme", first, i % 2 === 0 ? [step(`w${i}`)] : [{ _tag: "RunCompleted", output: i }])
            })), { concurrency: "unbounded" })
          expect(results.filter(Either.isRight).length).toBe(1)
          expect(results.filter(Either.isLeft).map((e) => e.left._tag)).toEqual(["SequenceConflict", "SequenceConflict", "SequenceConflict"])
        }
      }), 60_000)

    it.scoped("under REPEATABLE READ, stores opening a fresh database at once all migrate it", () =>
      Effect.gen(function*() {
        for (let round = 0; round < 3; round++) {
          const url = yield* fresh
          const database = new URL(url).pathname.slice(1)
          yield* PgTest.withClient(server, (sql) => sql.unsafe(`ALTER DATABASE "${database}" SET default_transaction_isolation = 'repeatable read'`))
          const opened = yield* Effect.forEach([1, 2, 3, 4], () => Effect.either(open({ url })), { concurrency: "unbounded" })
          expect(opened.filter(Either.isLeft).map((e) => e.left.reason)).toEqual([])
        }
      }), 60_000)

    it.scoped("many writers on many pools, one run: every append lands once, in order, without gaps", () =>
      Effect.gen(function*() {
        const url = yield* fresh
        const pools = yield* Effect.forEach([1, 2, 3, 4], () => open({ url, pool: { max: 2 } }), { concurrency: "unbounded" })
        yield* pools[0]!.store.append({ runId: "busy", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("busy", "acme", [], [started()]) })
        // Each writer reads the head and appends after it, retrying on conflict, until it has written 10 events.
        const writer = (index: number) =>
          Effect.gen(function*() {
            const { store } = pools[index]!
            let written = 0
            let conflicts = 0
            while (written < 10) {
              const log = yield* store.readEvents("acme", "busy")
              const events = TestLog.chain("busy", "acme", log, [step(`w${index}-${written}`)])
              const result = yield* Effect.either(store.append({ runId: "busy", tenantId: "acme", expectedSeq: log.length, events }))
              if (Either.isRight(result)) written++
              else if (result.left._tag === "SequenceConflict") conflicts++
              else return yield* result.left
            }
            return conflicts
          })
        yield* Effect.forEach([0, 1, 2, 3], writer, { concurrency: "unbounded" })
        const log = yield* pools[1]!.store.readEvents("acme", "busy")
        expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1))
        expect(Verify.verifyEvents("busy", log).ok).toBe(true)
        for (const index of [0, 1, 2, 3]) {
          const mine = log.flatMap((e) => (e.payload._tag === "StepCompleted" && e.payload.name.startsWith(`w${index}-`) ? [e.payload.name] : []))
          expect(mine).toEqual(Array.from({ length: 10 }, (_, i) => `w${index}-${i}`))
        }
      }), 60_000)
  })

  describe("a server that cannot be used fails with StoreUnavailable", () => {
    const unavailable = (options: PostgresStore.Options) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(open(options))
        // A typed failure, not a defect and not a raw SqlError.
        expect(Exit.isFailure(exit) && exit.cause._tag === "Fail").toBe(true)
        const error = yield* Effect.flip(open(options))
        if (error._tag !== "StoreUnavailable") return yield* Effect.die(error)
        expect(error.store).toBe("postgres")
        expect(error.location).not.toContain(new URL(typeof options.url === "string" ? options.url : Redacted.value(options.url)).password || "\u0000")
        return error
      })

    it.scoped("nothing listens on the port", () =>
      Effect.gen(function*() {
        const port = yield* closedPort
        const error = yield* unavailable({ url: `postgres://artana:s3cret@127.0.0.1:${port}/artana` })
        expect(error.location).toBe(`postgres://artana:***@127.0.0.1:${port}/artana`)
        expect(error.reason).toBe(`nothing accepts connections at 127.0.0.1:${port} (is the PostgreSQL server running, and on that port?)`)
        expect(error.message).toContain("cannot open the postgres store at postgres://artana:***@")
      }))

    it.scoped("the host does not answer within connectTimeout", () =>
      Effect.gen(function*() {
        // A listener that accepts TCP but never speaks the protocol: the connection hangs until the timeout.
        const silent = net.createServer(() => {})
        yield* Effect.acquireRelease(
          Effect.async<void>((resume) => void silent.listen(0, "127.0.0.1", () => resume(Effect.void))),
          () => Effect.sync(() => silent.close())
        )
        const address = silent.address()
        const port = typeof address === "object" && address !== null ? address.port : 1
        const started = Date.now()
        const error = yield* Effect.flip(open({ url: `postgres://artana@127.0.0.1:${port}/artana`, connectTimeout: "300 millis" }))
        expect(error).toMatchObject({ _tag: "StoreUnavailable", reason: `no connection within 300 ms to 127.0.0.1:${port} (is the host right, and the server up?)` })
        expect(Date.now() - started).toBeLessThan(5_000)
      }))

    it.scoped("a wrong password", (ctx) =>
      Effect.gen(function*() {
        const url = new URL(yield* fresh)
        const user = `artana_pw_${Math.random().toString(36).slice(2, 8)}`
        yield* PgTest.withClient(server, (sql) => sql.unsafe(`CREATE ROLE ${user} LOGIN PASSWORD 'right-one'`))
        yield* Effect.addFinalizer(() => Effect.ignore(PgTest.withClient(server, (sql) => sql.unsafe(`DROP ROLE IF EXISTS ${user}`))))
        url.username = user
        url.password = "wrong-one"
        const connects = yield* Effect.either(Effect.scoped(PostgresStore.make({ url: url.toString() })))
        // A server given by ARTANA_TEST_PG_URL may trust every connection; then no password is ever wrong.
        if (Either.isRight(connects)) return ctx.skip(`the server at ${PostgresStore.redactUrl(server)} does not check passwords`)
        const error = yield* unavailable({ url: Redacted.make(url.toString()) })
        expect(error.reason).toBe(`password authentication failed for user ${user}: check the password in the URL`)
        expect(error.location).toContain(`${user}:***@`)
        expect(error.location).not.toContain("wrong-one")
        expect(String(error)).not.toContain("wrong-one")
      }))

    it.scoped("a database that does not exist", () =>
      Effect.gen(function*() {
        const url = PgTest.withDatabase(server, "artana_no_such_db")
        const error = yield* unavailable({ url })
        expect(error.reason).toContain("the database artana_no_such_db does not exist")
        expect(error.reason).toContain("CREATE DATABASE artana_no_such_db")
      }))

    it.scoped("a user who may not create the tables", () =>
      Effect.gen(function*() {
        const url = new URL(yield* fresh)
        const user = `artana_ro_${Math.random().toString(36).slice(2, 8)}`
        // Long and random: `unavailable` checks that the error's location does not contain it, and a short one ("pw")
        // was found in a random user name ("artana_ro_f2zpwx").
        const password = `secret_${Math.random().toString(36).slice(2, 12)}`
        yield* PgTest.withClient(server, (sql) => sql.unsafe(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`))
        yield* Effect.addFinalizer(() => Effect.ignore(PgTest.withClient(server, (sql) => sql.unsafe(`DROP ROLE IF EXISTS ${user}`))))
        // Since PostgreSQL 15 only the database owner may create in `public`; older servers: revoke it.
        yield* PgTest.withClient(url.toString(), (sql) => sql.unsafe("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
        url.username = user
        url.password = password
        const error = yield* unavailable({ url: url.toString() })
        expect(error.reason).toContain(`user ${user} lacks a privilege the store needs to create its tables`)
      }))
  })

  describe("tampering through SQL is detectable with verifyEvents", () => {
    const seeded = Effect.gen(function*() {
      const opened = yield* open({ url: yield* fresh })
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
        yield* sql`UPDATE events SET payload = jsonb_set(payload::jsonb, '{value}', '"forged"')::text WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'run-1') AND seq = 3`
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 3 })
      }))

    it.scoped("a DELETE of an event names the missing seq", () =>
      Effect.gen(function*() {
        const { sql, verify } = yield* seeded
        yield* sql`DELETE FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'run-1') AND seq = 2`
        const report = yield* verify
        expect(report).toMatchObject({ ok: false, firstBrokenSeq: 2 })
        expect(report.reason).toContain("missing")
      }))

    it.scoped("a DELETE of the last events is caught by the run row's head", () =>
      Effect.gen(function*() {
        const { sql, verify } = yield* seeded
        yield* sql`DELETE FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'run-1') AND seq >= 4`
        const report = yield* verify
        expect(report).toMatchObject({ ok: false, firstBrokenSeq: 4 })
        expect(report.reason).toContain("truncated")
      }))

    it.scoped("an INSERT past the head names the first seq the run row does not vouch for", () =>
      Effect.gen(function*() {
        const { sql, verify } = yield* seeded
        yield* sql`INSERT INTO events (run_key, seq, event_id, timestamp, step_key, payload, prev_hash, hash) SELECT run_key, seq + 1, event_id, timestamp, step_key, payload, hash, hash FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'run-1') AND seq = 5`
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 6 })
      }))

    it.scoped("after an INSERT past the head, the run's head is the log's, and an append at the old head conflicts", () =>
      Effect.gen(function*() {
        const { sql, store } = yield* seeded
        yield* sql`INSERT INTO events (run_key, seq, event_id, timestamp, step_key, payload, prev_hash, hash) SELECT run_key, seq + 1, event_id, timestamp, step_key, payload, hash, hash FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'run-1') AND seq = 5`
        const log = yield* store.readEvents("acme", "run-1")
        expect((yield* store.getRun("acme", "run-1")).headSeq).toBe(6)
        const stale = TestLog.chain("run-1", "acme", log.slice(0, 5), [step("d")])
        const error = yield* Effect.flip(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 5, events: stale }))
        expect(error._tag).toBe("SequenceConflict")
        expect(yield* store.readEvents("acme", "run-1")).toEqual(log)
      }))

    it.scoped("after the log is cut before the run row's head, a status change at the cut conflicts", () =>
      Effect.gen(function*() {
        const { sql, store, verify } = yield* seeded
        const log = yield* store.readEvents("acme", "run-1")
        yield* sql`DELETE FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'run-1') AND seq >= 4`
        // The run's record (written with RunCompleted) vouches for seq 5: a batch that would move it back conflicts.
        // (A tool step's batch does not read the record; the kernel refuses to run on a cut log, see kernel.test.ts.)
        const resumed = TestLog.chain("run-1", "acme", log.slice(0, 3), [{ _tag: "RunResumed", reason: "again" }])
        expect((yield* Effect.flip(store.append({ runId: "run-1", tenantId: "acme", expectedSeq: 3, events: resumed })))._tag).toBe("SequenceConflict")
        expect((yield* store.readEvents("acme", "run-1")).length).toBe(3)
        expect(yield* store.getRun("acme", "run-1")).toMatchObject({ headSeq: 5, status: "completed" })
        expect(yield* verify).toMatchObject({ ok: false, firstBrokenSeq: 4 })
      }))

    it.scoped("a payload that no longer decodes is a StoreError naming the run and seq", () =>
      Effect.gen(function*() {
        const { sql, store } = yield* seeded
        yield* sql`UPDATE events SET payload = '{"_tag":"StepCompleted"}' WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'run-1') AND seq = 4`
        const error = yield* Effect.flip(store.readEvents("acme", "run-1"))
        expect(error._tag).toBe("StoreError")
        expect(error.message).toContain("run run-1 seq 4")
      }))
  })

  describe("layerConfig", () => {
    it.scoped("connects to ARTANA_PG_URL", () =>
      Effect.gen(function*() {
        const url = yield* fresh
        const config = Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["ARTANA_PG_URL", url]])))
        const context = yield* Layer.build(Layer.provide(PostgresStore.layerConfig(), config))
        const store = Context.get(context, EventStore.EventStore)
        yield* store.append({ runId: "r", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("r", "acme", [], [started()]) })
        expect((yield* store.listRuns("acme")).map((r) => r.runId)).toEqual(["r"])
      }))

    it.scoped("without ARTANA_PG_URL it fails with a ConfigError naming it", () =>
      Effect.gen(function*() {
        const config = Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))
        const error = yield* Effect.flip(Layer.build(Layer.provide(PostgresStore.layerConfig(), config)))
        expect(error._tag).not.toBe("StoreUnavailable")
        expect(String(error)).toContain("ARTANA_PG_URL")
      }))
  })
})
