/**
 * The SQLite driver the store runs on: one per Node.js, and one native build per install.
 *
 * - Node.js 24 and later: Node's built-in `node:sqlite` (`DatabaseSync`). No native module to build, no
 *   experimental warning there, and `serialize`/`deserialize` for the read-only image. better-sqlite3 12 must not
 *   run there: it wraps its objects in Node's raw `ObjectWrap`, whose destructor on Node.js 24 removes an
 *   environment cleanup hook, so a statement the GC collects outside a V8 context aborts the process
 *   (`Assertion failed: (env) != nullptr` in `RemoveEnvironmentCleanupHook`, from `Statement::~Statement`).
 * - Node.js 20 and 22: better-sqlite3 12, the one `@effect/sql-sqlite-node` depends on (Node 22's `node:sqlite` still
 *   prints an experimental warning and has no `deserialize`; Node 20 has none).
 *
 * Both are seen through `Database`, the part of better-sqlite3's API the store, its tests and benchmarks use;
 * better-sqlite3 12's `Database` is one as it is, `node:sqlite`'s is adapted below, with its errors given
 * better-sqlite3's `code` (`SQLITE_CONSTRAINT_PRIMARYKEY`, `SQLITE_BUSY`, ...), which the stores read.
 */
import type BetterSqlite3 from "better-sqlite3"
import { createRequire } from "node:module"

/** A prepared statement: the part of better-sqlite3's `Statement` the store uses. */
export interface Statement {
  /** Whether the statement returns rows. */
  readonly reader: boolean
  /** Read integers as bigints. */
  safeIntegers(toggle: boolean): unknown
  /** Return rows as arrays of values instead of objects. */
  raw(toggle: boolean): unknown
  /** The result's columns. */
  columns(): Array<{ readonly name: string }>
  all(...params: Array<unknown>): Array<unknown>
  get(...params: Array<unknown>): unknown
  run(...params: Array<unknown>): RunResult
}

/** What a statement that writes reports. */
export interface RunResult {
  readonly changes: number
  readonly lastInsertRowid: number | bigint
}

/** A connection: the part of better-sqlite3's `Database` the store, its tests and benchmarks use. */
export interface Database {
  prepare(sql: string): Statement
  exec(sql: string): unknown
  /** `PRAGMA source`: every row, or with `simple` the first column of the first row. */
  pragma(source: string, options?: { readonly simple?: boolean }): unknown
  serialize(): Uint8Array
  backup(destination: string): Promise<unknown>
  loadExtension(path: string): unknown
  close(): unknown
}

/** Opens a database file, or (a `Buffer`) an in-memory database holding that image of a file. */
export interface Driver {
  new(filename: string | Buffer, options?: { readonly readonly?: boolean }): Database
}

/** Which driver this Node.js runs. */
export type DriverName = "node:sqlite" | "better-sqlite3"

const NODE_SQLITE_FROM = 24

/** `node:sqlite` on Node.js 24 and later, better-sqlite3 12 before. */
export const driverName: DriverName = Number(process.versions.node.split(".")[0]) >= NODE_SQLITE_FROM ? "node:sqlite" : "better-sqlite3"

// node:sqlite, as far as it is used here (Node's own types for it need @types/node 22+).
interface NodeStatement {
  columns(): Array<{ readonly name: string }>
  setReadBigInts(toggle: boolean): void
  setReturnArrays(toggle: boolean): void
  all(...params: Array<unknown>): Array<unknown>
  get(...params: Array<unknown>): unknown
  run(...params: Array<unknown>): { readonly changes: number | bigint; readonly lastInsertRowid: number | bigint }
}
interface NodeDatabase {
  prepare(sql: string): NodeStatement
  exec(sql: string): void
  serialize(): Uint8Array
  deserialize(image: Uint8Array): void
  enableLoadExtension(allow: boolean): void
  loadExtension(path: string): void
  close(): void
}
interface NodeSqlite {
  DatabaseSync: new(location: string, options: { readonly readOnly: boolean; readonly allowExtension: boolean }) => NodeDatabase
  backup(source: NodeDatabase, destination: string): Promise<number>
}

