// The parts of the MCP SDK a connection uses, in one module that `connection.ts` imports only when it first connects
// a server: importing @artana/mcp (to decode a logged tool list, say) does not load the SDK and its zod schemas.
export { Client } from "@modelcontextprotocol/sdk/client/index.js"
export { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
export { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
export { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
