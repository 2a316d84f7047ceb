/**
 * The `MemoryStore` port: an agent's long-term memory, a list of short text entries per tenant and agent. The
 * memory tools (`core_memory_append`, `core_memory_replace`, `core_memory_search`) write and search it; the
 * memory section puts it at the top of the system prompt every turn. Writes take an idempotency key, so a tool
 * call re-run after a crash changes the memory once.
 *
 * Implementations: `layerMemory` (here), `SqlMemoryStore` (SQLite and Postgres, on `@effect/sql`'s `SqlClient`).
 *
 * @since 0.1.0
 */
import type { Errors } from "@artana/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { AmbiguousMemory, MemoryNotFound } from "./AgentErrors.js"

/** Whose memory: entries never cross tenants, and each agent (by its memory id, default its name) has its own. */
export interface Scope {
  readonly tenantId: string
  readonly agentId: string
}

/** One memory entry. */
export const MemoryEntry = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.String,
  agentId: Schema.String,
  content: Schema.String,
  /** Milliseconds since the epoch. */
  createdAt: Schema.Number,
  updatedAt: Schema.Number
})
export type MemoryEntry = typeof MemoryEntry.Type

/** What a replace did: the entry as it is now, and whether the replacement emptied, and so removed, it. */
export const ReplaceResult = Schema.Struct({ entry: MemoryEntry, removed: Schema.Boolean })
export type ReplaceResult = typeof ReplaceResult.Type

/** Options of a write. */
export interface WriteOptions {
  /**
   * Makes the write idempotent: a second write with the same key (per tenant) changes nothing and returns what
   * the first returned. The memory tools pass the kernel's idempotency key of their step.
   */
  readonly key?: string | undefined
}

export interface Service {
  /** Adds an entry at the end of the scope's memory. */
  readonly append: (scope: Scope, content: string, options?: WriteOptions) => Effect.Effect<MemoryEntry, Errors.StoreError>
  /**
   * Replaces every occurrence of `oldText` (exact, case-sensitive) in the one entry that contains it; an entry the
   * replacement leaves blank is removed. No entry containing it is `MemoryNotFound`, several are `AmbiguousMemory`.
   */
  readonly replace: (
    scope: Scope,
    oldText: string,
    newText: string,
    options?: WriteOptions
  ) => Effect.Effect<ReplaceResult, MemoryNotFound | AmbiguousMemory | Errors.StoreError>
  /**
   * Entries matching the query's words (case-insensitive substrings), the most words matched first, then the most
   * recently updated; an empty query gives the most recent entries. Default limit 10.
   */
  readonly search: (
    scope: Scope,
    query: string,
    options?: { readonly limit?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<MemoryEntry>, Errors.StoreError>
  /** Every entry of the scope, oldest first. */
  readonly list: (scope: Scope) => Effect.Effect<ReadonlyArray<MemoryEntry>, Errors.StoreError>
}

/** The long-term memory of agents. */
export class MemoryStore extends Context.Tag("@artana/agent/MemoryStore")<MemoryStore, Service>() {}

// --- shared by every implementation ------------------------------------------------------------------------

/** The default number of search results. */
export const DEFAULT_SEARCH_LIMIT = 10

/**
 * The words of a query, lower-cased (Unicode-aware, as JavaScript lower-cases): letters and digits, two or more
 * characters, deduplicated.
 */
export const queryTerms = (query: string): ReadonlyArray<string> => {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
  return [...new Set(words.filter((w) => w.length >= 2))]
}

/** The text a search matches against: the content lower-cased the way `queryTerms` lower-cases a query. */
export const searchText = (content: string): string => content.toLowerCase()

/**
 * Ranks candidates for a query: entries matching at least one term, by the number of terms matched, then the most
 * recently updated, then the most recently created. Every implementation ranks with this function.
 */
export const rank = (
  candidates: ReadonlyArray<{ readonly entry: MemoryEntry; readonly order: number }>,
  query: string,
  limit: number
): ReadonlyArray<MemoryEntry> => {
  const terms = queryTerms(query)
  const scored = candidates.map((c) => {
    const text = searchText(c.entry.content)
    return { ...c, score: terms.length === 0 ? 1 : terms.filter((t) => text.includes(t)).length }
  })
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || b.entry.updatedAt - a.entry.updatedAt || b.order - a.order)
    .slice(0, Math.max(0, limit))
    .map((s) => s.entry)
}

/** Replaces every occurrence of `oldText` in `content`. */
export const replaceIn = (content: string, oldText: string, newText: string): string => content.split(oldText).join(newText)

// --- in memory -------------------------------------------------------------------------------------------------

/** An in-memory store, for tests and for examples that must not touch disk. */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => {
  const entries: Array<{ entry: MemoryEntry; order: number }> = []
  const ops = new Map<string, MemoryEntry | ReplaceResult>()
  let order = 0
  const inScope = (scope: Scope) => entries.filter((e) => e.entry.tenantId === scope.tenantId && e.entry.agentId === scope.agentId)
  const opKey = (scope: Scope, key: string | undefined) => (key === undefined ? undefined : `${scope.tenantId}\u0000${key}`)

  const service: Service = {
    append: (scope, content, options = {}) =>
      Effect.gen(function*() {
        const k = opKey(scope, options.key)
        const done = k === undefined ? undefined : ops.get(k)
        if (done !== undefined && "content" in done) return done
        const now = yield* Clock.currentTimeMillis
        const entry: MemoryEntry = { id: crypto.randomUUID(), tenantId: scope.tenantId, agentId: scope.agentId, content, createdAt: now, updatedAt: now }
        entries.push({ entry, order: order++ })
        if (k !== undefined) ops.set(k, entry)
        return entry
      }),
    replace: (scope, oldText, newText, options = {}) =>
      Effect.gen(function*() {
        const k = opKey(scope, options.key)
        const done = k === undefined ? undefined : ops.get(k)
        if (done !== undefined && "removed" in done) return done
        const matches = oldText === "" ? [] : inScope(scope).filter((e) => e.entry.content.includes(oldText))
        if (matches.length === 0) return yield* new MemoryNotFound({ agentId: scope.agentId, text: oldText })
        if (matches.length > 1) return yield* new AmbiguousMemory({ agentId: scope.agentId, text: oldText, matches: matches.length })
        const target = matches[0]!
        const now = yield* Clock.currentTimeMillis
        const content = replaceIn(target.entry.content, oldText, newText)
        const entry: MemoryEntry = { ...target.entry, content, updatedAt: now }
        const removed = content.trim() === ""
        if (removed) entries.splice(entries.indexOf(target), 1)
        else target.entry = entry
        const result: ReplaceResult = { entry, removed }
        if (k !== undefined) ops.set(k, result)
        return result
      }),
    search: (scope, query, options = {}) => Effect.sync(() => rank(inScope(scope), query, options.limit ?? DEFAULT_SEARCH_LIMIT)),
    list: (scope) => Effect.sync(() => inScope(scope).map((e) => e.entry))
  }
  return service
})

/** In-memory `MemoryStore` layer. */
export const layerMemory: Layer.Layer<MemoryStore> = Layer.effect(MemoryStore, makeMemory)
