/**
 * The sandbox plugin: `fs.read`, `fs.write`, `http.get` and `shell.run` under a deny-by-default `Policy`, built
 * with `@artana/plugin-sdk` exactly as a third party would build a plugin. Its config is the policy.
 *
 * Every decision is in the run's log. The plugin's middleware checks each call before it runs: a denial is the
 * kernel's `PolicyDenied` (`ToolFailed` kind `denied`, with the reason), an allowed call writes a `MiddlewareNote`
 * (`sandbox` / `allowed`) with the reason and what it touches. The tool then checks again where only execution
 * can tell (the file actually opened, every address a name resolves to, each redirect): a denial there fails the
 * handler with core's `PolicyDenied`, which the kernel logs as a denial too (`PolicyDenied` without a middleware,
 * then `ToolFailed` kind `denied`). `Audit.read` turns those events back into per-call records.
 *
 * @example
 * const loaded = yield* Policy.load("policy.yaml")
 * const sandbox = yield* Plugin.load(Sandbox.plugin, Sandbox.configOf(loaded))
 * // Plugins.layer([sandbox]) gives the ToolRegistry and the Middleware for Kernel.layer
 *
 * @since 0.1.0
 */
import { Errors, type Middleware, Tool, type ToolRegistry } from "@artana/core"
import { definePlugin, defineTool, Plugin, Plugins } from "@artana/plugin-sdk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as path from "node:path"
import { MIDDLEWARE, noteJson } from "./internal/decision.js"
import { checkRead, checkWrite, overReadCap, readChecked, writeChecked } from "./internal/fsGuard.js"
import { checkUrlStatic, get } from "./internal/httpGet.js"
import { availability, recordOf } from "./internal/contain.js"
import type { Containment } from "./internal/decision.js"
import { hold } from "./internal/launcher.js"
import { checkCommand, policyKey, run } from "./internal/shell.js"
import * as Policy from "./Policy.js"
import * as Transport from "./Transport.js"

/** The tools' names. */
export const TOOLS = ["fs.read", "fs.write", "http.get", "shell.run"] as const
export type ToolName = (typeof TOOLS)[number]

/** The name the middleware writes its notes and denials under. */
export { MIDDLEWARE }

/** The plugin's config: the policy document (as written, or decoded) and the directory it is relative to. */
export const Config = Schema.Struct({ baseDir: Schema.String, policy: Policy.Document })
export type Config = typeof Config.Type

/** A policy, or a loaded policy file. */
export type PolicyInput = Policy.Policy | Policy.Loaded

const policyOf = (input: PolicyInput): Policy.Policy => ("policy" in input ? input.policy : input)

/** The plugin's config for a policy (or a loaded policy file), for `Plugin.load`. */
export const configOf = (input: PolicyInput): typeof Config.Encoded => {
  const policy = policyOf(input)
  return { baseDir: policy.baseDir, policy: Schema.encodeSync(Policy.Document)(policy.document) }
}

/** Why shell.run cannot run under its rule here (its OS sandbox cannot be had), or undefined. */
const containmentMissing = (rule: Policy.ShellRule): string | undefined => {
  if (rule.containment === "none") return undefined
  const tools = availability()
  return tools.ok ? undefined : tools.reason
}

/** What a call touches, as the audit records it. */
export interface Touched {
  readonly filesRead?: ReadonlyArray<string> | undefined
  readonly filesWritten?: ReadonlyArray<string> | undefined
  readonly domains?: ReadonlyArray<string> | undefined
  readonly commands?: ReadonlyArray<string> | undefined
  /** How a shell step is contained. */
  readonly containment?: Containment | undefined
}

/** A decision on a call, before it runs. */
export type Decision = ({ readonly ok: true; readonly reason: string } & Touched) | { readonly ok: false; readonly reason: string }

const FsArgs = Schema.Struct({ path: Schema.String })
const WriteArgs = Schema.Struct({ path: Schema.String, content: Schema.String })
const HttpArgs = Schema.Struct({ url: Schema.String })
const ShellArgs = Schema.Struct({ command: Schema.String, args: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }) })

const rel = (policy: Policy.Policy, real: string) => path.relative(policy.baseDir, real) || "."

/** An argument as a person reads a command line: bare when it is plain, else in single quotes (POSIX style). */
const quoted = (arg: string): string => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`)

const overWriteCap = (size: number, max: number) => `the content is ${size} bytes, over fs.write's max_bytes (${max})`

