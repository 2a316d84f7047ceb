import { createHash } from "node:crypto"
import { MAX_CONTENT_LENGTH, type NewRule, normalize } from "../ExperienceRule.js"

/**
 * A rule's id: derived from its tenant, category and normalized content, so saving the same rule twice finds the
 * same row, in any process, and two tenants can never share an id.
 */
export const ruleIdOf = (tenantId: string, taskCategory: string, normalized: string): string =>
  `rule_${createHash("sha256").update(`${tenantId}\u0000${taskCategory}\u0000${normalized}`).digest("hex").slice(0, 32)}`

/** Why a rule cannot be saved, or undefined. */
export const invalidRule = (rule: NewRule): string | undefined => {
  if (rule.tenantId.trim() === "") return "tenantId is empty"
  if (rule.taskCategory.trim() === "") return "taskCategory is empty (name the kind of task the rule is for, e.g. \"invoice-extraction\")"
  if (normalize(rule.content) === "") return "content is empty"
  if (rule.content.length > MAX_CONTENT_LENGTH) {
    return `content is ${rule.content.length} characters; a rule holds at most ${MAX_CONTENT_LENGTH} (keep it one short sentence)`
  }
  return undefined
}
