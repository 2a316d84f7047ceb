/**
 * The agent's workflow as data: its input (with what a run it continues hands over), its output, its name, the
 * steering signal, and the services a run uses.
 */
import { Chat } from "@artana/core"
import type { Kernel, ModelPort } from "@artana/core"
import * as Schema from "effect/Schema"
import type * as MemoryStore from "../MemoryStore.js"

/** The services a run uses, read when it starts. */
export interface Env {
  readonly kernel: Kernel.Service
  readonly model: ModelPort.Service
  readonly memory: MemoryStore.Service
}

/**
 * What a run hands over when it continues as new (`continueAsNewAfterEvents`): the compacted context (summary and
 * the recent history), what the sections rendered last, the skills' working set, and the counts and spend so far.
 */
export const Carried = Schema.Struct({
  summary: Schema.optional(Schema.String),
  history: Schema.Array(Chat.ChatMessage),
  sections: Schema.Array(Schema.Tuple(Schema.String, Schema.String)),
  loadedSkills: Schema.Array(Schema.String),
  unloadedSkills: Schema.Array(Schema.String),
  /** The adaptive working set's size (a fixed one comes from the options). */
  maxLoaded: Schema.optional(Schema.Number),
  turns: Schema.Number,
  compactions: Schema.Number,
  usage: Chat.Usage,
  costUsd: Schema.Number
})
export type Carried = typeof Carried.Type

export const Input = Schema.Struct({ prompt: Schema.String, model: Schema.String, carried: Schema.optional(Carried) })
export type Input = typeof Input.Type

/** The signal name an agent with `steering` takes as a user message between turns. */
export const STEERING_SIGNAL = "artana.steer"

export const SteeringMessage = Schema.Struct({ text: Schema.String })

/** Events a run's log may hold before the agent continues as new after a compaction (`continueAsNewAfterEvents`). */
export const DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = 10_000

export const outputSchemaOf = <A, I>(output: Schema.Schema<A, I>) =>
  Schema.Struct({ output, turns: Schema.Number, compactions: Schema.Number, usage: Chat.Usage, costUsd: Schema.Number })

export const workflowName = (name: string): string => `agent:${name}`
