/**
 * @artana/core/testing: the scripted model, in-memory layers, and the contract suite every EventStore
 * implementation runs.
 *
 * @since 0.1.0
 */
export * as ScriptedModel from "./ScriptedModel.js"
export { layerMemory as eventStoreMemory } from "./EventStore.js"
export * as EventStoreSuite from "./EventStoreSuite.js"
