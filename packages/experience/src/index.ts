/**
 * @artana/experience: rules learned across runs (win patterns, anti-patterns, facts), per tenant and task category;
 * the store that keeps them, the context section that puts them in an agent's prompt, and the reflection that
 * extracts them at the end of a run.
 *
 * @since 0.1.0
 */
export * as ExperienceRule from "./ExperienceRule.js"
export * as ExperienceStore from "./ExperienceStore.js"
export * as SqlExperienceStore from "./SqlExperienceStore.js"
export * as Experience from "./Experience.js"
export * as ExperienceExtension from "./ExperienceExtension.js"
