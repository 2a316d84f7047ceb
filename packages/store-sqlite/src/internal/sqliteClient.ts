/**
 * The SQLite `SqlClient`: `@effect/sql-sqlite-node`'s client (same tag, same interface, same single connection
 * behind a semaphore, same prepared-statement cache), on the driver this Node.js runs (`./sqliteDriver.ts`:
 * `node:sqlite` on Node.js 24 and later, better-sqlite3 12 before). `@effect/sql-sqlite-node` builds its client on
 * better-sqlite3 itself, so this module is its `make` on `Driver.driver()`.
 */
import type * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Cache from "effect/Cache"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Driver from "./sqliteDriver.js"

type Database = Driver.Database
type Prepared = Driver.Statement

/** A write that returns rows (`INSERT ... RETURNING`): the driver takes it for a read (it has columns). */
const RETURNING = /\bRETURNING\b/i

const failure = (message: string) => (cause: unknown) => new SqlError({ cause, message })

/**
 * The client's connection itself, for statements run on the driver's own prepared statements (the store's hot
 * append, `./sqliteAppend.ts`): none of the client's per-statement work (span, compiling, cache lookup, fibers).
 */
export interface Lane {
  /**
   * Runs `f` on the connection once no statement or transaction of the client runs, holding them off until it
   * returns (the client's one permit): `f` runs synchronously, and may run its own transaction.
   */
  readonly exclusive: <A>(f: (db: Database) => A) => Effect.Effect<A>
  /** Runs `f` on the connection now: for a fiber inside a transaction of this client, which holds the connection. */
  readonly inTransaction: <A>(f: (db: Database) => A) => Effect.Effect<A>
  /**
   * Whether a fiber whose context is `context` is inside a transaction of this client, which then holds the
   * connection for it. Not inside another client's: @effect/sql keeps every client's transaction under one tag
   * (`SqlClient.TransactionConnection`), and that one's connection is not this one.
   */
  readonly holds: (context: Context.Context<never>) => boolean
  /**
   * No transaction of the client holds the connection: `now` may run a synchronous write, which nothing can enter
   * before it returns (the client's other statements run one at a time, each synchronously, outside transactions).
   */
  readonly idle: () => boolean
  /** Runs `f` on the connection at once, synchronously: only while `idle()`. */
  readonly now: <A>(f: (db: Database) => A) => A
  /**
   * Has every statement of the client that writes (not a read) asked `guard` first, with its text: an error refuses
   * it (the client's statement fails with it). For a store whose sync failed (`./walFlush.ts`).
   */
  readonly guardWrites: (guard: (sql: string) => Error | undefined) => void
}

/** The lane of each client `open` made (a client made elsewhere has none). */
const lanes = new WeakMap<Client.SqlClient, Lane>()

/** The `Lane` of `client`, when this module opened it: its connection, for a plain synchronous read (`runNotices`). */
export const laneOf = (client: Client.SqlClient): Lane | undefined => lanes.get(client)

/** A connection to a SQLite file: `@effect/sql-sqlite-node`'s `make`, on `Driver.driver()`. */
export const make = (
  options: SqliteClient.SqliteClientConfig & {
    /** The database's bytes, opened as an in-memory copy (SQLite's deserialize) instead of the file `filename`. */
    readonly image?: Buffer | undefined
  }
): Effect.Effect<SqliteClient.SqliteClient, never, Scope.Scope | Reactivity.Reactivity> => Effect.map(open(options), (opened) => opened.client)