const refuse = (reason: string): Decision => ({ ok: false, reason })

type Rule<K extends ToolName> = NonNullable<Policy.Document["tools"][K]>

/** A tool's rule and decoded arguments handed to `judge`, or the denial of a tool without a rule. */
const judged = <K extends ToolName, A, I>(
  policy: Policy.Policy,
  tool: K,
  schema: Schema.Schema<A, I>,
  args: unknown,
  judge: (rule: Rule<K>, args: A) => Decision
): Decision => {
  const rule = Policy.ruleOf(policy, tool)
  if (Either.isLeft(rule)) return refuse(rule.left)
  const decoded = Schema.decodeUnknownEither(schema)(args)
  return Either.isLeft(decoded) ? refuse(`${tool} takes { ${argumentNames(schema)} }`) : judge(rule.right, decoded.right)
}

const argumentNames = (schema: Schema.Schema.Any): string => {
  const properties = Tool.jsonSchemaOf(schema).properties
  return properties !== null && typeof properties === "object" && !Array.isArray(properties) ? Object.keys(properties).join(", ") : ""
}

/** The policy's decision on a call of `tool` with decoded `args`; everything that can be known before running it. */
export const decide = (policy: Policy.Policy, tool: ToolName, args: unknown): Decision => {
  switch (tool) {
    case "fs.read":
      return judged(policy, tool, FsArgs, args, (rule, a) => {
        const d = checkRead(policy.baseDir, rule, a.path)
        if (!d.ok) return refuse(d.reason)
        // A cap is policy: a file over it is refused before the call, as a write over the cap is.
        if (d.stat !== undefined && d.stat.size > rule.max_bytes) return refuse(overReadCap(d.relative, d.stat.size, rule.max_bytes))
        return { ok: true, reason: `${d.relative} is within fs.read's paths`, filesRead: [d.relative] }
      })
    case "fs.write":
      return judged(policy, tool, WriteArgs, args, (rule, a) => {
        const size = Buffer.byteLength(a.content, "utf8")
        if (size > rule.max_bytes) return refuse(overWriteCap(size, rule.max_bytes))
        const d = checkWrite(policy.baseDir, rule, a.path)
        return d.ok ? { ok: true, reason: `${d.relative} is within fs.write's paths`, filesWritten: [d.relative] } : refuse(d.reason)
      })
    case "http.get":
      return judged(policy, tool, HttpArgs, args, (rule, a) => {
        let url: URL
        try {
          url = new URL(a.url)
        } catch {
          return refuse(`${JSON.stringify(a.url)} is not an absolute URL`)
        }
        const d = checkUrlStatic(rule, url)
        // The name's addresses are checked when the call runs, and every redirect with them.
        return d.ok ? { ok: true, reason: `${d.host} is an allowed domain (its addresses are checked as the call runs)`, domains: [d.host] } : refuse(d.reason)
      })
    case "shell.run":
      return judged(policy, tool, ShellArgs, args, (rule, a) => {
        const read = ruleOrUndefined(policy, "fs.read")
        const write = ruleOrUndefined(policy, "fs.write")
        const d = checkCommand(policy.baseDir, rule, read, a.command, a.args)
        if (!d.ok) return refuse(d.reason)
        const unavailable = containmentMissing(rule)
        if (unavailable !== undefined) return refuse(unavailable)
        const containment = recordOf(policy.baseDir, rule, read, write)
        return {
          ok: true,
          reason: `${d.name} is an allowed executable (${d.executable})${containment.mechanism === "none" ? "; UNCONTAINED (containment: none)" : `, run inside bubblewrap with no network${httpHosts(policy)}`}`,
          containment,
          commands: [[a.command, ...a.args].map(quoted).join(" ")],
          ...(d.reads.length === 0 ? {} : { filesRead: d.reads.map((p) => rel(policy, p)) })
        }
      })
  }
}

/** What a contained command's reason says of http.get's allowed hosts: they are not a way out for commands. */
const httpHosts = (policy: Policy.Policy): string => {
  const http = ruleOrUndefined(policy, "http.get")
  return http === undefined || http.domains.length === 0 ? "" : ` (http.get's hosts (${http.domains.join(", ")}) are for http.get only)`
}

const ruleOrUndefined = <K extends ToolName>(policy: Policy.Policy, tool: K): Rule<K> | undefined => Either.getOrUndefined(Policy.ruleOf(policy, tool))

