/**
 * The tools a plan can call and the policy that governs them, from `@artana/sandbox` (its tools, its deny-by-default
 * policy engine as middleware, and its audit reader), loaded through `@artana/plugin-sdk` like every other plugin, and
 * the tools of the MCP servers the policy's `mcp:` section names (`@artana/mcp`): the CLI holds no policy logic of its
 * own.
 */
import { Json, type Middleware, type Tool } from "@artana/core"
import type { PluginErrors } from "@artana/plugin-sdk";
import { Plugin } from "@artana/plugin-sdk"
import { McpConfig, type McpErrors, McpServers, McpTools } from "@artana/mcp"
import { Policy, Sandbox } from "@artana/sandbox"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import type * as PlanRunner from "../PlanRunner.js"

export interface Toolbox {
  readonly tools: ReadonlyArray<Tool.Tool>
  readonly middleware: ReadonlyArray<Middleware.Interceptor>
  /** The policy as the run's input logs it. */
  readonly policy: PlanRunner.PolicyRecord | undefined
  /** The MCP servers' tools as the run's input logs them (listed once, when the run starts). */
  readonly mcp: McpTools.ToolList | undefined
  /** MCP tools withheld from the plan, and why (not pinned, changed since pinned, a schema no validator compiles). */
  readonly withheld: ReadonlyArray<{ readonly tool: string; readonly reason: string }>
}

/** A policy file that cannot be used: file, line, column, field and why (the sandbox's own error). */
export const PolicyError = Policy.PolicyError
export type PolicyError = Policy.PolicyError

const asPolicyError = (file: string) => (error: PluginErrors.PluginError): PolicyError =>
  new Policy.PolicyError({ file, field: error._tag === "InvalidPluginConfig" ? error.path.replace(/^\$\.policy/, "$") : "$", reason: error.message })

const load = (config: unknown, file: string) =>
  Effect.map(Effect.mapError(Plugin.load(Sandbox.plugin, config), asPolicyError(file)), (loaded) => ({ tools: loaded.tools, middleware: loaded.middleware }))

/** The policy's `mcp:` section, if any, from the policy's text (the sandbox checked the rest). */
const mcpConfig = (file: string, document: unknown) =>
  Effect.flatMap(
    Effect.try({ try: () => fs.readFileSync(file, "utf8"), catch: (e) => new Policy.PolicyError({ file, field: "$", reason: String(e) }) }),
    (text) =>
      typeof document === "object" && document !== null && "mcp" in document
        ? Either.match(McpConfig.fromPolicy(text, file), { onLeft: Effect.fail, onRight: Effect.succeed })
        : Effect.succeed(undefined)
  )

/**
 * The MCP servers' tools: listed now (`list` undefined), or rebuilt from a logged list (a replay, a reconciliation:
 * no server is asked). The connections end with `Scope`.
 */
const mcpTools = (config: McpConfig.Config | undefined, list: McpTools.ToolList | undefined, tenantId: string | undefined) =>
  Effect.gen(function*() {
    if (config === undefined) return { tools: [], mcp: undefined, withheld: [] }
    const servers = yield* McpServers.make(config)
    // On the tenant's connections, which its calls use: a per-tenant server is not started twice.
    const listed = list ?? (yield* McpTools.list(servers, undefined, tenantId))
    const built = McpTools.fromList(servers, listed)
    return { tools: built.tools, mcp: listed, withheld: built.withheld }
  })

/** The sandbox's tools and middleware under the policy in `file`, the MCP servers' tools, and the record the run logs of it. */
export const fromPolicyFile = (
  file: string,
  /** The MCP tool list a continued run logged: used instead of listing the servers again (once per run). */
  logged: McpTools.ToolList | undefined = undefined,
  /** The tenant whose connections the MCP servers are listed on (the one the run's calls will use). */
  tenantId: string | undefined = undefined
): Effect.Effect<Toolbox, PolicyError | McpErrors.McpError, Scope.Scope> =>
  Effect.gen(function*() {
    const loaded = yield* Policy.load(file)
    const document = Json.fromUnknown(loaded.source)
    if (!document.ok) return yield* new Policy.PolicyError({ file, field: "$", reason: `the policy is not JSON-compatible: ${document.error}` })
    const toolbox = yield* load(Sandbox.configOf(loaded), file)
    const mcp = yield* mcpTools(yield* mcpConfig(file, loaded.source), logged, tenantId)
    return {
      tools: [...toolbox.tools, ...mcp.tools],
      middleware: toolbox.middleware,
      policy: { file: loaded.file, sha256: loaded.sha256, document: document.json },
      mcp: mcp.mcp,
      withheld: mcp.withheld
    }
  })

/**
 * The tools of a logged run, rebuilt from its logged policy and MCP tool list (for a replay: their handlers never
 * run; they decode the logged results). A run logged without a policy has no sandbox tools.
 */
export const fromRecord = (
  record: PlanRunner.PolicyRecord | undefined,
  mcp: McpTools.ToolList | undefined = undefined
): Effect.Effect<Toolbox, PolicyError | McpErrors.McpError, Scope.Scope> =>
  Effect.gen(function*() {
    if (record === undefined) return { tools: [], middleware: [], policy: undefined, mcp: undefined, withheld: [] }
    const toolbox = yield* load({ baseDir: path.dirname(record.file), policy: record.document }, record.file)
    const logged = Json.isObject(record.document) ? record.document.mcp : undefined
    const config = logged === undefined ? undefined : yield* Either.match(McpServers.decodeConfig(logged), { onLeft: Effect.fail, onRight: Effect.succeed })
    const tools = yield* mcpTools(config, mcp ?? { entries: [] }, undefined)
    return { ...toolbox, tools: [...toolbox.tools, ...tools.tools], policy: record, mcp, withheld: tools.withheld }
  })