/** `make`, with the client's `Lane`. */
export const open = (
  options: SqliteClient.SqliteClientConfig & {
    /** The database's bytes, opened as an in-memory copy (SQLite's deserialize) instead of the file `filename`. */
    readonly image?: Buffer | undefined
  }
): Effect.Effect<{ readonly client: SqliteClient.SqliteClient; readonly lane: Lane }, never, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const compiler = Statement.makeCompilerSqlite(options.transformQueryNames)
    const transformRows = options.transformResultNames === undefined
      ? undefined
      : Statement.defaultTransforms(options.transformResultNames).array

    const scope = yield* Effect.scope
    const Sqlite = Driver.driver()
    const db: Database = new Sqlite(options.image ?? options.filename, { readonly: options.readonly ?? false })
    yield* Scope.addFinalizer(scope, Effect.sync(() => db.close()))
    if (options.disableWAL !== true) db.pragma("journal_mode = WAL")

    const prepareCache = yield* Cache.make({
      capacity: options.prepareCacheSize ?? 200,
      timeToLive: options.prepareCacheTTL ?? Duration.minutes(10),
      lookup: (sql: string) => Effect.try({ try: (): Prepared => db.prepare(sql), catch: failure("Failed to prepare statement ") })
    })

    // What refuses the client's writes (see `Lane.guardWrites`).
    let writeGuard: ((sql: string) => Error | undefined) | undefined
    /** The refusal of `statement` (text `sql`) by the write guard: never a read's (a write that returns rows is not one). */
    const refusal = (sql: string, statement: Prepared): SqlError | undefined => {
      if (writeGuard === undefined || (statement.reader && !RETURNING.test(sql))) return undefined
      const refused = writeGuard(sql)
      return refused === undefined ? undefined : new SqlError({ cause: refused, message: "Failed to execute statement" })
    }

    const connection = connectionOn(db, prepareCache, refusal)

    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    // Transactions holding the connection: none, and a synchronous write cannot land inside one (`Lane.idle`).
    let transactions = 0
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          Effect.zipRight(restore(semaphore.take(1)), Effect.sync(() => transactions++)),
          Effect.tap(Effect.scope, (s) => Scope.addFinalizer(s, Effect.zipRight(Effect.sync(() => transactions--), semaphore.release(1))))
        ),
        connection
      )
    )
    const client = yield* Client.make({
      acquirer,
      compiler,
      transactionAcquirer,
      spanAttributes: [...(options.spanAttributes === undefined ? [] : Object.entries(options.spanAttributes)), ["db.system.name", "sqlite"]],
      transformRows
    })
    const lane: Lane = {
      exclusive: (f) => semaphore.withPermits(1)(Effect.sync(() => f(db))),
      inTransaction: (f) => Effect.sync(() => f(db)),
      holds: (context) => Option.exists(Context.getOption(context, Client.TransactionConnection), ([held]) => held === connection),
      idle: () => transactions === 0,
      now: (f) => f(db),
      guardWrites: (guard) => {
        writeGuard = guard
      }
    }
    const sqliteClient = Object.assign(client, {
      [SqliteClient.TypeId]: SqliteClient.TypeId,
      config: options,
      // As the original: each waits for the connection (a transaction another fiber holds ends first).
      export: Effect.zipRight(acquirer, Effect.try({ try: (): Uint8Array => db.serialize(), catch: failure("Failed to export database") })),
      backup: (destination: string) =>
        Effect.zipRight(acquirer, Effect.tryPromise({ try: () => db.backup(destination), catch: failure("Failed to backup database") })),
      loadExtension: (path: string) =>
        Effect.zipRight(
          acquirer,
          Effect.zipRight(Effect.try({ try: () => db.loadExtension(path), catch: failure("Failed to load extension") }), prepareCache.invalidateAll)
        )
    }) as SqliteClient.SqliteClient
    lanes.set(sqliteClient, lane)
    return { client: sqliteClient, lane }
  })

/**
 * The client's `Connection` on `db`: its statements prepared through `prepareCache`, each that writes first asked
 * `refusal` (see `Lane.guardWrites`).
 */
const connectionOn = (
  db: Database,
  prepareCache: Cache.Cache<string, Prepared, SqlError>,
  refusal: (sql: string, statement: Prepared) => SqlError | undefined
): Connection => {
  const runStatement = (sql: string, statement: Prepared, params: ReadonlyArray<unknown>, raw: boolean) =>
    Effect.withFiberRuntime<ReadonlyArray<unknown> | Driver.RunResult, SqlError>((fiber) => {
      const refused = refusal(sql, statement)
      if (refused !== undefined) return Effect.fail(refused)
      // Set on every run: a cached statement must not keep a mode another caller asked for.
      statement.safeIntegers(Context.get(fiber.currentContext, Client.SafeIntegers))
      try {
        if (statement.reader) return Effect.succeed(statement.all(...params))
        const result = statement.run(...params)
        return Effect.succeed(raw ? result : [])
      } catch (cause) {
        return Effect.fail(failure("Failed to execute statement")(cause))
      }
    })

  const run = (sql: string, params: ReadonlyArray<unknown>, raw = false) =>
    Effect.flatMap(prepareCache.get(sql), (s) => runStatement(sql, s, params, raw))

  const runValues = (sql: string, params: ReadonlyArray<unknown>) =>
    Effect.acquireUseRelease(
      prepareCache.get(sql),
      (statement) =>
        Effect.withFiberRuntime<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>((fiber) => Effect.try({
          try: (): ReadonlyArray<ReadonlyArray<unknown>> => {
            const refused = refusal(sql, statement)
            if (refused !== undefined) throw refused.cause
            statement.safeIntegers(Context.get(fiber.currentContext, Client.SafeIntegers))
            if (statement.reader) {
              statement.raw(true)
              return statement.all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
            }
            statement.run(...params)
            return []
          },
          catch: failure("Failed to execute statement")
        })),
      (statement) => Effect.sync(() => statement.reader && statement.raw(false))
    )

  const rows = (effect: Effect.Effect<unknown, SqlError>) => effect as Effect.Effect<ReadonlyArray<never>, SqlError>

  return {
    execute: (sql, params, transform) =>
      rows(transform === undefined ? run(sql, params) : Effect.map(run(sql, params), (r) => transform(r as ReadonlyArray<object>))),
    executeRaw: (sql, params) => run(sql, params, true),
    executeValues: (sql, params) => runValues(sql, params),
    executeUnprepared: (sql, params, transform) => {
      const effect = Effect.flatMap(
        Effect.try({ try: (): Prepared => db.prepare(sql), catch: failure("Failed to prepare statement ") }),
        (statement) => runStatement(sql, statement, params ?? [], false)
      )
      return rows(transform === undefined ? effect : Effect.map(effect, (r) => transform(r as ReadonlyArray<object>)))
    },
    executeStream: () => Stream.dieMessage("executeStream not implemented")
  }
}
