/**
 * Artana's multi-worker store: every store service on one PostgreSQL database, over `@effect/sql-pg`'s
 * `PgClient` (a `pg` connection pool). The layer provides the `EventStore`, the `TaskQueue` (workers claim with
 * `FOR UPDATE SKIP LOCKED` and wake each other with LISTEN/NOTIFY) and the `SqlClient` / `PgClient` they run
 * on, so later services (memory) share the same pool, and many processes on many machines can share one database.
 *
 * @since 0.1.0
 */
import { ApprovalsIndex, BudgetHolds, Errors, EventStore, type LiveStore, RunNotices, SqlErrors, SqlEventStore, SqlLiveStore, SqlTaskQueue, type TaskQueue } from "@artana/core"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import Pg from "pg"
import * as PgAppend from "./internal/pgAppend.js"
import * as RunWatch from "./internal/runWatch.js"

/** The connection pool each process keeps. */
export interface PoolOptions {
  /** Most connections this process opens at once. Default 10 (the `pg` default). */
  readonly max?: number | undefined
  /** How long an unused connection stays open before the pool closes it. Default 10 seconds. */
  readonly idleTimeout?: Duration.DurationInput | undefined
}

/** Where the database is and how this process connects to it. */
export interface Options {
  /**
   * A libpq connection URL, `postgres://user:password@host:5432/database` (query parameters such as
   * `sslmode=require` or `options=-c search_path=tenant_1` are understood). Pass it as `Redacted` so the
   * password never reaches a log; errors name the URL with the password replaced by `***`.
   */
  readonly url: Redacted.Redacted<string> | string
  readonly pool?: PoolOptions | undefined
  /** How long opening the first connection may take before the store is unavailable. Default 10 seconds. */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /**
   * TCP keepalive on every connection (the pool's, the listening ones, a cancel's): how long a connection may be idle
   * before the OS probes the server. A connection a NAT or load balancer dropped in silence is then found dead and
   * replaced, rather than a LISTEN waiting on it for ever. Default 30 seconds; `false`: the OS's default (none).
   */
  readonly keepAlive?: Duration.DurationInput | false | undefined
  /** Prefix of every table, index, function and trigger name (see `SqlEventStore.Options`). */
  readonly tablePrefix?: string | undefined
  /** `application_name` of the connections, as `pg_stat_activity` shows it. Default `"artana"`. */
  readonly applicationName?: string | undefined
  /**
   * Whether the event store's hot INSERT runs as a named prepared statement (parsed and planned once per
   * connection). Default true. Set false behind a pooler that does not keep prepared statements per client
   * (PgBouncer in transaction mode before 1.21, or without `max_prepared_statements`).
   */
  readonly preparedStatements?: boolean | undefined
  /**
   * Every connection refuses writes (`default_transaction_read_only`): no table is created, no migration runs (the
   * schema is checked instead), every write fails with a `StoreError`. For inspecting a database with a role that
   * may only read, or a standby (whose connections are read-only anyway). Default false.
   */
  readonly readOnly?: boolean | undefined
}

/** The services `layer` provides. */
export type Services =
  | EventStore.EventStore
  | TaskQueue.TaskQueue
  | LiveStore.LiveStore
  | SqlClient.SqlClient
  | PgClient.PgClient
  | SqlEventStore.PreparedStatements
  | SqlEventStore.AppendDialect
  | RunNotices.RunNotices
  | ApprovalsIndex.ApprovalsIndex
  | BudgetHolds.BudgetHolds

const STORE = "postgres"

const urlOf = (url: Redacted.Redacted<string> | string): string => (Redacted.isRedacted(url) ? Redacted.value(url) : url)

/**
 * The URL as it may be shown: the password (in the user info, or a `password=` parameter) is replaced by `***`.
 *
 * @example
 * redactUrl("postgres://app:s3cret@db:5432/artana") // "postgres://app:***@db:5432/artana"
 */
