// Tests resolve @artana/* to their TypeScript sources, so a package's suite never runs against a stale build.
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = (pkg: string, file = "index.ts") => fileURLToPath(new URL(`./packages/${pkg}/src/${file}`, import.meta.url))

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@artana\/core\/testing$/, replacement: src("core", "testing.ts") },
      { find: /^@artana\/core\/testing\/suites$/, replacement: src("core", "suites.ts") },
      { find: /^@artana\/core$/, replacement: src("core") },
      { find: /^@artana\/store-sqlite$/, replacement: src("store-sqlite") },
      { find: /^@artana\/store-postgres\/testing$/, replacement: src("store-postgres", "testing.ts") },
      { find: /^@artana\/store-postgres$/, replacement: src("store-postgres") },
      { find: /^@artana\/worker$/, replacement: src("worker") },
      { find: /^@artana\/sandbox$/, replacement: src("sandbox") },
      { find: /^@artana\/plugin-sdk\/testing$/, replacement: src("plugin-sdk", "testing.ts") },
      { find: /^@artana\/plugin-sdk$/, replacement: src("plugin-sdk") },
      { find: /^@artana\/cli$/, replacement: src("cli") },
      { find: /^@artana\/agent\/testing$/, replacement: src("agent", "testing.ts") },
      { find: /^@artana\/agent$/, replacement: src("agent") },
      { find: /^@artana\/experience\/testing$/, replacement: src("experience", "testing.ts") },
      { find: /^@artana\/experience$/, replacement: src("experience") },
      { find: /^@artana\/middleware$/, replacement: src("middleware") },
      { find: /^@artana\/model-openai\/testing$/, replacement: src("model-openai", "testing.ts") },
      { find: /^@artana\/model-openai$/, replacement: src("model-openai") },
      { find: /^@artana\/model-anthropic\/testing$/, replacement: src("model-anthropic", "testing.ts") },
      { find: /^@artana\/model-anthropic$/, replacement: src("model-anthropic") },
      { find: /^@artana\/sandbox\/Audit$/, replacement: src("sandbox", "Audit.ts") },
      { find: /^@artana\/mcp$/, replacement: src("mcp") },
      { find: /^@artana\/otel\/testing$/, replacement: src("otel", "testing.ts") },
      { find: /^@artana\/otel$/, replacement: src("otel") }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
