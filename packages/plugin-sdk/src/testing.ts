/**
 * @artana/plugin-sdk/testing: run a plugin's tools through a real kernel in one call (`PluginTest`).
 *
 * @since 0.1.0
 */
export * as PluginTest from "./PluginTest.js"
