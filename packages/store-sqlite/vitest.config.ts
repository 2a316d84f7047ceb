// The shared config, with a longer test timeout: the store's tests write real files (synchronous=FULL) and start
// child processes; slow on a busy machine, not wrong.
import { defineConfig, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

export default mergeConfig(shared, defineConfig({ test: { testTimeout: 120_000 } }))
