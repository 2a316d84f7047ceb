// The shared config, plus the global setup that finds or starts the PostgreSQL server for the whole run.
import { fileURLToPath } from "node:url"
import { defineConfig, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

const src = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url))

export default mergeConfig(shared, defineConfig({
  resolve: {
    // Also in the root vitest.shared.ts once other packages test against this one; harmless twice.
    alias: [
      { find: /^@artana\/store-postgres\/testing$/, replacement: src("testing.ts") },
      { find: /^@artana\/store-postgres$/, replacement: src("index.ts") }
    ]
  },
  // Every test makes a database of its own and opens pools on it: at load 30 a contract test took 12 s of the default
  // 30 s; slow on a busy machine, not wrong.
  test: { globalSetup: ["./test/pg.ts"], testTimeout: 120_000 }
}))
