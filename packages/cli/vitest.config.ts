// The shared config, plus the global setups: the PostgreSQL server for the Postgres tests, the `artana` to start.
import { fileURLToPath } from "node:url"
import { defineConfig, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

export default mergeConfig(shared, defineConfig({
  resolve: {
    // Also in the root vitest.shared.ts; harmless twice.
    alias: [{ find: /^@artana\/cli$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) }]
  },
  test: {
    // The PostgreSQL server, and the `artana` the tests start (one file built from the sources: artanaBin.ts).
    globalSetup: ["./test/pg.ts", "./test/artanaBin.ts"],
    // The tests start real `artana` processes one after another, each bounded by its own 90 s timeout (helpers.ts);
    // a busy machine makes each start slower, never wrong. So a test is not bounded by a wall clock of its own.
    testTimeout: 600_000
  }
}))
