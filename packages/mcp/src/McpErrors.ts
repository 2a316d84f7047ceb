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

/**
 * An MCP tool's result that breaks the output schema the server listed for it (its `structuredContent` does not match,
 * or is missing). The call reached the server, so it may have acted; the kernel logs it as the tool's failure.
 */
export class McpToolOutputInvalid extends Schema.TaggedError<McpToolOutputInvalid>()("McpToolOutputInvalid", {
  tool: Schema.String,
  /** Where in `structuredContent` (`$` for all of it). */
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the result of "${this.tool}" breaks the output schema its server listed: structuredContent at ${this.path} ${this.reason}. ` +
      "The call reached the server and may have acted; fix the server's result (or its outputSchema, then review and pin the tool again)"
  }
}

export type McpError = McpServerError | InvalidMcpConfig | McpToolOutputInvalid

/** Whether `u` is one of this package's errors. */
export const isMcpError = (u: unknown): u is McpError =>
  Predicate.isTagged(u, "McpServerError") || Predicate.isTagged(u, "InvalidMcpConfig") || Predicate.isTagged(u, "McpToolOutputInvalid")
