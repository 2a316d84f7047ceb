/**
 * Artana's embedded store: one SQLite file, in WAL mode with `synchronous=FULL`, holding every store service.
 * The layer provides the `EventStore`, the `TaskQueue`, the `LiveStore` (deltas of streamed calls) and the
 * `SqlClient` they run on, so later services (memory) share the same connection.
 *
 * @since 0.1.0
 */
import { ApprovalsIndex, BudgetHolds, Errors, EventStore, LiveStore, RunNotices, SqlEventStore, SqlLiveStore, SqlTaskQueue, type TaskQueue } from "@artana/core"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Notices from "./internal/runNotices.js"
import * as Client from "./internal/sqliteClient.js"
import * as Driver from "./internal/sqliteDriver.js"
import * as SqliteAppend from "./internal/sqliteAppend.js"
import * as SqliteRead from "./internal/sqliteRead.js"
import * as ReadAhead from "./internal/sqliteReadAhead.js"
import * as WalFlush from "./internal/walFlush.js"

/** Where the database lives and how hard it works to keep what it acknowledged. */
export interface Options {
  /** Path of the database file (`:memory:` for a throwaway database). Its directory must exist. */
  readonly filename: string
  /**
   * `"full"` (default): every commit is on disk before `append` returns, so an acknowledged event (a
   * `ToolRequested` before its side effect starts) survives a power loss. `"normal"` skips that sync in WAL
   * mode: faster, still safe if the process crashes, but a power loss or OS crash may drop the last commits.
   */
  readonly synchronous?: "full" | "normal" | undefined
  /**
   * At `synchronous: "full"`, which commits of the event store's appends have their sync made off the event loop, on
   * the process's sync thread (see the README's "Group commit and the event loop"). `"never"` (default): every commit
   * syncs in place, on the loop, before SQLite makes it visible, so whatever any reader sees is durable. `"groups"`: a
   * commit of two appends or more syncs off the loop, which serves other work meanwhile; a run appending alone syncs
   * in place (a sync on another thread adds tens of microseconds to a commit). `"always"`: every commit syncs off the
   * loop, for a process whose event loop serves other work (an HTTP server beside its runs) that must never wait for
   * the disk. Either way an append is answered once durable; off the loop, a commit is visible to readers (this
   * process's, other processes') before its sync ends, and a failed sync is recovered by a checkpoint before anything
   * else is written.
   */
  readonly syncOffLoop?: "never" | "groups" | "always" | undefined
  /** How long a write waits for another process holding the database's write lock. Default 5 seconds. */
  readonly busyTimeout?: Duration.DurationInput | undefined
  /** Prefix of every table name (see `SqlEventStore.Options`). */
  readonly tablePrefix?: string | undefined
  /**
   * Open the file read-only (SQLite's read-only flag, and `query_only`, so no statement can write): no table is
   * created, no migration runs (the schema is checked instead), WAL is not switched on. For inspecting a database
   * on a read-only file or file system (a backup, a snapshot): reads work, every write fails with a `StoreError`.
   * The file must exist. Default false.
   */
  readonly readOnly?: boolean | undefined
  /**
   * Called after each commit of the event store's appends (see the README's "Group commit"), once it is durable and
   * before its callers are answered, with the number of appends that commit made durable: 1 for an append committed
   * alone, the group's size for a group. For metrics (how well appends group, commits per step); it runs on the
   * append's path (inside the write, or in the callback of a group's sync), so it must be cheap (an error it throws
   * is ignored: it fails no durable append).
   */
  readonly onGroupCommit?: ((appends: number) => void) | undefined
}

/** The services `layer` provides. */
export type Services =
  | EventStore.EventStore
  | TaskQueue.TaskQueue
  | LiveStore.LiveStore
  | SqlClient.SqlClient
  | SqliteClient.SqliteClient
  | SqlEventStore.AppendDialect
  | SqlEventStore.ReadDialect
  | RunNotices.RunNotices
  | ApprovalsIndex.ApprovalsIndex
  | BudgetHolds.BudgetHolds

const STORE = "sqlite"

/** A statement that begins, ends or undoes a transaction or savepoint. */
const CONTROL = /^\s*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE)\b/i
/** A transaction's start: the connection holds none yet (so a checkpoint may run first), though the client counts it. */
const BEGIN = /^\s*BEGIN\b/i

const isMemory = (filename: string) => filename === ":memory:" || filename === "" || filename.startsWith("file::memory:")

const codeOf = (cause: unknown): string | undefined =>
  Predicate.hasProperty(cause, "code") && typeof cause.code === "string" ? cause.code : undefined

