/**
 * The sandbox's policy: deny by default, with rules per tool. Written in YAML next to the workspace it governs;
 * every path in it is relative to the policy file's folder (the base directory), which is also the working
 * directory of `shell.run`.
 *
 * ```yaml
 * default: deny
 * tools:
 *   fs.read:  { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1048576 }
 *   fs.write: { allow: true, paths: ["workspace/out/**"] }
 *   http.get: { allow: true, domains: ["example.com", "*.example.org"], block_private: true, max_bytes: 1048576, timeout_ms: 10000 }
 *   shell.run: { allow: true, executables: [ls, cat, echo, git], denied_tokens: [rm, --force, sudo], timeout_ms: 10000, max_output_bytes: 65536 }
 * ```
 *
 * Safe defaults when a field is absent: a tool without a section (or with `allow: false`) is denied, hidden files
 * are denied, private networks are blocked, and caps apply (1 MiB, 10 s, 64 KiB, 5 redirects).
 *
 * @since 0.1.0
 */
import { Json, Tool } from "@artana/core"
import { Yaml } from "@artana/plugin-sdk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { canonicalDomain } from "./internal/netGuard.js"

const Glob = Schema.String.pipe(Schema.minLength(1))

/** A host name, `*.` and a host name, or an IP address: what a URL's host is compared with. */
const Domain = Schema.String.pipe(
  Schema.filter((entry) =>
    canonicalDomain(entry) !== undefined ||
    `${JSON.stringify(entry)} is not a host name: write example.com, *.example.com for its subdomains, or an IP address`
  )
)

/** An executable's name (looked up on the fixed PATH) or an absolute path. */
const Executable = Schema.String.pipe(
  Schema.filter((entry) =>
    (entry !== "" && !/\s/.test(entry) && (!entry.includes("/") || path.isAbsolute(entry))) ||
    `${JSON.stringify(entry)} is not an executable name or an absolute path`
  )
)
const PositiveInt = Schema.Number.pipe(Schema.int(), Schema.positive())

/**
 * Every tool's approval fields: `approval: required` makes each call wait for a person's decision before it runs
 * (core's `Tool.make({ needsApproval: true })`); `approvers` names who may decide (default: any approver).
 */
const ApprovalFields = {
  approval: Schema.optional(Schema.Literal("required", "none")),
  approvers: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1))))
}

const FsRule = Schema.Struct({
  allow: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  ...ApprovalFields,
  /** Globs of the paths the tool may touch, relative to the base directory (`workspace/**`). */
  paths: Schema.optionalWith(Schema.Array(Glob), { default: () => [] }),
  /** Refuse any path with a component starting with `.` (`.env`, `.git/config`). Default true. */
  deny_hidden: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  max_bytes: Schema.optionalWith(PositiveInt, { default: () => 1_048_576 })
})