const isNodeSqlite = (module: unknown): module is NodeSqlite =>
  typeof module === "object" && module !== null && "DatabaseSync" in module && typeof module.DatabaseSync === "function" &&
  "backup" in module && typeof module.backup === "function"

// SQLite's result codes by number (sqlite3.h), as better-sqlite3 names them in an error's `code`.
const PRIMARY = [
  "OK", "ERROR", "INTERNAL", "PERM", "ABORT", "BUSY", "LOCKED", "NOMEM", "READONLY", "INTERRUPT", "IOERR", "CORRUPT",
  "NOTFOUND", "FULL", "CANTOPEN", "PROTOCOL", "EMPTY", "SCHEMA", "TOOBIG", "CONSTRAINT", "MISMATCH", "MISUSE", "NOLFS",
  "AUTH", "FORMAT", "RANGE", "NOTADB", "NOTICE", "WARNING"
]
const EXTENDED: Record<number, string> = {
  257: "ERROR_MISSING_COLLSEQ", 513: "ERROR_RETRY", 769: "ERROR_SNAPSHOT",
  261: "BUSY_RECOVERY", 517: "BUSY_SNAPSHOT", 773: "BUSY_TIMEOUT",
  262: "LOCKED_SHAREDCACHE", 518: "LOCKED_VTAB",
  264: "READONLY_RECOVERY", 520: "READONLY_CANTLOCK", 776: "READONLY_ROLLBACK", 1032: "READONLY_DBMOVED",
  1288: "READONLY_CANTINIT", 1544: "READONLY_DIRECTORY",
  267: "CORRUPT_VTAB", 523: "CORRUPT_SEQUENCE", 779: "CORRUPT_INDEX",
  270: "CANTOPEN_NOTEMPDIR", 526: "CANTOPEN_ISDIR", 782: "CANTOPEN_FULLPATH", 1038: "CANTOPEN_CONVPATH",
  1294: "CANTOPEN_DIRTYWAL", 1550: "CANTOPEN_SYMLINK",
  516: "ABORT_ROLLBACK",
  275: "CONSTRAINT_CHECK", 531: "CONSTRAINT_COMMITHOOK", 787: "CONSTRAINT_FOREIGNKEY", 1043: "CONSTRAINT_FUNCTION",
  1299: "CONSTRAINT_NOTNULL", 1555: "CONSTRAINT_PRIMARYKEY", 1811: "CONSTRAINT_TRIGGER", 2067: "CONSTRAINT_UNIQUE",
  2323: "CONSTRAINT_VTAB", 2579: "CONSTRAINT_ROWID", 2835: "CONSTRAINT_PINNED", 3091: "CONSTRAINT_DATATYPE"
}

/** `SQLITE_...` for a SQLite result code; I/O errors keep their primary name (`SQLITE_IOERR`), as the store reads them. */
export const codeName = (errcode: number): string =>
  `SQLITE_${EXTENDED[errcode] ?? PRIMARY[errcode & 0xff] ?? "ERROR"}`

/** A node:sqlite error as better-sqlite3 throws it: `code` is the SQLite result code's name. */
const translated = (cause: unknown): unknown => {
  if (typeof cause !== "object" || cause === null || !("errcode" in cause) || typeof cause.errcode !== "number") return cause
  const message = cause instanceof Error ? cause.message : String(cause)
  return Object.assign(new Error(message, { cause }), { code: codeName(cause.errcode) })
}

const sqliteCall = <A>(f: () => A): A => {
  try {
    return f()
  } catch (cause) {
    throw translated(cause)
  }
}

/** An integer beyond 2^53 without `safeIntegers`: better-sqlite3 returns a lossy number, node:sqlite throws. */
const isOutOfRange = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ERR_OUT_OF_RANGE"

/** A row read with bigints, as better-sqlite3 returns it without `safeIntegers`: every bigint a (lossy) number. */
const toNumbers = (row: unknown): unknown => {
  if (Array.isArray(row)) return row.map((value: unknown) => (typeof value === "bigint" ? Number(value) : value))
  if (typeof row !== "object" || row === null) return row
  return Object.fromEntries(Object.entries(row).map(([key, value]: [string, unknown]) => [key, typeof value === "bigint" ? Number(value) : value]))
}