/** How long a `shell.run` call can last under the policy (its `timeout_ms`, and a second's grace), if it is allowed. */
const shellTimeout = (policy: Policy.Policy): Duration.Duration | undefined => {
  const rule = ruleOrUndefined(policy, "shell.run")
  return rule === undefined ? undefined : Duration.millis(rule.timeout_ms + 1_000)
}

const isTool = (name: string): name is ToolName => (TOOLS as ReadonlyArray<string>).includes(name)

/** The middleware: the policy's decision on each sandbox call, before it runs, written into the log. */
export const middleware = (policy: Policy.Policy): Middleware.Interceptor => ({
  name: MIDDLEWARE,
  beforeTool: (call, context) =>
    Effect.gen(function*() {
      if (!isTool(call.tool)) return call
      let args: unknown
      try {
        args = JSON.parse(call.arguments)
      } catch {
        // Not JSON: the kernel refuses the arguments when it decodes them, and logs why.
        return call
      }
      // Arguments of the wrong shape are the kernel's to refuse (invalid arguments, with their path), not a policy's.
      if (!argumentsFit(call.tool, args)) return call
      const decision = decide(policy, call.tool, args)
      if (!decision.ok) return yield* new Errors.PolicyDenied({ tool: call.tool, reason: decision.reason })
      const { ok: _ok, ...note } = decision
      yield* context.note(MIDDLEWARE, "allowed", noteJson({ tool: call.tool, ...note }))
      return call
    })
})

/** Whether arguments have the shape the tool's parameters decode (what the kernel checks after the middleware). */
const STRICT = { onExcessProperty: "error" } as const
const FITS: { readonly [K in ToolName]: (u: unknown) => boolean } = {
  "fs.read": Schema.is(Schema.encodedSchema(FsArgs), STRICT),
  "fs.write": Schema.is(Schema.encodedSchema(WriteArgs), STRICT),
  "http.get": Schema.is(Schema.encodedSchema(HttpArgs), STRICT),
  "shell.run": Schema.is(Schema.encodedSchema(ShellArgs), STRICT)
}

const argumentsFit = (tool: ToolName, args: unknown): boolean => FITS[tool](args)

/**
 * A denial found while the call runs: the handler fails with core's `PolicyDenied`, which the kernel logs as a
 * denial (`PolicyDenied`, then `ToolFailed` of kind `denied`), and `Audit` reads back.
 */
const denied = (tool: ToolName, reason: string) => new Errors.PolicyDenied({ tool, reason })

/** A tool's rule, or the denial of a tool the policy does not allow. */
const ruleFor = <K extends ToolName>(policy: Policy.Policy, tool: K) =>
  Either.match(Policy.ruleOf(policy, tool), {
    onLeft: (reason) => Effect.fail(denied(tool, reason)),
    onRight: (rule) => Effect.succeed(rule)
  })

/** Each tool's decoded arguments, as an approval predicate (`Approvals`) gets them. */
export interface Arguments {
  readonly "fs.read": typeof FsArgs.Type
  readonly "fs.write": typeof WriteArgs.Type
  readonly "http.get": typeof HttpArgs.Type
  readonly "shell.run": typeof ShellArgs.Type
}

/**
 * Approvals decided in code, per tool: `true`, or a predicate of the call's decoded arguments, as core's
 * `Tool.make({ needsApproval })` takes (a predicate that fails asks for approval). They add to the policy file's: a
 * tool whose section says `approval: required` waits for every call, whatever its predicate answers.
 *
 * @example
 * // Writes outside drafts/ wait for a person; drafts are written at once.
 * Sandbox.layer(loaded, { approvals: { "fs.write": ({ path }) => Effect.succeed(!path.startsWith("workspace/out/drafts/")) } })
 */
export type Approvals = { readonly [K in ToolName]?: Tool.NeedsApproval<Arguments[K]> | undefined }

/** A tool's approval: as its policy section says (`approval: required`, `approvers`), else as `approvals` decides. */
const approvalOf = <K extends ToolName>(policy: Policy.Policy, tool: K, approvals: Approvals | undefined) => {
  const rule = policy.document.tools[tool]
  const needsApproval: Tool.NeedsApproval<Arguments[K]> | undefined = rule?.approval === "required" ? true : approvals?.[tool]
  return { needsApproval, approvers: rule?.approvers }
}

