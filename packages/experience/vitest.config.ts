// The shared config, plus the global setup that finds or starts the PostgreSQL server for the Postgres suite.
import { fileURLToPath } from "node:url"
import { defineConfig, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

const src = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url))

export default mergeConfig(shared, defineConfig({
  resolve: {
    alias: [
      { find: /^@artana\/experience\/testing$/, replacement: src("testing.ts") },
      { find: /^@artana\/experience$/, replacement: src("index.ts") }
    ]
  },
  test: { globalSetup: ["./test/pg.ts"] }
}))
