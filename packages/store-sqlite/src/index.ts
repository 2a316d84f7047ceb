/**
 * @artana/store-sqlite: every Artana store service on one SQLite file (WAL, synchronous=FULL).
 *
 * @since 0.1.0
 */
export * as SqliteStore from "./SqliteStore.js"