/** The four tools under `policy`, reaching the network through `transport`, with the `approvals` decided in code. */
export const tools = (policy: Policy.Policy, transport: Transport.Transport = Transport.system, approvals?: Approvals): ReadonlyArray<Tool.Tool> => [
  defineTool({
    name: "fs.read",
    ...approvalOf(policy, "fs.read", approvals),
    description: "Reads a text file of the workspace (a path relative to the workspace).",
    parameters: FsArgs,
    success: Schema.Struct({ path: Schema.String, content: Schema.String, bytes: Schema.Number }),
    idempotent: true,
    handler: (args) =>
      Effect.gen(function*() {
        const rule = yield* ruleFor(policy, "fs.read")
        const d = checkRead(policy.baseDir, rule, args.path)
        if (!d.ok) return yield* denied("fs.read", d.reason)
        const read = readChecked(d, rule.max_bytes)
        if ("denied" in read) return yield* denied("fs.read", read.denied)
        if ("error" in read) return yield* Effect.fail(new Error(read.error))
        return { path: d.relative, content: read.bytes.toString("utf8"), bytes: read.bytes.length }
      })
  }),
  defineTool({
    name: "fs.write",
    ...approvalOf(policy, "fs.write", approvals),
    description: "Writes a text file of the workspace (a path relative to the workspace), replacing it.",
    parameters: WriteArgs,
    success: Schema.Struct({ path: Schema.String, bytes: Schema.Number }),
    // Writing the same content again leaves the same file.
    idempotent: true,
    handler: (args) =>
      Effect.gen(function*() {
        const rule = yield* ruleFor(policy, "fs.write")
        const content = Buffer.from(args.content, "utf8")
        if (content.length > rule.max_bytes) return yield* denied("fs.write", overWriteCap(content.length, rule.max_bytes))
        const d = checkWrite(policy.baseDir, rule, args.path)
        if (!d.ok) return yield* denied("fs.write", d.reason)
        const written = writeChecked(d, content)
        if ("denied" in written) return yield* denied("fs.write", written.denied)
        if ("error" in written) return yield* Effect.fail(new Error(written.error))
        return { path: d.relative, bytes: written.bytes }
      })
  }),
  defineTool({
    name: "http.get",
    ...approvalOf(policy, "http.get", approvals),
    description: "GETs a URL of an allowed domain; redirects are followed within the policy. Returns status and body text.",
    parameters: HttpArgs,
    success: Schema.Struct({
      url: Schema.String,
      status: Schema.Number,
      contentType: Schema.NullOr(Schema.String),
      body: Schema.String,
      bytes: Schema.Number,
      hops: Schema.Array(Schema.Struct({ url: Schema.String, host: Schema.String, address: Schema.String, status: Schema.Number }))
    }),
    idempotent: true,
    handler: (args) =>
      Effect.gen(function*() {
        const rule = yield* ruleFor(policy, "http.get")
        // Interrupting the call (a kernel timeout, Ctrl-C) aborts the request.
        const outcome = yield* Effect.promise((signal) => get(rule, args.url, transport, signal))
        switch (outcome._tag) {
          case "denied":
            return yield* denied("http.get", outcome.reason)
          case "error":
            return yield* Effect.fail(new Error(outcome.reason))
          case "ok": {
            const r = outcome.response
            return { url: r.url, status: r.status, contentType: r.contentType ?? null, body: r.body, bytes: r.bytes, hops: r.hops }
          }
        }
      })
  }),
  defineTool({
    name: "shell.run",
    ...approvalOf(policy, "shell.run", approvals),
    description: "Runs an allowed executable with arguments (argv, never a shell) in the workspace. Returns exit code and output.",
    parameters: ShellArgs,
    success: Schema.Struct({ exitCode: Schema.NullOr(Schema.Number), signal: Schema.NullOr(Schema.String), stdout: Schema.String, stderr: Schema.String }),
    // The policy's timeout, declared to the kernel (a second later, so the sandbox's own kill reports it first): a
    // call in doubt cannot be reconciled while it may still be running (`Kernel.reconcile`).
    timeout: shellTimeout(policy),
    handler: (args) =>
      Effect.gen(function*() {
        const rule = yield* ruleFor(policy, "shell.run")
        const d = checkCommand(policy.baseDir, rule, ruleOrUndefined(policy, "fs.read"), args.command, args.args)
        if (!d.ok) return yield* denied("shell.run", d.reason)
        const unavailable = containmentMissing(rule)
        if (unavailable !== undefined) return yield* denied("shell.run", unavailable)
        // Interrupting the call kills the process group.
        const outcome = yield* Effect.promise((signal) =>
          run(policy.baseDir, rule, d, signal, { read: ruleOrUndefined(policy, "fs.read"), write: ruleOrUndefined(policy, "fs.write") })
        )
        if (outcome._tag === "error") return yield* Effect.fail(new Error(outcome.reason))
        return outcome.result
      })
  })
]