export const redactUrl: (url: string) => string = SqlErrors.redactUrl

const field = (cause: unknown, name: string): string | undefined =>
  Predicate.hasProperty(cause, name) && typeof cause[name] === "string" ? cause[name] : undefined

const messageOf = (cause: unknown): string => field(cause, "message") ?? String(cause)

/** The first error with a `code` in a chain of causes and aggregated errors (Node's happy eyeballs). */
const rootCause = (cause: unknown): unknown => {
  let current = cause
  for (let depth = 0; depth < 5; depth++) {
    if (field(current, "code") !== undefined) return current
    if (Predicate.hasProperty(current, "errors") && Array.isArray(current.errors) && current.errors.length > 0) {
      current = current.errors[0]
    } else if (Predicate.hasProperty(current, "cause") && current.cause !== undefined) {
      current = current.cause
    } else {
      return current
    }
  }
  return current
}

interface Target {
  readonly host: string
  readonly port: string
  readonly user: string
  readonly database: string
}

const targetOf = (url: string): Target => {
  try {
    const parsed = new URL(url)
    const host = parsed.searchParams.get("host") ?? (parsed.hostname === "" ? "localhost" : decodeURIComponent(parsed.hostname))
    const user = parsed.username === "" ? "(the default user)" : decodeURIComponent(parsed.username)
    const database = parsed.pathname.length > 1 ? decodeURIComponent(parsed.pathname.slice(1)) : user
    return { host, port: parsed.port === "" ? "5432" : parsed.port, user, database }
  } catch {
    return { host: "the server", port: "its port", user: "the user", database: "the database" }
  }
}

