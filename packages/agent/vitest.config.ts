// The shared config, plus the global setup that finds or starts the PostgreSQL server for the memory store suite.
import { defineConfig, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

export default mergeConfig(shared, defineConfig({ test: { globalSetup: ["./test/pg.ts"] } }))
