// The shared config, with a longer test timeout: the stdio tests start real MCP server processes (a TypeScript
// loader's cold start each, over a minute at load 30), slow on a busy machine but not wrong.
import { defineConfig, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

export default mergeConfig(shared, defineConfig({ test: { testTimeout: 300_000 } }))
