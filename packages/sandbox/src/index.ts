/**
 * @artana/sandbox: `fs.read`, `fs.write`, `http.get` and `shell.run` under a deny-by-default policy, every
 * decision in the run's log; a plugin built with `@artana/plugin-sdk`.
 *
 * @since 0.1.0
 */
export * as Audit from "./Audit.js"
export * as Policy from "./Policy.js"
export * as Sandbox from "./Sandbox.js"
export * as Transport from "./Transport.js"
