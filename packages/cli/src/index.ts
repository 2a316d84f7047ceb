/**
 * @artana/cli: the `artana` command, and the plan format and runner it is built on, for programmatic use.
 *
 * @since 0.1.0
 */
export * as Plan from "./Plan.js"
export * as PlanRunner from "./PlanRunner.js"
export * as Report from "./Report.js"
export * as ExitCode from "./ExitCode.js"
export * as Cli from "./Cli.js"
export * as Inspector from "./Inspector.js"
