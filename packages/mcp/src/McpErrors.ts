/**
 * The errors of `@artana/mcp`.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** A server that cannot be reached, started or listed: which one, and why. */
export class McpServerError extends Schema.TaggedError<McpServerError>()("McpServerError", {
  server: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `MCP server "${this.server}": ${this.reason}`
  }
}

/** A config (in code or in a policy's `mcp:` section) that does not decode: where, and why. */
export class InvalidMcpConfig extends Schema.TaggedError<InvalidMcpConfig>()("InvalidMcpConfig", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid MCP config at ${this.path}: ${this.reason}`
  }
}

export type McpError = McpServerError | InvalidMcpConfig

/** Whether `u` is one of this package's errors. */
export const isMcpError = (u: unknown): u is McpError => Predicate.isTagged(u, "McpServerError") || Predicate.isTagged(u, "InvalidMcpConfig")