const messageOf = (cause: unknown): string =>
  Predicate.hasProperty(cause, "message") && typeof cause.message === "string" ? cause.message : String(cause)

const canAccess = (file: string, mode: number): boolean => {
  try {
    fs.accessSync(file, mode)
    return true
  } catch {
    return false
  }
}

/** `fs.statSync`, or the error code saying why not (ENOENT, ENOTDIR, EACCES, ...). */
const statOf = (file: string): fs.Stats | string => {
  try {
    return fs.statSync(file)
  } catch (cause) {
    return codeOf(cause) ?? messageOf(cause)
  }
}

/** What the file system says about the path, when it explains the failure; never throws. */
const fileSystemReason = (filename: string, readOnly: boolean): string | undefined => {
  if (isMemory(filename)) return undefined
  const dir = path.dirname(path.resolve(filename))
  const parent = statOf(dir)
  if (parent === "ENOENT") return `the directory ${dir} does not exist (create it first, or fix the path)`
  if (parent === "ENOTDIR") return `a part of ${dir} is a file, not a directory`
  if (parent === "EACCES" || parent === "EPERM") return `permission denied: this process may not enter ${dir}`
  if (typeof parent === "string") return undefined
  if (!parent.isDirectory()) return `${dir} is a file, not a directory`
  const file = statOf(filename)
  if (readOnly && file === "ENOENT") return `there is no file ${filename} (a read-only store creates none)`
  if (typeof file !== "string") {
    if (file.isDirectory()) return `${filename} is a directory, not a database file`
    if (readOnly && !canAccess(filename, fs.constants.R_OK)) return `permission denied: this process may not read ${filename}`
    if (!readOnly && !canAccess(filename, fs.constants.R_OK | fs.constants.W_OK)) {
      return `permission denied: this process may not read and write ${filename}`
    }
  }
  if (!readOnly && !canAccess(dir, fs.constants.W_OK | fs.constants.X_OK)) {
    return `permission denied: this process may not create files in ${dir} (SQLite needs its -wal and -shm files there)`
  }
  return undefined
}

/** Why SQLite could not open `filename`, in words a person can act on. */
const diagnose = (filename: string, cause: unknown, busyTimeoutMs: number, readOnly: boolean): string => {
  const fromFileSystem = fileSystemReason(filename, readOnly)
  if (fromFileSystem !== undefined) return fromFileSystem
  const code = codeOf(cause) ?? ""
  if (code === "SQLITE_NOTADB") return "the file is not a SQLite database (another kind of file, encrypted, or overwritten)"
  if (code.startsWith("SQLITE_CORRUPT")) return "the database file is corrupt"
  if (code === "SQLITE_READONLY_DIRECTORY") {
    return `SQLite must create ${path.basename(filename)}-wal and -shm beside a WAL-mode database to read it, and may not create files in ` +
      `${path.dirname(path.resolve(filename))}: copy the file (with its -wal file, if there is one) to a directory this process may write, ` +
      "or read it where the file system itself is read-only (a read-only mount needs no such files)"
  }
  if (code.startsWith("SQLITE_READONLY")) {
    return "the database is read-only for this process (check the permissions of the file, its -wal and -shm files, and the directory)"
  }
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
    return `another connection held the database locked for longer than the busy timeout (${busyTimeoutMs} ms)`
  }
  if (code === "SQLITE_FULL") return "the disk is full"
  if (code.startsWith("SQLITE_IOERR")) return `a disk I/O error (${messageOf(cause)})`
  if (code.startsWith("SQLITE_CANTOPEN") || code === "SQLITE_PERM" || code === "SQLITE_AUTH") {
    return `SQLite cannot open the file (${messageOf(cause)}): the path is not a regular file, or the file system refuses it`
  }
  return messageOf(cause)
}

const unavailable = (filename: string, cause: unknown, busyTimeoutMs: number, readOnly = false) =>
  new Errors.StoreUnavailable({ store: STORE, location: filename, reason: diagnose(filename, cause, busyTimeoutMs, readOnly), cause })

/** busy_timeout takes an int; an infinite wait is the largest it accepts. */
const toTimeoutMs = (input: Duration.DurationInput): number => {
  const ms = Duration.toMillis(Duration.decode(input))
  return Number.isFinite(ms) ? Math.max(0, Math.round(ms)) : 2_147_483_647
}

const isBusy = (error: SqlError): boolean => {
  const code = codeOf(error.cause) ?? ""
  return code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")
}