/**
 * The plugin, reaching the network through `transport` (the system's by default; tests give their own), with the
 * `approvals` decided in code (predicates are code, not config: the policy file holds `approval: required`).
 */
export const makePlugin = (options: Pick<Options, "transport" | "approvals"> = {}): Plugin.Plugin<Config, typeof Config.Encoded> =>
  definePlugin({
    name: "@artana/sandbox",
    version: "0.1.0",
    capabilities: [],
    configSchema: Config,
    tools: (config) => tools({ baseDir: path.resolve(config.baseDir), document: config.policy }, options.transport, options.approvals),
    middleware: (config) => [middleware({ baseDir: path.resolve(config.baseDir), document: config.policy })]
  })

/** The sandbox plugin. */
export const plugin: Plugin.Plugin<Config, typeof Config.Encoded> = makePlugin()

export interface Options {
  /** How `http.get` resolves names and connects: the system's by default; tests give `Transport.fake`. */
  readonly transport?: Transport.Transport | undefined
  /** Approvals decided in code, per tool (see `Approvals`): they add to the policy's `approval: required`. */
  readonly approvals?: Approvals | undefined
}

/**
 * The sandbox for a policy, loaded through the plugin SDK like any plugin: its four tools and its middleware. A
 * decoded policy always loads (a failure here is a defect).
 *
 * @example
 * const loaded = yield* Policy.load("policy.yaml")
 * const sandbox = yield* Sandbox.load(loaded)
 * // sandbox.tools: fs.read, fs.write, http.get, shell.run; sandbox.middleware: [the policy's pre-check]
 */
export const load = (policy: PolicyInput, options: Options = {}): Effect.Effect<Plugin.Loaded> =>
  Effect.orDie(Plugin.load(options.transport === undefined && options.approvals === undefined ? plugin : makePlugin(options), configOf(policy)))

/**
 * The `ToolRegistry` (the sandbox's tools, after the host's own `tools`) and the `Middleware` chain (the host's
 * `middleware`, then the sandbox's pre-check) for `Kernel.layer`.
 */
export const layer = (
  policy: PolicyInput,
  options: Options & Plugins.LayerOptions = {}
): Layer.Layer<ToolRegistry.ToolRegistry | Middleware.Middleware> =>
  Layer.unwrapScoped(Effect.zipRight(sandboxes(policy), Effect.map(load(policy, options), (loaded) => Plugins.layer([loaded], options))))

/**
 * Holds the sandboxes `shell.run` keeps for a policy (one long-lived bubblewrap sandbox per policy, see the README)
 * for the current scope: when it closes (and no other scope holds the same policy), they are stopped. `layer` does
 * this for its own scope; a host that uses `tools` or `load` directly holds them with this, or they live until the
 * process ends.
 *
 * @example
 * yield* Effect.scoped(Effect.gen(function*() {
 *   yield* Sandbox.sandboxes(policy)
 *   // ... shell.run calls under `policy` ...
 * })) // the policy's sandboxes are stopped here
 */
export const sandboxes = (policy: PolicyInput): Effect.Effect<void, never, Scope.Scope> => {
  // The policy as given (for `tools`) and as the plugin decodes it (for `load` and `layer`: defaults filled in).
  const given = policyOf(policy)
  const config = Schema.decodeSync(Config)(configOf(policy))
  const keys = new Set([given, { baseDir: config.baseDir, document: config.policy }].flatMap(shellKey))
  return Effect.asVoid(Effect.acquireRelease(
    Effect.sync(() => [...keys].map(hold)),
    (releases) => Effect.sync(() => releases.forEach((release) => release()))
  ))
}

/** The key `shell.run`'s sandboxes are kept under for a policy (none when its commands are not contained). */
const shellKey = (policy: Policy.Policy): ReadonlyArray<string> => {
  const rule = ruleOrUndefined(policy, "shell.run")
  if (rule === undefined || rule.containment === "none") return []
  return [policyKey(policy.baseDir, rule, { read: ruleOrUndefined(policy, "fs.read"), write: ruleOrUndefined(policy, "fs.write") })]
}
