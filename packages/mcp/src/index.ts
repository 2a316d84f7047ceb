/**
 * @artana/mcp: MCP servers (stdio, Streamable HTTP) as governed Artana tools. `McpServers` holds the connections,
 * `McpTools.load` lists a run's tools once (logged) and governs them, `McpPins` fingerprints them for pinning.
 *
 * @since 0.1.0
 */
export * as McpConfig from "./McpConfig.js"
export * as McpErrors from "./McpErrors.js"
export * as McpPins from "./McpPins.js"
export * as McpServers from "./McpServers.js"
export * as McpTools from "./McpTools.js"
