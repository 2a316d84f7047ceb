/**
 * @artana/agent: autonomous agents on the durable kernel — the agent loop, its context builder, compaction,
 * long-term memory, progressive skills and sub-agents.
 *
 * @since 0.1.0
 */
export * as AgentErrors from "./AgentErrors.js"
export * as MemoryStore from "./MemoryStore.js"
export * as SqlMemoryStore from "./SqlMemoryStore.js"
