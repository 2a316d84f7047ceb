/**
 * An agent's long-term memory, as the model uses it: the tools `core_memory_append`, `core_memory_replace` and
 * `core_memory_search` over the `MemoryStore`, scoped by the run's tenant and the agent's memory id, and the
 * `[CORE MEMORY]` section at the top of the system prompt, rendered before every model step. Memory outlives
 * compaction, and the run: a fact written on turn 5 is in the prompt on turn 500, and in the next run's.
 *
 * The tools are idempotent (each write carries the kernel's idempotency key of its step), so a call re-run after a
 * crash writes once. The section reads the store in a memoized step, so a replay renders what the run rendered.
 *
 * @since 0.1.0
 */
import { Tool } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { MemoryFull } from "./AgentErrors.js"
import * as ContextBuilder from "./ContextBuilder.js"
import type { MemoryEntry, Service } from "./MemoryStore.js"

/** Memory options of an agent. */
export interface Options {
  /** Whose memory: default the agent's name. Agents that share an id share their memory (within a tenant). */
  readonly agentId?: string | undefined
  /**
   * Most characters the core memory holds (what the section shows). An append past it fails with `MemoryFull`,
   * telling the model to condense with `core_memory_replace`. Default 4,000.
   */
  readonly limitChars?: number | undefined
  /** Results `core_memory_search` returns at most. Default 10. */
  readonly searchLimit?: number | undefined
}

export const APPEND = "core_memory_append"
export const REPLACE = "core_memory_replace"
export const SEARCH = "core_memory_search"

/** The memory section's name (its step keys are `turn:<n>/section:core_memory`). */
export const SECTION = "core_memory"

/** The heading of the memory section. */
export const HEADING = "[CORE MEMORY]"

const DEFAULT_LIMIT = 4_000

/** The characters the entries take. */
export const usedChars = (entries: ReadonlyArray<MemoryEntry>): number => entries.reduce((n, e) => n + e.content.length, 0)

/** The memory section's text. */
export const render = (entries: ReadonlyArray<MemoryEntry>, limitChars: number): string =>
  [
    `${HEADING} (${usedChars(entries)}/${limitChars} characters; facts you saved with ${APPEND}, kept across turns and runs)`,
    ...(entries.length === 0 ? ["(empty)"] : entries.map((e) => `- ${e.content.replace(/\s+/g, " ").trim()}`))
  ].join("\n")

const EntryView = Schema.Struct({ id: Schema.String, content: Schema.String })
const view = (e: MemoryEntry) => ({ id: e.id, content: e.content })

/**
 * The three memory tools for `agentId`, over `store`.
 */
export const tools = (store: Service, agentId: string, options: Options = {}): ReadonlyArray<Tool.Tool> => {
  const limitChars = options.limitChars ?? DEFAULT_LIMIT
  const scopeOf = (tenantId: string) => ({ tenantId, agentId })
  const append = Tool.make({
    name: APPEND,
    description: "Saves a fact to your core memory, which is shown at the top of your instructions on every turn and in later runs. " +
      "Save what you must not forget: user preferences, key figures, decisions.",
    parameters: Schema.Struct({ content: Schema.NonEmptyTrimmedString.annotations({ description: "The fact, one short sentence" }) }),
    success: Schema.Struct({ id: Schema.String, content: Schema.String, usedChars: Schema.Number, limitChars: Schema.Number }),
    idempotent: true,
    handler: ({ content }, ctx) =>
      Effect.gen(function*() {
        const scope = scopeOf(ctx.tenant.tenantId)
        const used = usedChars(yield* store.list(scope))
        if (used + content.length > limitChars) {
          return yield* new MemoryFull({ agentId, usedChars: used, limitChars, addingChars: content.length })
        }
        const entry = yield* store.append(scope, content, { key: ctx.idempotencyKey })
        return { ...view(entry), usedChars: used + content.length, limitChars }
      })
  })
  const replace = Tool.make({
    name: REPLACE,
    description: "Replaces text in the one core-memory entry that contains it (quote it exactly). " +
      "Replacing with an empty string removes the text, and the entry when nothing is left.",
    parameters: Schema.Struct({
      old_content: Schema.NonEmptyString.annotations({ description: "Text of one entry, exactly as shown" }),
      new_content: Schema.String.annotations({ description: "The replacement; empty to delete" })
    }),
    success: Schema.Struct({ id: Schema.String, content: Schema.String, removed: Schema.Boolean }),
    idempotent: true,
    handler: ({ new_content, old_content }, ctx) =>
      Effect.map(
        store.replace(scopeOf(ctx.tenant.tenantId), old_content, new_content, { key: ctx.idempotencyKey }),
        (r) => ({ ...view(r.entry), removed: r.removed })
      )
  })
  const search = Tool.make({
    name: SEARCH,
    description: "Searches your core memory by words; the entries matching the most words come first.",
    parameters: Schema.Struct({
      query: Schema.String,
      limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 50)))
    }),
    success: Schema.Struct({ results: Schema.Array(EntryView) }),
    idempotent: true,
    handler: ({ limit, query }, ctx) =>
      Effect.map(
        store.search(scopeOf(ctx.tenant.tenantId), query, { limit: limit ?? options.searchLimit ?? 10 }),
        (entries) => ({ results: entries.map(view) })
      )
  })
  return [append, replace, search]
}

/**
 * The `[CORE MEMORY]` section for `agentId`: at the top of the system prompt, read from `store` before every model
 * step through a memoized step (logged only when the memory changed since the previous step).
 */
export const section = (store: Service, agentId: string, options: Options = {}): ContextBuilder.ContextSection =>
  ContextBuilder.memoized({
    name: SECTION,
    placement: "top",
    load: ({ ctx }) => Effect.map(store.list({ tenantId: ctx.tenant.tenantId, agentId }), (entries) => render(entries, options.limitChars ?? DEFAULT_LIMIT))
  })