/**
 * Switches the file to WAL. The switch needs the exclusive lock, and SQLite answers SQLITE_BUSY at once, without
 * the busy handler, when two connections both hold a read lock and want it (its deadlock rule), as processes
 * opening one fresh file together do: so a busy answer is retried, for as long as the busy timeout allows.
 */
const enableWal = (client: SqliteClient.SqliteClient, timeoutMs: number): Effect.Effect<void, SqlError> =>
  client.unsafe("PRAGMA journal_mode = WAL").pipe(
    Effect.asVoid,
    Effect.retry({
      while: isBusy,
      schedule: Schedule.exponential(Duration.millis(5), 1.5).pipe(
        Schedule.jittered,
        Schedule.union(Schedule.spaced(Duration.millis(100))),
        Schedule.upTo(Duration.millis(timeoutMs))
      )
    })
  )

/** Whether `file` exists with content. */
const nonEmpty = (file: string): boolean => {
  const stat = statOf(file)
  return typeof stat !== "string" && stat.size > 0
}

/**
 * A read-only store on a WAL-mode file that SQLite cannot open in place: SQLite reads such a file only beside its
 * -wal and -shm files, and cannot create them on a read-only file system or in a directory this process may not
 * write (`SQLITE_CANTOPEN`, `SQLITE_READONLY_DIRECTORY`). There, when no -wal file holds commits (the whole database
 * is in the file, as after a clean close), the store reads an in-memory copy of the file, marked as a rollback-
 * journal database (header bytes 18 and 19), which is what SQLite's `immutable` open would read. A file that changed
 * while it was copied (another process wrote it) is refused. Undefined where the file opens in place.
 */
const imageWhereUnreadable = (filename: string): Effect.Effect<Buffer | undefined, Errors.StoreUnavailable> =>
  Effect.suspend(() => {
    if (isMemory(filename)) return Effect.succeed(undefined)
    const code = probe(filename)
    if (code !== "SQLITE_CANTOPEN" && code !== "SQLITE_READONLY_DIRECTORY") return Effect.succeed(undefined)
    const refused = (reason: string) => new Errors.StoreUnavailable({ store: STORE, location: filename, reason })
    if (nonEmpty(`${filename}-wal`)) {
      return Effect.fail(refused(
        `its -wal file holds commits not yet in the database file, and SQLite may not create the -shm file beside it ` +
          `(${code}): copy the database and its -wal file to a directory this process may write, and read the copy`
      ))
    }
    const before = statOf(filename)
    let bytes: Buffer
    try {
      bytes = fs.readFileSync(filename)
    } catch (cause) {
      return Effect.fail(unavailable(filename, cause, 0, true))
    }
    const after = statOf(filename)
    if (typeof before === "string" || typeof after === "string" || before.mtimeMs !== after.mtimeMs || before.size !== after.size || nonEmpty(`${filename}-wal`)) {
      return Effect.fail(refused("the file changed while it was read (another process writes it): try again"))
    }
    if (bytes.length >= 20 && bytes[18] === 2 && bytes[19] === 2) {
      bytes[18] = 1
      bytes[19] = 1
    }
    return Effect.succeed(bytes)
  })

/** The error code of a first read of the file through a read-only connection, or undefined when it reads. */
const probe = (filename: string): string | undefined => {
  let db: Driver.Database | undefined
  try {
    db = new (Driver.driver())(filename, { readonly: true })
    db.prepare("SELECT count(*) AS tables FROM sqlite_master").get()
    return undefined
  } catch (cause) {
    return codeOf(cause) ?? messageOf(cause)
  } finally {
    db?.close()
  }
}

/**
 * Opens the database and configures its connection: `busy_timeout`, WAL, `synchronous` and `foreign_keys`.
 * `SqliteClient` keeps a single connection, so the pragmas hold for every query the client runs.
 */
export const make = (options: Options): Effect.Effect<SqliteClient.SqliteClient, Errors.StoreUnavailable, Scope.Scope> =>
  Effect.map(open(options), (opened) => opened.client)

