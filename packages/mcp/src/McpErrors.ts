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
  /** The YAML file it was read from, with the line and column of the problem. */
  file: Schema.optional(Schema.String),
  line: Schema.optional(Schema.Number),
  column: Schema.optional(Schema.Number),
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    const at = this.file === undefined ? "" : `${this.file}${this.line === undefined ? "" : `:${this.line}:${this.column ?? 1}`}: `
    return `${at}invalid MCP config at ${this.path}: ${this.reason}`
  }
}

export type McpError = McpServerError | InvalidMcpConfig

/** Whether `u` is one of this package's errors. */
export const isMcpError = (u: unknown): u is McpError => Predicate.isTagged(u, "McpServerError") || Predicate.isTagged(u, "InvalidMcpConfig")
