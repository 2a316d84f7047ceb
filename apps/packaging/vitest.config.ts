// No aliases to the sources here (unlike vitest.shared.ts): this suite uses nothing but the packed tarballs.
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 120_000,
    // The shared fixture packs every package and installs the tarballs once, from the registry: minutes, not seconds.
    hookTimeout: 600_000
  }
})
