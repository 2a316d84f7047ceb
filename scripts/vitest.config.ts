// The repo scripts' own tests: `vitest run --config scripts/vitest.config.ts` (root `pnpm architecture`).
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  test: { include: ["test/**/*.test.ts"] }
})
