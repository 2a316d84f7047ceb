/**
 * @artana/experience/testing: the `ExperienceStore` contract suite (it imports vitest), for other implementations.
 *
 * @since 0.1.0
 */
export * as ExperienceStoreSuite from "./ExperienceStoreSuite.js"
