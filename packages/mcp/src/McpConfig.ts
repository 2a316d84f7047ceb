/**
 * The MCP servers a host connects to, and how their tools are governed: one schema for code and for the `mcp:`
 * section of the CLI's policy YAML (snake_case, as the policy's other fields).
 *
 * ```yaml
 * mcp:
 *   servers:
 *     - name: files
 *       command: node
 *       args: [servers/files.js]
 *       capability: files:read            # default mcp:files
 *       timeout_ms: 30000
 *       tools:
 *         write_file: { capability: files:write, idempotent: false, approval: required, approvers: [ann] }
 *       pins:                             # written by `artana mcp pin`
 *         read_file: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
 *     - name: github
 *       url: https://api.example.com/mcp
 *       headers: { Authorization: "Bearer ${GITHUB_TOKEN}" }
 *       sessions: shared                  # default per_tenant: a connection (a process, a session) per tenant
 * ```
 *
 * `${NAME}` in `headers` and `env` is read from the environment when the server is first connected (through Effect's
 * `Config`, so a test or a deployment may give another `ConfigProvider`), held `Redacted`, and never logged.
 *
 * @since 0.1.0
 */
import { Yaml } from "@artana/plugin-sdk"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { InvalidMcpConfig } from "./McpErrors.js"

const PositiveInt = Schema.Number.pipe(Schema.int(), Schema.positive())

/** A server's name: the prefix of its tools' names (`files.read_file`). */
export const ServerName = Schema.String.pipe(
  Schema.pattern(/^[a-zA-Z0-9_-]{1,32}$/, { message: () => "a server name is 1 to 32 letters, digits, _ or -" })
)

/**
 * Approvals, as the sandbox policy writes them: `approval: required` makes every call wait for a person's decision
 * before it reaches the server (core's `Tool.make({ needsApproval: true })`); `approvers` names who may decide
 * (default: any approver).
 */
const ApprovalFields = {
  approval: Schema.optional(Schema.Literal("required", "none")),
  approvers: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1))))
}

/** How one of the server's tools is governed; unset fields fall back to the server's. */
export const ToolRule = Schema.Struct({
  ...ApprovalFields,
  /** The capability a tenant needs to see and call the tool. */
  capability: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  /** Safe to run again after a crash (overrides the server's `idempotentHint`/`readOnlyHint`). */
  idempotent: Schema.optional(Schema.Boolean),
  timeout_ms: Schema.optional(PositiveInt)
})
export type ToolRule = typeof ToolRule.Type

const Common = {
  name: ServerName,
  /** Approvals for every tool of the server unless its rule says otherwise. Default: none. */
  ...ApprovalFields,
  /** The capability every tool of the server requires unless its rule says otherwise. Default `mcp:<name>`. */
  capability: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  /**
   * Whether the server's tools are safe to run again after a crash. Unset: each tool's `idempotentHint` or
   * `readOnlyHint` (as the server declares them), else not idempotent.
   */
  idempotent: Schema.optional(Schema.Boolean),
  /** Deadline of one call (default 60,000). */
  timeout_ms: Schema.optional(PositiveInt),
  /**
   * Whose session a connection is. `per_tenant` (the default): each tenant gets its own connection (a stdio server a
   * process of its own, an HTTP server a session of its own), so a server that keeps state per connection never mixes
   * two tenants' state. `shared`: one connection for the whole process, for a server that keeps none.
   */
  sessions: Schema.optional(Schema.Literal("per_tenant", "shared")),
  /** A tenant's connection to a `per_tenant` server is closed after this long unused (default 300,000: five minutes). */
  idle_timeout_ms: Schema.optional(PositiveInt),
  /** Rules per tool, by the server's own tool name. */
  tools: Schema.optional(Schema.Record({ key: Schema.String, value: ToolRule })),
  /**
   * Fingerprints (`Mcp.fingerprint`) of the tools a person reviewed, by tool name (`artana mcp pin` writes them).
   * When present, a tool whose name, description, input schema, hints or output schema differ, or that is not
   * pinned, is withheld from the model and the withholding is logged. Absent: the server's tools are offered as listed.
   */
  pins: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)) }))
}

/** `${NAME}`: a reference to an environment variable, resolved when the server is first connected. */
const TEMPLATE = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/

/** A server Artana starts as a child process and speaks to over its stdin and stdout. */
export const StdioServer = Schema.Struct({
  ...Common,
  command: Schema.String.pipe(Schema.minLength(1)),
  args: Schema.optional(Schema.Array(Schema.String)),
  /**
   * Variables for the process, on top of a minimal inherited set (`PATH`, `HOME`...); each value reads the environment
   * (`${NAME}`): a literal is refused, as it would be logged.
   */
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  cwd: Schema.optional(Schema.String)
})
export type StdioServer = typeof StdioServer.Type

