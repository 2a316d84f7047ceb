// The PostgreSQL server for the CLI's Postgres test (vitest's globalSetup): ARTANA_TEST_PG_URL when set, otherwise
// a throwaway cluster. Under CI=true a missing server fails the run.
import { PgTest } from "@artana/store-postgres/testing"

export default PgTest.globalSetup({ url: process.env.ARTANA_TEST_PG_URL, ci: process.env.CI === "true" })
