// The PostgreSQL server for this package's tests (vitest's globalSetup, see vitest.config.ts): ARTANA_TEST_PG_URL
// when set, otherwise a throwaway cluster started from /usr/lib/postgresql/*/bin and stopped after the run.
// Under CI=true a missing server fails the run; elsewhere the PostgreSQL tests skip, saying why.
import { Effect, Layer } from "effect"
import type { Errors } from "@artana/core"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

export default PgTest.globalSetup({ url: process.env.ARTANA_TEST_PG_URL, ci: process.env.CI === "true" })

/** A fresh database per call: `PostgresStore.layer` on it, the database dropped when the layer's scope closes. */
export const freshStore = (
  url: string,
  options: Omit<PostgresStore.Options, "url"> = {}
): Layer.Layer<PostgresStore.Services, Errors.StoreUnavailable | Errors.SchemaMismatch> =>
  Layer.unwrapScoped(Effect.map(Effect.orDie(PgTest.freshDatabase(url)), (db) => PostgresStore.layer({ ...options, url: db })))
