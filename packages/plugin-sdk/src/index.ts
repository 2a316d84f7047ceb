/**
 * @artana/plugin-sdk: third-party tools for Artana. `defineTool` (Effect Schema or raw JSON Schema parameters),
 * `definePlugin` (tools made from a validated config), and `Plugins` to load plugins by npm package name.
 *
 * @since 0.1.0
 */
export * as Plugin from "./Plugin.js"
export * as PluginErrors from "./PluginErrors.js"
export * as Plugins from "./Plugins.js"
export * as PluginTool from "./PluginTool.js"
export * as Yaml from "./Yaml.js"
export { definePlugin } from "./Plugin.js"
export { defineTool } from "./PluginTool.js"
