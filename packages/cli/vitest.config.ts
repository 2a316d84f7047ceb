// The shared config, plus the global setup that finds or starts the PostgreSQL server for the Postgres test.
import { fileURLToPath } from "node:url"
import { defineConfig, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

export default mergeConfig(shared, defineConfig({
  resolve: {
    // Also in the root vitest.shared.ts; harmless twice.
    alias: [{ find: /^@artana\/cli$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) }]
  },
  test: { globalSetup: ["./test/pg.ts"] }
}))
