/**
 * @artana/store-postgres: every Artana store service on one PostgreSQL database, shared by many workers.
 *
 * @since 0.1.0
 */
export * as PostgresStore from "./PostgresStore.js"