/** A server reached over Streamable HTTP. */
export const HttpServer = Schema.Struct({
  ...Common,
  url: Schema.String.pipe(Schema.filter((u) => URL.canParse(u) && /^https?:/.test(u) || "an http:// or https:// URL")),
  /**
   * Headers sent with every request; each value reads the environment (`Bearer ${TOKEN}`), never logged: a literal is
   * refused, as it would be logged.
   */
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})
export type HttpServer = typeof HttpServer.Type

/**
 * The first `env` or `headers` value that reads no variable. Each must read at least one (`${TOKEN}`,
 * `Bearer ${TOKEN}`): the config is logged with the run (the CLI's policy in `RunStarted`, so a resumed run can rebuild
 * its servers), so a literal value, a token most likely, would be in the log for anyone who reads it; a `${NAME}` is
 * resolved at connect time, held `Redacted`, and never logged. Checked on the decoded server (not in its `env` and
 * `headers` fields) so the problem is reported for the server's own kind, at the value's path.
 */
const literalValue = (server: StdioServer | HttpServer): Schema.FilterIssue | undefined => {
  const [field, values] = "command" in server ? ["env", server.env] as const : ["headers", server.headers] as const
  const literal = Object.entries(values ?? {}).find(([, value]) => !TEMPLATE.test(value))
  if (literal === undefined) return undefined
  const what = field === "env" ? "environment value" : "header value"
  return {
    path: [field, literal[0]],
    message: `a literal ${what} would be logged with the run; read it from the environment: write "\${NAME}" (for a header, ` +
      `"Bearer \${NAME}") and set NAME where Artana runs`
  }
}

export const Server = Schema.Union(StdioServer, HttpServer).pipe(Schema.filter((server) => literalValue(server) ?? true))
export type Server = typeof Server.Type

export const Config = Schema.Struct({
  servers: Schema.Array(Server).pipe(
    Schema.filter((servers) => {
      const names = servers.map((s) => s.name)
      const twice = names.find((n, i) => names.indexOf(n) !== i)
      return twice === undefined || `two servers are named "${twice}"`
    })
  )
})
export type Config = typeof Config.Type

export const isStdio = (server: Server): server is StdioServer => "command" in server

/** The capability a server's tool requires. */
export const capabilityOf = (server: Server, tool: string): string => server.tools?.[tool]?.capability ?? serverCapability(server)

/** The capability a server's tools require unless their rule says otherwise. */
const serverCapability = (server: Server): string => server.capability ?? `mcp:${server.name}`

/** Every capability the servers' tools may require: what a host grants tenants knowingly. */
export const capabilities = (config: Config): ReadonlyArray<string> =>
  [...new Set(config.servers.flatMap((s) => [serverCapability(s), ...Object.keys(s.tools ?? {}).map((t) => capabilityOf(s, t))]))].sort()

/** Whether calls of a server's tool wait for approval, and who may decide: the tool's rule, else the server's. */
export const approvalOf = (server: Server, tool: string): { readonly needsApproval: boolean; readonly approvers: ReadonlyArray<string> | undefined } => {
  const rule = server.tools?.[tool]
  return { needsApproval: (rule?.approval ?? server.approval) === "required", approvers: rule?.approvers ?? server.approvers }
}

/** The deadline of one call of a server's tool, in milliseconds. */
export const timeoutOf = (server: Server, tool: string): number => server.tools?.[tool]?.timeout_ms ?? server.timeout_ms ?? 60_000

/** A policy document: its `mcp:` section, and whatever else it holds (the sandbox's rules). */
const PolicyDocument = Schema.Struct({ mcp: Schema.optional(Config) }, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/**
 * The `mcp:` section of a policy written in YAML (undefined when it has none), decoded; a problem names the file, the
 * line, the column and the field.
 *
 * @example
 * const config = McpConfig.fromPolicy(fs.readFileSync("policy.yaml", "utf8"), "policy.yaml")
 */
export const fromPolicy = (text: string, file: string): Either.Either<Config | undefined, InvalidMcpConfig> => {
  const located = (issue: Yaml.Issue) => new InvalidMcpConfig({ file, line: issue.line, column: issue.column, path: issue.path, reason: issue.reason })
  return Either.flatMap(Either.mapLeft(Yaml.parse(text), located), (source) =>
    source.value === null || typeof source.value !== "object"
      ? Either.right(undefined)
      : Either.map(Either.mapLeft(Yaml.decode(source, PolicyDocument), located), (doc) => doc.mcp))
}
