/**
 * A real PostgreSQL server for tests: the one a URL names, or a throwaway cluster started from the installed
 * binaries; and one fresh database per test, so tests running at once never share one.
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import { spawn, spawnSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
// Type-only (erased): the augmentation below needs the module in the program; the global setup, where vitest's
// test API must not load, imports this file too.
import type {} from "vitest"
import type { TestProject } from "vitest/node"
import { redactUrl } from "./PostgresStore.js"

/** Starting, using or stopping the test server failed; the message says what to do. */
export class PgTestError extends Data.TaggedError("PgTestError")<{ readonly message: string; readonly cause?: unknown }> {}

/** What the global setup hands to the tests: a server URL, or why there is none. */
export type Provided =
  | { readonly url: string; readonly source: string }
  | { readonly url: null; readonly reason: string }

declare module "vitest" {
  export interface ProvidedContext {
    artanaPg: Provided
  }
}

// --- binaries ------------------------------------------------------------------------------------------------

/** The server programs of one installed PostgreSQL version. */
export interface Binaries {
  readonly version: string
  readonly bin: string
  readonly initdb: string
  readonly pgCtl: string
}

const isFile = (file: string) => {
  try {
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

/**
 * The newest PostgreSQL under `root` (Debian installs each major version in `/usr/lib/postgresql/<version>/bin`)
 * that has both `initdb` and `pg_ctl`, or `undefined`.
 */
export const findBinaries = (root = "/usr/lib/postgresql"): Binaries | undefined => {
  let versions: Array<string>
  try {
    versions = fs.readdirSync(root)
  } catch {
    return undefined
  }
  const found = versions
    .map((version) => {
      const bin = path.join(root, version, "bin")
      return { version, bin, initdb: path.join(bin, "initdb"), pgCtl: path.join(bin, "pg_ctl") }
    })
    .filter((b) => isFile(b.initdb) && isFile(b.pgCtl))
    .sort((a, b) => Number.parseFloat(b.version) - Number.parseFloat(a.version))
  return found[0]
}

// --- the throwaway cluster -----------------------------------------------------------------------------------

/** A running cluster; `url` connects as its superuser to its `artana` database. */
export interface Cluster {
  readonly url: string
  readonly port: number
  readonly dir: string
  readonly version: string
  /** Stops the server at once (`pg_ctl stop -m immediate`) and removes its directory; safe to call twice. */
  readonly stopSync: () => void
}

const isRoot = () => process.getuid?.() === 0

/** The uid and gid of the `postgres` user, which runs the server when this process is root (initdb refuses root). */
const postgresUser = (): { readonly uid: number; readonly gid: number } => {
  const uid = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" })
  const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" })
  if (uid.status !== 0 || gid.status !== 0) {
    throw new PgTestError({
      message: "running as root, the test cluster must run as the `postgres` user (initdb refuses root), but there is no such user: install Debian's postgresql package, or set ARTANA_TEST_PG_URL"
    })
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
}

/** As root, `runuser -u postgres -- program args`; otherwise the program itself. */
const command = (program: string, args: ReadonlyArray<string>): readonly [string, ReadonlyArray<string>] =>
  isRoot() ? ["runuser", ["-u", "postgres", "--", program, ...args]] : [program, args]

const run = (program: string, args: ReadonlyArray<string>, cwd: string): Effect.Effect<string, PgTestError> =>
  Effect.async<string, PgTestError>((resume) => {
    const [file, argv] = command(program, args)
    // Waits for `exit`, not `close`: pg_ctl leaves the server running in the background.
    const child = spawn(file, argv, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.once("error", (cause) => resume(Effect.fail(new PgTestError({ message: `cannot run ${file}: ${cause.message}`, cause }))))
    child.once("exit", (code, signal) =>
      resume(
        code === 0
          ? Effect.succeed(output)
          : Effect.fail(new PgTestError({ message: `${path.basename(program)} ${args.join(" ")} exited with ${signal ?? code}:\n${output}` }))
      ))
  })

const freePort = Effect.async<number, PgTestError>((resume) => {
  const server = net.createServer()
  server.once("error", (cause) => resume(Effect.fail(new PgTestError({ message: `no free port: ${cause.message}`, cause }))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = Predicate.isObject(address) ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const readLog = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8").split("\n").slice(-20).join("\n")
  } catch {
    return "(no server log)"
  }
}

/** `sh -c` script: waits while the owner process lives and the dir exists, then stops the server and removes the dir. */
const WATCHDOG = `owner=$1; dir=$2; shift 2
while kill -0 "$owner" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done
if [ -d "$dir/data" ]; then "$@" >/dev/null 2>&1; rm -rf "$dir"; fi`

/**
 * Starts a throwaway cluster: `initdb` in a temp dir (as the `postgres` user when this process is root), the
 * server on 127.0.0.1 at a free port with its Unix socket in that dir, password authentication over TCP, and
 * an `artana` database. By default it favours speed over crash safety (`fsync=off`): nothing in it outlives the
 * tests. `durable: true` keeps PostgreSQL's own defaults (fsync, synchronous commit), for benchmarks.
 * Closing the scope stops the server and removes the dir.
 */
export const startCluster = (
  binaries: Binaries,
  options: { readonly durable?: boolean | undefined } = {}
): Effect.Effect<Cluster, PgTestError, Scope.Scope> =>
  Effect.gen(function*() {
    const owner = isRoot() ? postgresUser() : undefined
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-pg-"))
    const data = path.join(dir, "data")
    const log = path.join(dir, "server.log")
    const password = crypto.randomBytes(12).toString("hex")
    let started = false
    const stopSync = () => {
      if (started) {
        const [file, argv] = command(binaries.pgCtl, ["stop", "-D", data, "-m", "immediate", "-w", "-t", "30"])
        spawnSync(file, argv, { cwd: dir, stdio: "ignore" })
        started = false
      }
      fs.rmSync(dir, { recursive: true, force: true })
    }
    // A test run killed before its teardown still stops the server it started.
    process.once("exit", stopSync)
    yield* Effect.addFinalizer(() => Effect.sync(() => {
      process.off("exit", stopSync)
      stopSync()
    }))

    const pwfile = path.join(dir, "pwfile")
    fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 })
    if (owner !== undefined) {
      fs.chownSync(dir, owner.uid, owner.gid)
      fs.chownSync(pwfile, owner.uid, owner.gid)
    }
    yield* run(binaries.initdb, [
      "-D", data, "-U", "postgres", `--pwfile=${pwfile}`, "--auth-local=trust", "--auth-host=scram-sha-256",
      "-E", "UTF8", "--no-locale", "--no-sync"
    ], dir)

    let port = 0
    for (let attempt = 1; ; attempt++) {
      port = yield* freePort
      const settings = [
        "-c listen_addresses=127.0.0.1", `-c port=${port}`, `-c unix_socket_directories=${dir}`,
        "-c max_connections=300",
        ...(options.durable === true ? [] : ["-c fsync=off", "-c full_page_writes=off", "-c synchronous_commit=off"])
      ].join(" ")
      // Waits up to 5 minutes for the server to accept connections: a loaded machine (CI at load 30) starts it slowly.
      const start = yield* Effect.either(run(binaries.pgCtl, ["start", "-D", data, "-l", log, "-w", "-t", "300", "-o", settings], dir))
      if (start._tag === "Right") break
      // Another process took the port between our probe and the server's bind: try another.
      if (attempt >= 3 || !/could not bind|address already in use/i.test(readLog(log))) {
        return yield* new PgTestError({ message: `${start.left.message}\nserver log:\n${readLog(log)}` })
      }
    }
    started = true
    // Teardown and the exit hook do not run when the test run is killed (a signal from turbo or CI, SIGKILL): a
    // detached watchdog stops the server and removes the dir within a second of this process's death.
    const [stopFile, stopArgs] = command(binaries.pgCtl, ["stop", "-D", data, "-m", "immediate", "-w", "-t", "30"])
    const watchdog = spawn("sh", ["-c", WATCHDOG, "artana-pg-watchdog", String(process.pid), dir, stopFile, ...stopArgs], {
      cwd: dir,
      detached: true,
      stdio: "ignore"
    })
    watchdog.unref()
    yield* Effect.addFinalizer(() => Effect.sync(() => watchdog.kill()))

    const admin = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`
    yield* withClient(admin, (sql) => sql.unsafe("CREATE DATABASE artana"))
    return { url: withDatabase(admin, "artana"), port, dir, version: binaries.version, stopSync }
  })

// --- databases -----------------------------------------------------------------------------------------------

/** Runs `f` on a one-connection client to `url`, closed afterwards. */
export const withClient = <A>(
  url: string,
  f: (sql: SqlClient.SqlClient) => Effect.Effect<A, SqlError>
): Effect.Effect<A, PgTestError> =>
  Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(
    Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make),
    Effect.mapError((error) =>
      new PgTestError({ message: `on ${redactUrl(url)}: ${messageOf(error.cause ?? error)}`, cause: error.cause ?? error })
    )
  )

const messageOf = (cause: unknown): string =>
  Predicate.hasProperty(cause, "message") && typeof cause.message === "string" ? cause.message : String(cause)

const codeOf = (cause: unknown): unknown =>
  Predicate.hasProperty(cause, "cause") && Predicate.hasProperty(cause.cause, "code") ? cause.cause.code : undefined

/** `url` with its database replaced. */
export const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${encodeURIComponent(database)}`
  return parsed.toString()
}

/** `url` with a `search_path` every connection starts with (libpq's `options` parameter). */
export const withSearchPath = (url: string, schema: string): string => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-c search_path=${schema}`)
  return parsed.toString()
}

let counter = 0
const uniqueName = () => `artana_t${process.pid}_${++counter}_${crypto.randomBytes(3).toString("hex")}`

/** How `freshDatabase` isolates a test: its own database, or its own schema in the server's database. */
export type Isolation = "database" | "schema"

/**
 * A new, empty database on the server `url` names, dropped when the scope closes; returns its URL. With
 * `"schema"` (or when the user may not create databases) a new schema in `url`'s database instead, which every
 * connection through the returned URL has as its `search_path`.
 */
export const freshDatabase = (url: string, isolation?: Isolation): Effect.Effect<string, PgTestError, Scope.Scope> =>
  // A new name each time the effect runs, so one `freshDatabase(url)` value serves many tests.
  Effect.suspend(() => makeFresh(url, isolation))

const makeFresh = (url: string, isolation: Isolation | undefined): Effect.Effect<string, PgTestError, Scope.Scope> => {
  const name = uniqueName()
  const schema = Effect.acquireRelease(
    Effect.as(withClient(url, (sql) => sql.unsafe(`CREATE SCHEMA ${name}`)), withSearchPath(url, name)),
    () => Effect.ignore(withClient(url, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS ${name} CASCADE`)))
  )
  if (isolation === "schema") return schema
  return Effect.acquireRelease(
    Effect.as(withClient(url, (sql) => sql.unsafe(`CREATE DATABASE ${name}`)), withDatabase(url, name)),
    // WITH (FORCE) ends what a test left connected (a pool not yet closed, a killed child's session).
    () => Effect.ignore(withClient(url, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
  ).pipe(
    Effect.catchIf((error) => codeOf(error) === "42501" && isolation === undefined, () => schema)
  )
}

// --- vitest --------------------------------------------------------------------------------------------------

/** What the global setup is told by its caller (which reads the environment). */
export interface GlobalSetupOptions {
  /** A server to use instead of starting one (`ARTANA_TEST_PG_URL`); the user needs CREATEDB, or gets schemas. */
  readonly url?: string | undefined
  /** In CI a missing server fails the run instead of skipping the tests. */
  readonly ci?: boolean | undefined
  /** Where to look for PostgreSQL versions. Default `/usr/lib/postgresql`. */
  readonly binariesRoot?: string | undefined
}

const INSTALL_HINT =
  "install the PostgreSQL server (Debian: apt-get install -y postgresql), or set ARTANA_TEST_PG_URL to a server where the user may CREATE DATABASE"

/**
 * A vitest `globalSetup`: provides the server URL to the tests (`server()` reads it), starting and stopping a
 * throwaway cluster when no URL is given. Without a URL and without server binaries it fails the run when
 * `ci` is set, and otherwise lets the tests skip, saying why.
 */
export const globalSetup = (options: GlobalSetupOptions) => async (project: Pick<TestProject, "provide">): Promise<() => Promise<void>> => {
  if (options.url !== undefined && options.url !== "") {
    await Effect.runPromise(withClient(options.url, (sql) => sql.unsafe("SELECT 1")))
    project.provide("artanaPg", { url: options.url, source: "ARTANA_TEST_PG_URL" })
    return async () => {}
  }
  const binaries = findBinaries(options.binariesRoot)
  if (binaries === undefined) {
    const reason = `no PostgreSQL server binaries under ${options.binariesRoot ?? "/usr/lib/postgresql"} and no ARTANA_TEST_PG_URL`
    if (options.ci === true) throw new Error(`PostgreSQL tests cannot run in CI: ${reason}; ${INSTALL_HINT}`)
    console.warn(`[artana] skipping the PostgreSQL tests: ${reason} (${INSTALL_HINT})`)
    project.provide("artanaPg", { url: null, reason })
    return async () => {}
  }
  const scope = Effect.runSync(Scope.make())
  const cluster = await Effect.runPromise(Effect.tapErrorCause(Scope.extend(startCluster(binaries), scope), () => Scope.close(scope, Exit.void)))
  project.provide("artanaPg", { url: cluster.url, source: `a throwaway PostgreSQL ${cluster.version} cluster on port ${cluster.port}` })
  return () => Effect.runPromise(Scope.close(scope, Exit.void))
}

/** The server the global setup provided, for a test file. `url` is undefined when the tests must skip. */
export interface Server {
  readonly url: string | undefined
  /** The server, or why there is none. */
  readonly description: string
}

/**
 * The server the global setup provided, from vitest's `inject("artanaPg")` (passed in, so this module loads
 * in the global setup too, where vitest's test API does not). Throws when the global setup is not configured,
 * so a missing setup is never mistaken for a missing server.
 *
 * @example
 * import { inject } from "vitest"
 * const pg = PgTest.server(inject("artanaPg"))
 */
export const server = (provided: Provided | undefined): Server => {
  if (provided === undefined) {
    throw new Error("no PostgreSQL test server was provided: list a file exporting PgTest.globalSetup(...) in vitest's test.globalSetup")
  }
  return provided.url === null
    ? { url: undefined, description: `skipped: ${provided.reason}` }
    : { url: provided.url, description: provided.source }
}