/** `make`, with the client's `Lane` (its connection, for the store's own append). */
const open = (
  options: Options
): Effect.Effect<
  {
    readonly client: SqliteClient.SqliteClient
    readonly lane: Client.Lane
    readonly flush: WalFlush.WalFlush | undefined
    readonly ahead: SqlEventStore.ReadAhead | undefined
  },
  Errors.StoreUnavailable,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const timeoutMs = toTimeoutMs(options.busyTimeout ?? Duration.seconds(5))
    const readOnly = options.readOnly === true
    // better-sqlite3 throws from its constructor (a missing directory, a directory, an unreadable file) and
    // the client lets that escape as a defect: here, at the edge, it becomes a typed failure.
    // WAL is switched on below, after busy_timeout: SqliteClient would do it first thing, and on a fresh file
    // opened by several processes at once that switch can fail at once with SQLITE_BUSY.
    const image = readOnly ? yield* imageWhereUnreadable(options.filename) : undefined
    const { client, lane } = yield* Client.open({ filename: options.filename, disableWAL: true, readonly: readOnly, image }).pipe(
      Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make),
      Effect.catchAllDefect((cause) => Effect.fail(unavailable(options.filename, cause, timeoutMs, readOnly)))
    )
    const failed = <A>(effect: Effect.Effect<A, SqlError>): Effect.Effect<A, Errors.StoreUnavailable> =>
      Effect.catchTag(effect, "SqlError", (error) => Effect.fail(unavailable(options.filename, error.cause ?? error, timeoutMs, readOnly)))
    yield* client.unsafe(`PRAGMA busy_timeout = ${timeoutMs}`).pipe(failed)
    // Read-only: the file keeps the journal mode it has (switching it is a write), and no statement may write,
    // whatever it is: the schema migrations see `query_only` and only check.
    if (readOnly) {
      yield* Effect.all([
        client.unsafe("PRAGMA query_only = 1"),
        // Reads the schema: a file that is not a database fails here, not on the first read.
        client.unsafe("SELECT count(*) AS tables FROM sqlite_master")
      ], { discard: true }).pipe(failed)
      return { client, lane, flush: undefined, ahead: image === undefined ? yield* ReadAhead.make(options.filename, timeoutMs) : undefined }
    }
    const synchronous = options.synchronous === "normal" ? "NORMAL" : "FULL"
    yield* enableWal(client, timeoutMs).pipe(failed)
    yield* Effect.all([
      client.unsafe(`PRAGMA synchronous = ${synchronous}`),
      client.unsafe("PRAGMA foreign_keys = ON"),
      // Reads the schema: a file that is not a database fails here, not on the first append.
      client.unsafe("SELECT count(*) AS tables FROM sqlite_master")
    ], { discard: true }).pipe(failed)
    // SQLite silently opens a file this process may only read as read-only: the first append would fail.
    if (!isMemory(options.filename) && !canAccess(options.filename, fs.constants.R_OK | fs.constants.W_OK)) {
      return yield* new Errors.StoreUnavailable({
        store: STORE,
        location: options.filename,
        reason: `permission denied: this process may not read and write ${options.filename} (to read it, open it with readOnly: true)`
      })
    }
    // Asked for, at FULL on a file in WAL mode, the store's appends are synced off the event loop (`internal/walFlush.ts`).
    const offLoop = options.syncOffLoop === "groups" || options.syncOffLoop === "always"
    const wal = offLoop && synchronous === "FULL" && !isMemory(options.filename)
      ? yield* client.unsafe<{ readonly file: string }>(
        "SELECT file FROM pragma_database_list WHERE name = 'main' AND (SELECT journal_mode FROM pragma_journal_mode) = 'wal'"
      ).pipe(failed)
      : []
    const flush = wal[0] !== undefined && wal[0].file !== "" ? yield* WalFlush.make(wal[0].file, timeoutMs) : undefined
    // After a failed sync, the client's writes are refused too until a checkpoint recovers. Not its transactions'
    // control (the client would take a refused BEGIN or COMMIT for a defect): their writes are refused; a BEGIN, which
    // the connection runs holding no transaction yet, tries the checkpoint.
    if (flush !== undefined) {
      lane.guardWrites((text) =>
        lane.now((db) => {
          if (!CONTROL.test(text)) return flush.refused(db, lane.idle())
          if (BEGIN.test(text)) flush.refused(db, true)
          return undefined
        })
      )
    }
    return { client, lane, flush, ahead: yield* ReadAhead.make(options.filename, timeoutMs) }
  })

/**
 * The configured client alone, as `SqliteClient` and `SqlClient`, with the event store's append on it
 * (`SqlEventStore.AppendDialect`: the driver's own prepared statements, group-committed; see `internal/sqliteAppend.ts`)
 * and its read (`SqlEventStore.ReadDialect`: the pages of `readEvents` on the driver's own prepared statement; see
 * `internal/sqliteRead.ts`).
 */
