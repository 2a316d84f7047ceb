/**
 * @artana/store-postgres/testing: a real PostgreSQL server for tests, and one fresh database per test.
 *
 * A vitest `globalSetup` (`globalSetup(options)`) finds a server once per test run: the URL it is given
 * (`ARTANA_TEST_PG_URL`, read by the caller), or a throwaway cluster it starts from the PostgreSQL binaries
 * under `/usr/lib/postgresql/<version>/bin` (Debian's `postgresql` package) and stops afterwards. Tests read it
 * with `server()` and give every test its own database with `freshDatabase(url)`.
 *
 * @example
 * // test/pg.ts, listed in vitest's `test.globalSetup`
 * import { PgTest } from "@artana/store-postgres/testing"
 * export default PgTest.globalSetup({ url: process.env.ARTANA_TEST_PG_URL, ci: process.env.CI === "true" })
 *
 * // a test file
 * const pg = PgTest.server(inject("artanaPg"))
 * describe.skipIf(pg.url === undefined)("on PostgreSQL", () => {
 *   const layer = () => Layer.unwrapScoped(Effect.map(PgTest.freshDatabase(pg.url!), (url) => PostgresStore.layer({ url })))
 * })
 *
 * @since 0.1.0
 */
export * as PgTest from "./PgTest.js"
