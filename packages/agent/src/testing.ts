/**
 * @artana/agent/testing: the contract suite every `MemoryStore` implementation runs (it imports vitest).
 *
 * @since 0.1.0
 */
export * as MemoryStoreSuite from "./MemoryStoreSuite.js"