class NodeSqliteStatement implements Statement {
  #reader: boolean | undefined
  #bigints = false
  constructor(private readonly statement: NodeStatement, private readonly sql: string) {}
  get reader(): boolean {
    this.#reader ??= this.statement.columns().length > 0
    return this.#reader
  }
  safeIntegers(toggle: boolean) {
    this.statement.setReadBigInts(toggle)
    this.#bigints = toggle
    return this
  }
  raw(toggle: boolean) {
    this.statement.setReturnArrays(toggle)
    return this
  }
  columns() {
    return this.statement.columns().map(({ name }) => ({ name }))
  }
  /**
   * Reads rows as better-sqlite3 would: a read that met an integer beyond 2^53 without `safeIntegers` is read again
   * with bigints, which become lossy numbers. Not a statement that writes (`RETURNING`): reading it again would
   * write again, so there the error stands.
   */
  private read<A>(f: () => A, convert: (a: A) => A): A {
    try {
      return sqliteCall(f)
    } catch (cause) {
      if (!isOutOfRange(cause) || this.#bigints || /\bRETURNING\b/i.test(this.sql)) throw cause
      this.statement.setReadBigInts(true)
      try {
        return convert(sqliteCall(f))
      } finally {
        this.statement.setReadBigInts(false)
      }
    }
  }
  all(...params: Array<unknown>) {
    return this.read(() => this.statement.all(...params), (rows) => rows.map(toNumbers))
  }
  get(...params: Array<unknown>) {
    return this.read(() => this.statement.get(...params), toNumbers)
  }
  run(...params: Array<unknown>): RunResult {
    const result = sqliteCall(() => this.statement.run(...params))
    return { changes: Number(result.changes), lastInsertRowid: result.lastInsertRowid }
  }
}

const nodeSqliteDriver = (sqlite: NodeSqlite): Driver =>
  class NodeSqliteDatabase implements Database {
    private readonly db: NodeDatabase
    constructor(filename: string | Buffer, options?: { readonly readonly?: boolean }) {
      const readOnly = options?.readonly ?? false
      this.db = sqliteCall(() => {
        if (typeof filename === "string") return new sqlite.DatabaseSync(filename, { readOnly, allowExtension: true })
        const db = new sqlite.DatabaseSync(":memory:", { readOnly: false, allowExtension: true })
        db.deserialize(filename)
        return db
      })
    }
    prepare(sql: string) {
      return new NodeSqliteStatement(sqliteCall(() => this.db.prepare(sql)), sql)
    }
    exec(sql: string) {
      sqliteCall(() => this.db.exec(sql))
      return this
    }
    pragma(source: string, options?: { readonly simple?: boolean }) {
      const rows = this.prepare(`PRAGMA ${source}`)
      if (options?.simple !== true) return rows.all()
      const first = rows.raw(true).get()
      return Array.isArray(first) ? first[0] : undefined
    }
    serialize() {
      return sqliteCall(() => this.db.serialize())
    }
    backup(destination: string) {
      return sqlite.backup(this.db, destination).catch((cause: unknown) => Promise.reject(translated(cause)))
    }
    loadExtension(path: string) {
      sqliteCall(() => {
        this.db.enableLoadExtension(true)
        try {
          this.db.loadExtension(path)
        } finally {
          this.db.enableLoadExtension(false)
        }
      })
      return this
    }
    close() {
      this.db.close()
      return this
    }
  }

let loaded: Driver | undefined
/** The `Database` class of this Node.js's driver, loaded on first use. */
export const driver = (): Driver => {
  if (loaded !== undefined) return loaded
  if (driverName === "node:sqlite") {
    const module: unknown = process.getBuiltinModule("node:sqlite")
    if (!isNodeSqlite(module)) throw new Error(`node:sqlite is missing on Node.js ${process.versions.node}`)
    loaded = nodeSqliteDriver(module)
  } else {
    const better: typeof BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3")
    loaded = better
  }
  return loaded
}
