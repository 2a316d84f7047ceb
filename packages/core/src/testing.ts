/**
 * @artana/core/testing: the scripted model and in-memory layers, for tests and offline examples. The contract
 * suites every store implementation runs are in `@artana/core/testing/suites` (they import vitest).
 *
 * @since 0.1.0
 */
export * as FakeProvider from "./FakeProvider.js"
export * as ScriptedModel from "./ScriptedModel.js"
export { layerMemory as eventStoreMemory } from "./EventStore.js"
export * as TestLog from "./TestLog.js"
export * as TestWorkflows from "./TestWorkflows.js"
export * as TenantIsolation from "./TenantIsolation.js"