const HttpRule = Schema.Struct({
  allow: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  ...ApprovalFields,
  /** Exact host names; `*.example.org` for any subdomain of example.org (not example.org itself). */
  domains: Schema.optionalWith(Schema.Array(Domain), { default: () => [] }),
  /** Refuse private, loopback, link-local and other non-public addresses. Default true. Cloud metadata is always refused. */
  block_private: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  max_bytes: Schema.optionalWith(PositiveInt, { default: () => 1_048_576 }),
  /** A total deadline for the call: resolution, every redirect, the whole body. */
  timeout_ms: Schema.optionalWith(PositiveInt, { default: () => 10_000 }),
  max_redirects: Schema.optionalWith(Schema.Number.pipe(Schema.int(), Schema.nonNegative()), { default: () => 5 }),
  /**
   * Cloud metadata and host endpoints (169.254.169.254, Azure's WireServer 168.63.129.16, metadata.google.internal...)
   * are refused by name and address unless this is true. Default false. Link-local ones stay under block_private.
   */
  allow_metadata: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

const ShellRule = Schema.Struct({
  allow: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  ...ApprovalFields,
  /** Executable names, looked up on a fixed PATH; or absolute paths, allowed as written. */
  executables: Schema.optionalWith(Schema.Array(Executable), { default: () => [] }),
  /** Arguments refused wherever they appear, as a whole argument or as the name of `--opt=value`. */
  denied_tokens: Schema.optionalWith(Schema.Array(Schema.String.pipe(Schema.minLength(1))), { default: () => [] }),
  timeout_ms: Schema.optionalWith(PositiveInt, { default: () => 10_000 }),
  max_output_bytes: Schema.optionalWith(PositiveInt, { default: () => 65_536 }),
  /**
   * How commands are contained: `bubblewrap` (the default) runs each inside an OS sandbox built from the policy, and
   * refuses to run where none can be had; `none` runs them uncontained, which the report and show-run warn about.
   */
  containment: Schema.optionalWith(Schema.Literal("bubblewrap", "none"), { default: () => "bubblewrap" as const }),
  /** The address space of each process inside (RLIMIT_AS). */
  max_memory_bytes: Schema.optionalWith(PositiveInt, { default: () => 4_294_967_296 }),
  /** How many processes the command may have at once (a pids cgroup, else RLIMIT_NPROC). */
  max_processes: Schema.optionalWith(PositiveInt, { default: () => 128 }),
  /** The largest file a process may write (RLIMIT_FSIZE), and the size of its private /tmp. */
  max_file_bytes: Schema.optionalWith(PositiveInt, { default: () => 67_108_864 })
})

/** The policy document, as written (snake_case, YAML's names). */
export const Document = Schema.Struct({
  default: Schema.optionalWith(Schema.Literal("deny"), { default: () => "deny" as const }),
  /** The MCP servers of the policy: checked and used by `@artana/mcp` (`McpConfig.fromPolicy`), not by the sandbox. */
  mcp: Schema.optional(Schema.Unknown),
  tools: Schema.optionalWith(
    Schema.Struct({
      "fs.read": Schema.optional(FsRule),
      "fs.write": Schema.optional(FsRule),
      "http.get": Schema.optional(HttpRule),
      "shell.run": Schema.optional(ShellRule)
    }),
    { default: () => ({}) }
  )
})
export type Document = typeof Document.Type
export type FsRule = typeof FsRule.Type
export type HttpRule = typeof HttpRule.Type
export type ShellRule = typeof ShellRule.Type

/** A policy ready to enforce: its rules, and the directory its paths are relative to. */
export interface Policy {
  readonly baseDir: string
  readonly document: Document
}

/** A policy file that cannot be used: which file, where in it, which field, and why. */
export class PolicyError extends Schema.TaggedError<PolicyError>()("PolicyError", {
  file: Schema.String,
  line: Schema.optional(Schema.Number),
  column: Schema.optional(Schema.Number),
  field: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    const at = this.line === undefined ? "" : `:${this.line}${this.column === undefined ? "" : `:${this.column}`}`
    return `${this.file}${at}: ${this.field === "$" ? "" : `${this.field.replace(/^\$\./, "")}: `}${this.reason}`
  }
}

/** A loaded policy file: the policy, and what a run logs of it. */
export interface Loaded {
  readonly policy: Policy
  /** The file's absolute path. */
  readonly file: string
  /** SHA-256 of the file's bytes. */
  readonly sha256: string
  /** The document as written (YAML as JSON, defaults not filled in), for the log. */
  readonly source: Json.Json
}

/**
 * A policy as a run's log records it (in the run's input, say): the file it was read from, the SHA-256 of its
 * bytes, and the document as written. `fromRecord` rebuilds the policy from it, to replay a run with the tools it
 * ran with.
 */
export const Record = Schema.Struct({ file: Schema.String, sha256: Schema.String, document: Json.Json })
export type Record = typeof Record.Type

/** The record of a loaded policy file, for the log. */
export const toRecord = (loaded: Loaded): Record => ({ file: loaded.file, sha256: loaded.sha256, document: loaded.source })

/**
 * Parses a policy from YAML text. `file` names it in errors; `baseDir` (default the file's folder) is what its paths
 * are relative to. Unknown fields and unknown tools are errors, not silently ignored.
 */
export const parse = (text: string, options: { readonly file: string; readonly baseDir?: string | undefined }): Either.Either<Policy & { readonly source: Json.Json }, PolicyError> => {
  const located = (issue: Yaml.Issue) =>
    new PolicyError({ file: options.file, line: issue.line, column: issue.column, field: issue.path, reason: issue.reason })
  const source = Yaml.parse(text)
  if (Either.isLeft(source)) return Either.left(located(source.left))
  if (source.right.value === null || typeof source.right.value !== "object" || Array.isArray(source.right.value)) {
    return Either.left(new PolicyError({ file: options.file, line: 1, column: 1, field: "$", reason: "a policy is a mapping with `default: deny` and `tools:`" }))
  }
  const document = Yaml.decode(source.right, Document)
  if (Either.isLeft(document)) return Either.left(located(document.left))
  // A document that decodes holds mappings, lists, strings, finite numbers and booleans: JSON, which the log takes.
  const json = Json.fromUnknown(source.right.value)
  if (!json.ok) return Either.left(new PolicyError({ file: options.file, field: "$", reason: `the policy is not plain data: ${json.error}` }))
  return Either.right({ baseDir: path.resolve(options.baseDir ?? path.dirname(path.resolve(options.file))), document: document.right, source: json.json })
}

/**
 * Rebuilds a policy from its record in a log. Its paths are relative to the recorded file's folder, or to `baseDir`
 * when the workspace has moved.
 */
export const fromRecord = (record: Record, options: { readonly baseDir?: string | undefined } = {}): Either.Either<Policy, PolicyError> => {
  const decoded = Schema.decodeUnknownEither(Document)(record.document, { errors: "first", onExcessProperty: "error" })
  if (Either.isLeft(decoded)) {
    const issue = Tool.firstIssue(decoded.left)
    return Either.left(new PolicyError({ file: record.file, field: issue.path, reason: `the logged policy does not decode: ${issue.reason}` }))
  }
  return Either.right({ baseDir: path.resolve(options.baseDir ?? path.dirname(path.resolve(record.file))), document: decoded.right })
}

/** Reads and parses a policy file; its folder is the base directory. */
export const load = (file: string): Effect.Effect<Loaded, PolicyError> =>
  Effect.gen(function*() {
    const bytes = yield* Effect.try({
      try: () => fs.readFileSync(file),
      catch: (cause) =>
        new PolicyError({ file, field: "$", reason: `cannot read the policy file: ${cause instanceof Error ? cause.message : String(cause)}` })
    })
    const parsed = parse(bytes.toString("utf8"), { file })
    if (Either.isLeft(parsed)) return yield* parsed.left
    const { source, ...policy } = parsed.right
    return { policy, file: path.resolve(file), sha256: createHash("sha256").update(bytes).digest("hex"), source }
  })

/** The rule of a tool, or why the tool is denied outright. */
export const ruleOf = <K extends keyof Document["tools"]>(policy: Policy, tool: K): Either.Either<NonNullable<Document["tools"][K]>, string> => {
  const rule = policy.document.tools[tool]
  if (rule === undefined) return Either.left(`${tool} has no rule in the policy (default: deny)`)
  if (!rule.allow) return Either.left(`${tool} is not allowed by the policy (allow: false)`)
  return Either.right(rule)
}
