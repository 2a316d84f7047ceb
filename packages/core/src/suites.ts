/**
 * @artana/core/testing/suites: contract suites (vitest) that every implementation of a port runs.
 *
 * @example
 * import { EventStoreSuite } from "@artana/core/testing/suites"
 * EventStoreSuite.suite("sqlite", () => Layer.orDie(SqliteStore.layer({ filename })))
 *
 * @since 0.1.0
 */
export * as EventStoreSuite from "./EventStoreSuite.js"
export * as TaskQueueSuite from "./TaskQueueSuite.js"
export * as SqlEventStoreSuite from "./SqlEventStoreSuite.js"
export * as ForkSuite from "./ForkSuite.js"
export * as LiveStoreSuite from "./LiveStoreSuite.js"
