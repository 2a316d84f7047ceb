/**
 * The `ExperienceStore` port: learned rules per tenant and task category. Saving a rule that says the same as an
 * existing one (same normalized content, tenant and category) reinforces that rule instead of adding another.
 * Every operation is scoped by tenant: no id lets one tenant read, reinforce or overwrite another's rules.
 *
 * @since 0.1.0
 */
import type { Errors } from "@artana/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { type ExperienceRule, type NewRule, normalize, rank } from "./ExperienceRule.js"
import { invalidRule, ruleIdOf } from "./internal/rules.js"

/** A rule the store refuses before writing anything. */
export class InvalidRule extends Schema.TaggedError<InvalidRule>()("InvalidRule", { reason: Schema.String }) {
  override get message() {
    return `invalid experience rule: ${this.reason}`
  }
}

/** No rule with this id for this tenant (another tenant's rule is not found either). */
export class RuleNotFound extends Schema.TaggedError<RuleNotFound>()("RuleNotFound", {
  tenantId: Schema.String,
  ruleId: Schema.String
}) {
  override get message() {
    return `experience rule ${this.ruleId} not found for tenant ${this.tenantId}`
  }
}

export type ExperienceStoreError = InvalidRule | RuleNotFound | Errors.StoreError

/** Options of the writes. */
export interface WriteOptions {
  /**
   * Makes the write happen once: a second write with the same key (per tenant) changes nothing and returns the
   * rules as they are. Pass a key that is stable across re-runs of one step (`<runId>/<step>`), so a crash
   * between the write and its step's record in the log does not count a rule twice.
   */
  readonly idempotencyKey?: string | undefined
}

export interface Service {
  /**
   * Saves rules: a new one is stored with no successes and no failures; one that says the same as a stored rule
   * (normalized content, per tenant and category) reinforces that rule positively instead. Returns the stored
   * rules, in the order given.
   */
  readonly saveRules: (rules: ReadonlyArray<NewRule>, options?: WriteOptions) => Effect.Effect<ReadonlyArray<ExperienceRule>, InvalidRule | Errors.StoreError>
  /** The tenant's rules for the category, those that helped most first (see `ExperienceRule.rank`). */
  readonly getRules: (tenantId: string, taskCategory: string, limit?: number) => Effect.Effect<ReadonlyArray<ExperienceRule>, Errors.StoreError>
  /** Counts one run the rule helped (`positive`) or was in and failed. */
  readonly reinforce: (
    tenantId: string,
    ruleId: string,
    positive: boolean,
    options?: WriteOptions
  ) => Effect.Effect<ExperienceRule, RuleNotFound | Errors.StoreError>
}

/** The learned-rules store. */
export class ExperienceStore extends Context.Tag("@artana/experience/ExperienceStore")<ExperienceStore, Service>() {}

/** The default number of rules `getRules` returns. */
export const DEFAULT_LIMIT = 10

/** Checks the rules and gives each its id and normalized content; the first invalid one fails the whole batch. */
export const prepare = (rules: ReadonlyArray<NewRule>) =>
  Effect.forEach(rules, (rule) => {
    const invalid = invalidRule(rule)
    if (invalid !== undefined) return Effect.fail(new InvalidRule({ reason: invalid }))
    const normalized = normalize(rule.content)
    return Effect.succeed({ ...rule, normalized, ruleId: ruleIdOf(rule.tenantId, rule.taskCategory, normalized) })
  })

/** An in-memory store, for tests and examples that must not touch disk. */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => {
  const rules = new Map<string, ExperienceRule & { readonly updatedAt: number }>()
  const applied = new Set<string>()
  const strip = ({ updatedAt: _, ...rule }: ExperienceRule & { readonly updatedAt: number }): ExperienceRule => rule
  /** True when `key` was not applied for `tenantId` yet (or there is no key); records it. A key is each tenant's own. */
  const fresh = (tenantId: string, key: string | undefined): boolean => {
    if (key === undefined) return true
    const k = `${tenantId}\u0000${key}`
    if (applied.has(k)) return false
    applied.add(k)
    return true
  }
  return {
    saveRules: (batch, options = {}) =>
      Effect.gen(function*() {
        const prepared = yield* prepare(batch)
        const now = yield* Clock.currentTimeMillis
        const writes = new Set([...new Set(prepared.map((r) => r.tenantId))].filter((t) => fresh(t, options.idempotencyKey)))
        for (const rule of prepared) {
          if (!writes.has(rule.tenantId)) continue
          const existing = rules.get(rule.ruleId)
          rules.set(rule.ruleId, existing === undefined
            ? { ruleId: rule.ruleId, tenantId: rule.tenantId, taskCategory: rule.taskCategory, ruleType: rule.ruleType, content: rule.content, successCount: 0, failCount: 0, updatedAt: now }
            : { ...existing, successCount: existing.successCount + 1, updatedAt: now })
        }
        // A rule its tenant's key skipped and that was never stored (the key was used for other rules) is not returned.
        return prepared.flatMap((r) => {
          const rule = rules.get(r.ruleId)
          return rule === undefined ? [] : [strip(rule)]
        })
      }),
    getRules: (tenantId, taskCategory, limit = DEFAULT_LIMIT) =>
      Effect.sync(() =>
        [...rules.values()]
          .filter((r) => r.tenantId === tenantId && r.taskCategory === taskCategory)
          .map(strip)
          .sort(rank)
          .slice(0, Math.max(0, Math.floor(limit)))
      ),
    reinforce: (tenantId, ruleId, positive, options = {}) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const existing = rules.get(ruleId)
        if (existing === undefined || existing.tenantId !== tenantId) return yield* new RuleNotFound({ tenantId, ruleId })
        if (fresh(tenantId, options.idempotencyKey)) {
          rules.set(ruleId, positive
            ? { ...existing, successCount: existing.successCount + 1, updatedAt: now }
            : { ...existing, failCount: existing.failCount + 1, updatedAt: now })
        }
        return strip(rules.get(ruleId)!)
      })
  }
})

/** In-memory `ExperienceStore` layer. */
export const layerMemory: Layer.Layer<ExperienceStore> = Layer.effect(ExperienceStore, makeMemory)
