/**
 * What the experience engine learns: rules, per tenant and task category, with how often they helped and hurt.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** `win_pattern`: what worked; `anti_pattern`: what failed and must be avoided; `fact`: something true of the task. */
export const RuleType = Schema.Literal("win_pattern", "anti_pattern", "fact")
export type RuleType = typeof RuleType.Type

/** A learned rule as the store keeps it. `successCount` / `failCount`: runs it helped / runs it was in and failed. */
export const ExperienceRule = Schema.Struct({
  ruleId: Schema.String,
  tenantId: Schema.String,
  taskCategory: Schema.String,
  ruleType: RuleType,
  content: Schema.String,
  successCount: Schema.Number,
  failCount: Schema.Number
})
export type ExperienceRule = typeof ExperienceRule.Type

/** A rule to save: the store gives it its id and counts. */
export const NewRule = Schema.Struct({
  tenantId: Schema.String,
  taskCategory: Schema.String,
  ruleType: RuleType,
  content: Schema.String
})
export type NewRule = typeof NewRule.Type

/** A rule as a reflection extracts it; the run supplies tenant and category. */
export const ExtractedRule = Schema.Struct({
  ruleType: RuleType.annotations({ description: "win_pattern: what worked; anti_pattern: a mistake to avoid; fact: a fact about the task" }),
  content: Schema.String.annotations({ description: "One short, general, actionable sentence, useful in later runs of the same task" })
})
export type ExtractedRule = typeof ExtractedRule.Type

/** What a reflection model step answers. */
export const ReflectionResult = Schema.Struct({
  extractedRules: Schema.Array(ExtractedRule)
})
export type ReflectionResult = typeof ReflectionResult.Type

/** Longest rule content the store accepts, in characters. */
export const MAX_CONTENT_LENGTH = 2000

/**
 * The form two rules are compared in: Unicode NFKC, lower case, whitespace collapsed, surrounding quotes and
 * trailing punctuation removed. "Use ISO dates (YYYY-MM-DD)." and "use ISO dates (yyyy-mm-dd)" say the same.
 */
export const normalize = (content: string): string =>
  content
    .normalize("NFKC")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^["'`\u201c\u2018]+|["'`\u201d\u2019]+$/g, "")
    .replace(/[\s.!;:,]+$/u, "")
    .trim()

/**
 * The order `getRules` returns: rules that helped more first (successes minus failures), then the most
 * successful, then the rule id (so the order is stable).
 */
export const rank = (a: ExperienceRule, b: ExperienceRule): number =>
  (b.successCount - b.failCount) - (a.successCount - a.failCount) ||
  b.successCount - a.successCount ||
  (a.ruleId < b.ruleId ? -1 : a.ruleId > b.ruleId ? 1 : 0)
