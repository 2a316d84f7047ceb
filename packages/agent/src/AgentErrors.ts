/**
 * The errors of `@artana/agent`, on top of core's. Each is a `Schema.TaggedError` with a message a person (or,
 * for the memory and skill errors, which reach the model as tool failures, the model) can act on.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** `core_memory_replace` named text that no memory entry of the agent contains. */
export class MemoryNotFound extends Schema.TaggedError<MemoryNotFound>()("MemoryNotFound", {
  agentId: Schema.String,
  text: Schema.String
}) {
  override get message() {
    return `no memory of agent "${this.agentId}" contains "${this.text}"; quote the text to replace exactly as the memory shows it (core_memory_search finds it)`
  }
}

/** `core_memory_replace` named text that several memory entries contain: which one to change is unclear. */
export class AmbiguousMemory extends Schema.TaggedError<AmbiguousMemory>()("AmbiguousMemory", {
  agentId: Schema.String,
  text: Schema.String,
  matches: Schema.Number
}) {
  override get message() {
    return `"${this.text}" appears in ${this.matches} memories of agent "${this.agentId}"; quote more of the one to change so that it is unique`
  }
}

/** A memory write would take the agent's core memory past its size limit. */
export class MemoryFull extends Schema.TaggedError<MemoryFull>()("MemoryFull", {
  agentId: Schema.String,
  usedChars: Schema.Number,
  limitChars: Schema.Number,
  addingChars: Schema.Number
}) {
  override get message() {
    return `core memory of agent "${this.agentId}" holds ${this.usedChars} of ${this.limitChars} characters and cannot take ${this.addingChars} more; ` +
      `condense or remove entries with core_memory_replace (replacing text with "" removes an entry emptied by it)`
  }
}

/** `load_skill` named a skill the agent does not have. */
export class UnknownSkill extends Schema.TaggedError<UnknownSkill>()("UnknownSkill", {
  skill: Schema.String,
  available: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no skill named "${this.skill}"; skills: ${this.available.join(", ") || "(none)"}`
  }
}

/** The prompt cannot be brought under the context bound, even after compacting everything that may be compacted. */
export class ContextOverflow extends Schema.TaggedError<ContextOverflow>()("ContextOverflow", {
  runId: Schema.String,
  boundTokens: Schema.Number,
  promptTokens: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `run ${this.runId}: the prompt takes ${this.promptTokens} tokens, over the bound of ${this.boundTokens}, after compaction: ${this.reason}. ` +
      `Raise the compaction bound (contextWindow, triggerAtTokenRatio), shorten the instructions and sections, or make tools return less`
  }
}

/** An agent extension (an `onFinish` hook) failed; the run fails with it. */
export class ExtensionError extends Schema.TaggedError<ExtensionError>()("ExtensionError", {
  extension: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `agent extension "${this.extension}" failed: ${this.reason}`
  }
}

/**
 * A sub-agent's run did not complete (it failed, or paused); the parent's tool call fails with it. A child in doubt
 * is not a failure: the parent waits with it (`Errors.WaitingOnRun`).
 */
export class SubAgentFailed extends Schema.TaggedError<SubAgentFailed>()("SubAgentFailed", {
  tool: Schema.String,
  childRunId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `sub-agent "${this.tool}" (run ${this.childRunId}) did not complete: ${this.reason}`
  }
}

/**
 * An agent's workflow ran where a service it reads is missing: the kernel, the model or the `MemoryStore` are read
 * from the kernel's services when the run starts.
 */
export class ServiceMissing extends Schema.TaggedError<ServiceMissing>()("ServiceMissing", {
  agent: Schema.String,
  service: Schema.String
}) {
  override get message() {
    return `agent "${this.agent}" runs with the kernel's services, which lack ${this.service}: build the runtime with ` +
      `AgentClient.create, or give it to the kernel (Artana.layer({ ..., services: [MemoryStore.layerMemory] }))`
  }
}

/** Every error of @artana/agent. */
export type AgentError =
  | MemoryNotFound
  | AmbiguousMemory
  | MemoryFull
  | UnknownSkill
  | ContextOverflow
  | ExtensionError
  | SubAgentFailed
  | ServiceMissing

const tags = new Set<string>([
  "MemoryNotFound",
  "AmbiguousMemory",
  "MemoryFull",
  "UnknownSkill",
  "ContextOverflow",
  "ExtensionError",
  "SubAgentFailed",
  "ServiceMissing"
])

/** True for any error of @artana/agent. */
export const isAgentError = (u: unknown): u is AgentError =>
  Predicate.hasProperty(u, "_tag") && typeof u._tag === "string" && tags.has(u._tag)