export const layerClient = (
  options: Options
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient | SqlEventStore.AppendDialect | SqlEventStore.ReadDialect, Errors.StoreUnavailable> =>
  Layer.scopedContext(
    Effect.map(open(options), ({ ahead, client, flush, lane }) =>
      Context.make(SqliteClient.SqliteClient, client).pipe(
        Context.add(SqlClient.SqlClient, client),
        Context.add(SqlEventStore.AppendDialect, { client, make: (tables) => SqliteAppend.make(lane, tables, options.onGroupCommit, flush, options.syncOffLoop === "always") }),
        Context.add(SqlEventStore.ReadDialect, { client, values: SqliteRead.make(lane), ahead })
      ))
  )

/**
 * Every store service on one SQLite file: the `EventStore` and the `TaskQueue` (their tables created on first
 * open) and the `SqlClient` underneath. A database that cannot be opened fails the layer with `StoreUnavailable`;
 * one written by a newer Artana, or whose tables lack a column the stores use, with `SchemaMismatch`. With
 * `readOnly: true` nothing is created or migrated: the schema is only checked.
 *
 * @example
 * const StoreLive = SqliteStore.layer({ filename: "./artana.db" })
 */
export const layer = (options: Options): Layer.Layer<Services, Errors.StoreUnavailable | Errors.SchemaMismatch> => {
  const timeoutMs = toTimeoutMs(options.busyTimeout ?? Duration.seconds(5))
  const unusable = (error: Errors.StoreError) => unavailable(options.filename, error.cause ?? error, timeoutMs, options.readOnly === true)
  const eventStore = Layer.effect(
    EventStore.EventStore,
    SqlEventStore.make({ tablePrefix: options.tablePrefix }).pipe(Effect.catchTag("StoreError", (error) => Effect.fail(unusable(error))))
  )
  const taskQueue = SqlTaskQueue.layer({ tablePrefix: options.tablePrefix }).pipe(
    Layer.catchAll((error) => Layer.fail(error._tag === "StoreError" ? unusable(error) : error))
  )
  // Deltas of streamed model calls, in the file: a reader in another process follows a run as it streams. A read-only
  // open writes no deltas and may find a file without their table: they stay in its memory.
  const liveStore = options.readOnly === true
    ? LiveStore.layerMemory
    : SqlLiveStore.layer({ tablePrefix: options.tablePrefix }).pipe(Layer.catchAll((error) => Layer.fail(error._tag === "StoreError" ? unusable(error) : error)))
  // Notices of other processes' commits to the file, so that a run waiting in this process reads its log at once.
  const runNotices = Layer.scoped(RunNotices.RunNotices, Notices.make(options.filename, isMemory(options.filename)))
  // One after the other: a database that refuses the first store's tables fails the layer once, with its reason.
  return Layer.provideMerge(Layer.provideMerge(Layer.provideMerge(Layer.mergeAll(liveStore, runNotices, ApprovalsIndex.layerSql({ tablePrefix: options.tablePrefix }), BudgetHolds.layerSql({ tablePrefix: options.tablePrefix })), taskQueue), eventStore), layerClient(options))
}

/** A connection as `driver()` opens it: the part of better-sqlite3's `Database` both drivers offer. */
export type Database = Driver.Database

/** A prepared statement of a `Database`. */
export type Statement = Driver.Statement

/**
 * The `Database` class of the driver the store runs on: Node's built-in `node:sqlite` on Node.js 24 and later,
 * better-sqlite3 12 on Node.js 20 and 22 (see the README's "Node.js versions and the driver"). For programs that
 * read the file directly (an export, a check, a benchmark's floor) on the same driver as the store.
 *
 * @example
 * const Database = SqliteStore.driver()
 * const db = new Database("./artana.db", { readonly: true })
 * const runs = db.prepare("SELECT count(*) AS n FROM runs").get()
 * db.close()
 */
export const driver: () => Driver.Driver = Driver.driver

/** Which driver `driver()` is on this Node.js: `"node:sqlite"` (24 and later) or `"better-sqlite3"` (20, 22). */
export const driverName: Driver.DriverName = Driver.driverName

/**
 * `layer`, configured from the environment: `ARTANA_DB` names the file unless `config` says otherwise.
 *
 * @example
 * const StoreLive = SqliteStore.layerConfig({ filename: Config.string("ARTANA_DB"), synchronous: Config.literal("full", "normal")("ARTANA_DB_SYNC") })
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options> = { filename: Config.string("ARTANA_DB") }
): Layer.Layer<Services, Errors.StoreUnavailable | Errors.SchemaMismatch | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
