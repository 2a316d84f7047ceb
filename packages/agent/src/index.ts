/**
 * @artana/agent: autonomous agents on the durable kernel — the agent loop, its context builder, compaction,
 * long-term memory, progressive skills and sub-agents.
 *
 * @since 0.1.0
 */
export * as AgentClient from "./AgentClient.js"
export * as AgentErrors from "./AgentErrors.js"
export * as AutonomousAgent from "./AutonomousAgent.js"
export * as CompactionStrategy from "./CompactionStrategy.js"
export * as ContextBuilder from "./ContextBuilder.js"
export * as Extension from "./Extension.js"
export * as Memory from "./Memory.js"
export * as MemoryStore from "./MemoryStore.js"
export * as Skills from "./Skills.js"
export * as SqlMemoryStore from "./SqlMemoryStore.js"
export * as SubAgent from "./SubAgent.js"