/** Why the server could not be used, in words a person can act on. */
const diagnose = (url: string, cause: unknown, connectTimeoutMs: number, timedOut: boolean): string => {
  const root = rootCause(cause)
  const code = field(root, "code") ?? ""
  const message = messageOf(root)
  const { database, host, port, user } = targetOf(url)
  switch (code) {
    case "ECONNREFUSED":
      return `nothing accepts connections at ${host}:${port} (is the PostgreSQL server running, and on that port?)`
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the host name ${host} does not resolve (${code})`
    case "ENOENT":
      return `no Unix socket at ${host} (is the PostgreSQL server running, with its socket there?)`
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `the server at ${host}:${port} cannot be reached (${code}): check the host, the network and any firewall`
    case "ECONNRESET":
    case "EPIPE":
      return `the server at ${host}:${port} closed the connection while it was being opened (${message})`
    case "28P01":
      return `password authentication failed for user ${user}: check the password in the URL`
    case "28000":
      return `the server refused user ${user} (${message}): check the user, and pg_hba.conf on the server`
    case "3D000":
      return `the database ${database} does not exist on ${host}:${port} (create it: CREATE DATABASE ${database})`
    case "42501":
      return `user ${user} lacks a privilege the store needs to create its tables (${message})`
    case "53300":
      return `the server has no connection left (${message}): lower pool.max, or raise max_connections`
    case "57P03":
      return `the server is starting up or shutting down (${message})`
  }
  // pg ends a connection that outlives connectionTimeoutMillis, and reports that as "terminated unexpectedly".
  if (timedOut || /timed? ?out|timeout/i.test(message)) {
    return `no connection within ${connectTimeoutMs} ms to ${host}:${port} (is the host right, and the server up?)`
  }
  if (/SSL/i.test(message)) return `the TLS handshake failed (${message}): check sslmode in the URL`
  if (/terminated unexpectedly/i.test(message)) {
    return `the server at ${host}:${port} closed the connection while it was being opened (is it a PostgreSQL server?)`
  }
  return code === "" ? message : `${message} (${code})`
}

const unavailable = (url: string, cause: unknown, connectTimeoutMs: number, timedOut = false) =>
  new Errors.StoreUnavailable({ store: STORE, location: redactUrl(url), reason: diagnose(url, cause, connectTimeoutMs, timedOut), cause })

const URL_SHAPE = "postgres://user:password@host:5432/database"

/** Why `url` is not a connection URL this store takes, or undefined. */
const invalidUrl = (url: string): string | undefined => {
  if (url.trim() === "") return `no connection URL was given (expected ${URL_SHAPE})`
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `not a valid connection URL (expected ${URL_SHAPE}; percent-encode special characters in the password)`
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    return `not a PostgreSQL URL: the scheme is ${parsed.protocol} (expected ${URL_SHAPE})`
  }
  return undefined
}

const connectTimeoutOf = (options: Options): Duration.Duration => Duration.decode(options.connectTimeout ?? Duration.seconds(10))

/**
 * The pool, opened and checked: a server that cannot be reached, refused credentials or a missing database fail
 * here with `StoreUnavailable`, not on the first append. The pool closes with the scope.
 */
interface Opened {
  readonly pool: Pg.Pool
  /** How the pool connects: a cancel goes out on a connection of its own, made the same way. */
  readonly connection: Pg.ClientConfig
}

const READ_ONLY = "-c default_transaction_read_only=on"

/**
 * The connection settings of a read-only store: the server makes every transaction read-only from the start. pg
 * takes `options` from the URL over the config, so a URL's own `options` move into the config, before ours.
 */
const readOnlyConnection = (url: string): Pg.ClientConfig => {
  try {
    const parsed = new URL(url)
    const own = parsed.searchParams.get("options")
    parsed.searchParams.delete("options")
    return { connectionString: parsed.toString(), options: own === null ? READ_ONLY : `${own} ${READ_ONLY}` }
  } catch {
    return { options: READ_ONLY }
  }
}

const ignoreError = () => {}

/** How every connection of the store is made (the pool's, a cancel's, the runs channel's). */
const connectionOf = (options: Options): Pg.ClientConfig => {
  const url = urlOf(options.url)
  return {
    connectionString: url,
    connectionTimeoutMillis: Duration.toMillis(connectTimeoutOf(options)),
    application_name: options.applicationName ?? "artana",
    ...(options.keepAlive === false
      ? { keepAlive: false }
      : { keepAlive: true, keepAliveInitialDelayMillis: Duration.toMillis(Duration.decode(options.keepAlive ?? Duration.seconds(30))) }),
    ...(options.readOnly === true ? readOnlyConnection(url) : {})
  }
}

const openPool = (options: Options): Effect.Effect<Opened, Errors.StoreUnavailable, Scope.Scope> =>
  Effect.suspend(() => {
    const url = urlOf(options.url)
    const connectTimeout = connectTimeoutOf(options)
    const timeoutMs = Duration.toMillis(connectTimeout)
    const invalid = invalidUrl(url)
    if (invalid !== undefined) {
      return Effect.fail(new Errors.StoreUnavailable({ store: STORE, location: redactUrl(url), reason: invalid }))
    }
    // Measured from when the connection is attempted, not from when the layer was described.
    const started = Date.now()
    const failed = (cause: unknown) => unavailable(url, cause, timeoutMs, Date.now() - started >= timeoutMs * 0.9)
    const connection = connectionOf(options)
    return Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new Pg.Pool({
          ...connection,
          max: options.pool?.max,
          idleTimeoutMillis: Duration.toMillis(Duration.decode(options.pool?.idleTimeout ?? Duration.seconds(10)))
        })
        // An idle connection the server closes is dropped by the pool; the next query opens another.
        pool.on("error", () => {})
        // A connection that ends while checked out emits "error" (before its query fails, or while a cancel is
        // pending): without a listener, an uncaught exception. Each connection has one for its whole life, so a
        // statement does not add and remove its own (the query's callback reports the failure).
        pool.on("connect", (connection) => connection.on("error", ignoreError))
        return { pool, connection }
      }),
      ({ pool }) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    ).pipe(
      Effect.tap(({ pool }) =>
        Effect.tryPromise({ try: () => pool.query("SELECT 1"), catch: failed }).pipe(
          Effect.timeoutFail({ duration: connectTimeout, onTimeout: () => failed(new Error("Connection timed out")) })
        )
      )
    )
  })

/**
 * A statement as `pg` runs it, named when it is prepared. Handing `pg` a query object rather than a config object
 * saves a copy of the config (`pg` copies every property descriptor of a config on each call) on the hot path.
 */
class NamedQuery extends Pg.Query {
  constructor(
    readonly name: string | undefined,
    text: string,
    values: Array<unknown>,
    callback: (error: Error | undefined, result: Pg.QueryResult) => void
  ) {
    super(text, values, callback)
  }
}

/** Server error codes the prepared path handles itself. */
const LOST_STATEMENT = "26000" // prepared statement does not exist (DEALLOCATE, DISCARD ALL, a pooler)

/**
 * Runs statements prepared, by name, on the pool's connections: each connection parses and plans a text once,
 * then only binds and executes it. Texts beyond the first `PREPARED_TEXTS` run unnamed (a bounded set per
 * connection, whatever a caller sends), as every text does when `enabled` is false.
 *
 * - A statement the server refused (a duplicate key) keeps its connection; a connection that failed, or whose
 *   session the server ended (FATAL), is dropped, and so is one whose prepared statement the server no longer
 *   has (the statement then runs again, on another connection: it did not run).
 * - An interrupted statement is cancelled on the server, best effort, through a connection of its own (the pool
 *   may be full of the very statements to cancel), and its connection goes back to the pool only after the
 *   cancel was answered, so the cancel cannot reach a later statement. The interrupt returns when the statement
 *   is over (at most `INTERRUPT_WAIT`). It may still have committed, as can every statement whose answer never
 *   arrives.
 */
const preparedStatements = (
  opened: Opened,
  client: SqlClient.SqlClient,
  enabled: boolean
): SqlEventStore.PreparedStatementsService => {
  const { connection: config, pool } = opened
  const names = new Map<string, string>()
  const nameOf = (text: string): string | undefined => {
    if (!enabled) return undefined
    const known = names.get(text)
    if (known !== undefined || names.size >= PREPARED_TEXTS) return known
    const name = `artana_${names.size + 1}`
    names.set(text, name)
    return name
  }
  const failed = (cause: unknown) => Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
  const cancel = (pid: number, done: () => void) => {
    const canceller = new Pg.Client(config)
    canceller.on("error", () => {})
    canceller.connect((error: Error | undefined) => {
      if (error) return done()
      canceller.query("SELECT pg_cancel_backend($1)", [pid], () => {
        done()
        void canceller.end().catch(() => {})
      })
    })
  }
  const run = (text: string, params: ReadonlyArray<unknown>) =>
    Effect.async<number, SqlError>((resume) => {
      const name = nameOf(text)
      // The caller's array as it is (`pg` only reads it).
      const values = Array.isArray(params) ? params : [...params]
      let interrupted = false
      let cancelling = false
      let running: Pg.PoolClient | undefined
      // Set when the statement is over: how its connection goes back (undefined: kept; an error: dropped).
      let outcome: { readonly release: (error?: Error) => void; readonly error: Error | undefined } | undefined
      // An interrupt waits for the statement to be over (cancelled, failed or committed) before it returns.
      let settled: (() => void) | undefined
      // Runs on connections that had lost the prepared statement (each dropped): the statement did not run there.
      let lostRuns = 0
      const giveBack = () => {
        if (outcome === undefined || cancelling) return
        outcome.release(outcome.error)
        outcome = undefined
        settled?.()
      }
      // The connection's "error" event has a listener from the pool's "connect" (see `openPool`).
      const attempt = () =>
        pool.connect((error, connection, release) => {
          if (error !== undefined || connection === undefined) return resume(failed(error))
          if (interrupted) {
            release()
            return settled?.()
          }
          running = connection
          connection.query(new NamedQuery(name, text, values, (queryError, result) => {
            running = undefined
            const lost = queryError instanceof Pg.DatabaseError && queryError.code === LOST_STATEMENT
            // Kept only after an ERROR the server answered on a live connection: not after FATAL (the server
            // ends the session), nor when it lost the prepared statement, nor when the statement was interrupted
            // (cancelled: whatever else was sent to its backend, a terminate say, must not reach a later statement).
            const failure = queryError ?? undefined
            const keep = failure === undefined || (failure instanceof Pg.DatabaseError && failure.severity === "ERROR" && !lost)
            outcome = { release, error: interrupted && failure !== undefined ? failure : keep ? undefined : failure }
            giveBack()
            // Every pooled connection may have lost it: again, on another connection, a bounded number of times.
            if (lost && !interrupted && lostRuns++ < LOST_RETRIES) return attempt()
            resume(queryError ? failed(queryError) : Effect.succeed(result.rowCount ?? 0))
          }))
        })
      attempt()
      return Effect.suspend(() => {
        interrupted = true
        const connection = running
        if (connection === undefined) return Effect.void
        const pid = Predicate.hasProperty(connection, "processID") ? connection.processID : undefined
        if (typeof pid === "number" && !pool.ending) {
          cancelling = true
          cancel(pid, () => {
            cancelling = false
            giveBack()
          })
        }
        return Effect.async<void>((done) => {
          settled = () => done(Effect.void)
        }).pipe(Effect.timeoutOption(INTERRUPT_WAIT), Effect.asVoid)
      })
    })
  return { client, execute: run }
}

/** How long an interrupted append waits for its statement to be over (as `@effect/sql-pg` waits for its cancel). */
const INTERRUPT_WAIT = Duration.seconds(5)

/** Runs of a statement whose connection had lost it (each on another connection): the pool's size, and more. */
const LOST_RETRIES = 16

/** Distinct texts a process prepares (the event store uses one per batch size up to 8). */
const PREPARED_TEXTS = 32

const clientOf = (options: Options) =>
  Effect.flatMap(openPool(options), (opened) =>
    PgClient.fromPool({ acquire: Effect.succeed(opened.pool) }).pipe(
      Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make),
      Effect.catchTag("SqlError", (error: SqlError) =>
        Effect.fail(unavailable(urlOf(options.url), error.cause ?? error, Duration.toMillis(connectTimeoutOf(options))))),
      Effect.map((client) => ({ client, opened }))
    ))

/**
 * Opens the pool and checks that the server answers: a server that cannot be reached, refused credentials or
 * a missing database fail here with `StoreUnavailable`, not on the first append. The pool closes with the scope.
 */
export const make = (options: Options): Effect.Effect<PgClient.PgClient, Errors.StoreUnavailable, Scope.Scope> =>
  Effect.map(clientOf(options), ({ client }) => client)

/**
 * The client alone, as `PgClient` and `SqlClient`, for other SQL stores on the same pool, with the pool's
 * `SqlEventStore.PreparedStatements` (sent unnamed with `preparedStatements: false`) and the event store's
 * PostgreSQL append (`SqlEventStore.AppendDialect`: one statement per batch, see `internal/pgAppend.ts`).
 */
export const layerClient = (
  options: Options
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | SqlEventStore.PreparedStatements | SqlEventStore.AppendDialect, Errors.StoreUnavailable> =>
  Layer.scopedContext(
    Effect.map(clientOf(options), ({ client, opened }) => {
      const prepared = preparedStatements(opened, client, options.preparedStatements !== false)
      return Context.make(PgClient.PgClient, client).pipe(
        Context.add(SqlClient.SqlClient, client),
        Context.add(SqlEventStore.PreparedStatements, prepared),
        Context.add(SqlEventStore.AppendDialect, { client, make: (tables) => PgAppend.make(client.withoutTransforms(), tables, prepared, runsChannel(options)) })
      )
    })
  )

/**
 * Every store service on one PostgreSQL database: the `EventStore` and the `TaskQueue` (their tables created on
 * first use, under an advisory lock, so processes starting together do not trip over each other) and the
 * `SqlClient` / `PgClient` underneath. A database that cannot be used fails the layer with `StoreUnavailable`;
 * one written by a newer Artana (a migration this code does not know), or whose tables lack a column the stores
 * use, with `SchemaMismatch`. On a read-only connection (a standby, `default_transaction_read_only`) nothing is
 * migrated: the schema is only checked.
 *
 * @example
 * const StoreLive = PostgresStore.layer({ url: Redacted.make("postgres://app:secret@db:5432/artana"), pool: { max: 20 } })
 */
export const layer = (options: Options): Layer.Layer<Services, Errors.StoreUnavailable | Errors.SchemaMismatch> => {
  const url = urlOf(options.url)
  const timeoutMs = Duration.toMillis(connectTimeoutOf(options))
  const eventStore = Layer.effect(
    EventStore.EventStore,
    SqlEventStore.make({ tablePrefix: options.tablePrefix }).pipe(
      Effect.catchTag("StoreError", (error) => Effect.fail(unavailable(url, error.cause ?? error, timeoutMs)))
    )
  )
  // The queue wakes workers in every process through LISTEN/NOTIFY on the pool's listening connection.
  const taskQueue = Layer.unwrapEffect(
    Effect.map(PgClient.PgClient, (pg) => SqlTaskQueue.layer({ tablePrefix: options.tablePrefix, listen: pg.listen }))
  ).pipe(Layer.catchAll((error) => Layer.fail(error._tag === "StoreError" ? unavailable(url, error.cause ?? error, timeoutMs) : error)))
  // Deltas of streamed model calls, in the database while their run is live: a kernel on another pool (a reader in
  // another process or on another machine) follows a run as it streams.
  const liveStore = SqlLiveStore.layer({ tablePrefix: options.tablePrefix }).pipe(
    Layer.catchAll((error) => Layer.fail(error._tag === "StoreError" ? unavailable(url, error.cause ?? error, timeoutMs) : error))
  )
  // Notices of writes to runs (a signal), so that a run waiting for it in another process reads its log at once: NOTIFY
  // on `artana_<prefix>runs`, heard on the pool's listening connection (one LISTEN per process).
  // A live reader watches its run (`internal/runWatch.ts`): appends to runs nobody watches send no notice.
  const runNotices = Layer.scoped(
    RunNotices.RunNotices,
    Effect.flatMap(PgClient.PgClient, (pg) =>
      Effect.flatMap(RunWatch.make(connectionOf(options), runsChannel(options), pg), RunNotices.fromChannel))
  )
  // One after the other: a database that refuses the first store's tables fails the layer once, with its reason.
  return Layer.provideMerge(Layer.provideMerge(Layer.provideMerge(Layer.mergeAll(liveStore, runNotices, ApprovalsIndex.layerSql({ tablePrefix: options.tablePrefix }), BudgetHolds.layerSql({ tablePrefix: options.tablePrefix })), taskQueue), eventStore), layerClient(options))
}

/** The channel of the `RunNotices` of a store's tables: `artana_<prefix>runs`. */
export const runsChannel = (options: Pick<Options, "tablePrefix"> = {}): string => `artana_${options.tablePrefix ?? ""}runs`

/**
 * `layer`, configured from the environment: `ARTANA_PG_URL` is the connection URL unless `config` says
 * otherwise.
 *
 * @example
 * const StoreLive = PostgresStore.layerConfig({
 *   url: Config.redacted("DATABASE_URL"),
 *   pool: { max: Config.integer("ARTANA_PG_POOL_MAX").pipe(Config.withDefault(10)) }
 * })
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options> = { url: Config.redacted("ARTANA_PG_URL") }
): Layer.Layer<Services, Errors.StoreUnavailable | Errors.SchemaMismatch | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))
