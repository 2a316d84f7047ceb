/**
 * @artana/cli: the `artana` command, and the plan format and runner it is built on, for programmatic use.
 *
 * @since 0.1.0
 */
export * as Plan from "./Plan.js"
export * as PlanRunner from "./PlanRunner.js"
