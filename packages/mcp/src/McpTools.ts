/**
 * MCP tools as governed Artana tools, listed once per run and logged.
 *
 * `load(ctx)` lists the servers' tools in a memoized step of the run (`ctx.step`, a `StepCompleted` whose value is
 * every tool as listed, its fingerprint, and whether it is offered or withheld and why): a resumed or replayed run
 * takes the list from its log and never asks a server, so the model sees the same tools and a replay needs no server
 * running. Each offered tool is a plugin-SDK tool named `server.tool`, with the server's description, its input
 * JSON Schema validated (Ajv, closed objects) before any call, the capability and idempotency the config maps, and
 * the call's timeout. Pass them to the model step:
 *
 * ```ts
 * const mcp = yield* McpTools.load(ctx)
 * const answer = yield* ctx.chat({ prompt, tools: mcp.tools })
 * ```
 *
 * @since 0.1.0
 */
import { Errors, Json, Tool, type Workflow } from "@artana/core"
import { defineTool, PluginTool } from "@artana/plugin-sdk"
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as McpConfig from "./McpConfig.js"
import { type McpServerError, McpToolOutputInvalid } from "./McpErrors.js"
import { connectionOf, McpServers, type Service } from "./McpServers.js"
import { toOutput } from "./internal/result.js"

/**
 * A tool as its server listed it: what the model would see, and the hints and output schema Artana may act on.
 * `destructiveHint` and `outputSchema` are optional so lists logged before they were recorded still decode.
 */
export const Listed = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  inputSchema: Json.Json,
  readOnlyHint: Schema.optional(Schema.Boolean),
  idempotentHint: Schema.optional(Schema.Boolean),
  destructiveHint: Schema.optional(Schema.Boolean),
  outputSchema: Schema.optional(Json.Json)
})
export type Listed = typeof Listed.Type

/** One tool of the run's list: as listed, its fingerprint, and the decision taken on it. */
export const Entry = Schema.Struct({
  server: Schema.String,
  tool: Listed,
  fingerprint: Schema.String,
  decision: Schema.Literal("offered", "withheld"),
  /** Why a withheld tool is withheld. */
  reason: Schema.optional(Schema.String)
})
export type Entry = typeof Entry.Type

/** The value of the run's tool-list step. */
export const ToolList = Schema.Struct({ entries: Schema.Array(Entry) })
export type ToolList = typeof ToolList.Type

/** What a fingerprint covers: what the model reads, and every hint or schema that changes how a call is governed. */
export type Fingerprinted = Pick<Listed, "name" | "description" | "inputSchema" | "readOnlyHint" | "idempotentHint" | "destructiveHint" | "outputSchema">

/**
 * The fingerprint of a tool: SHA-256 of the canonical JSON of its name, description, input schema, and, when the
 * server lists them, its `readOnlyHint`, `idempotentHint`, `destructiveHint` and output schema (key order and spacing
 * do not matter). The hints decide whether a call is retried after a crash or left in doubt, so a pinned tool that
 * starts claiming to be read-only is withheld as changed, never silently made retryable. What `artana mcp pin` writes
 * and pins compare. A tool with none of the hints and no output schema keeps the fingerprint it had before they were
 * covered.
 */
export const fingerprint = (tool: Fingerprinted): string =>
  Json.hash({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.readOnlyHint === undefined ? {} : { readOnlyHint: tool.readOnlyHint }),
    ...(tool.idempotentHint === undefined ? {} : { idempotentHint: tool.idempotentHint }),
    ...(tool.destructiveHint === undefined ? {} : { destructiveHint: tool.destructiveHint }),
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema })
  })

/** A listed MCP tool as the step logs it. */
export const listed = (tool: McpTool): Listed => {
  const schema = Json.fromUnknown(tool.inputSchema)
  const output = tool.outputSchema === undefined ? undefined : Json.fromUnknown(tool.outputSchema)
  const hints = tool.annotations
  return {
    name: tool.name,
    description: tool.description ?? "",
    inputSchema: schema.ok ? schema.json : {},
    ...(hints?.readOnlyHint === undefined ? {} : { readOnlyHint: hints.readOnlyHint }),
    ...(hints?.idempotentHint === undefined ? {} : { idempotentHint: hints.idempotentHint }),
    ...(hints?.destructiveHint === undefined ? {} : { destructiveHint: hints.destructiveHint }),
    // Came over JSON-RPC, so it is JSON.
    ...(output?.ok === true ? { outputSchema: output.json } : {})
  }
}

/** The name the model calls a server's tool by. */
export const qualifiedName = (server: string, tool: string): string => `${server}.${tool}`

/** Idempotency: the config's (tool, then server), else the server's hints, else not idempotent. */
export const idempotentOf = (server: McpConfig.Server, tool: Listed): boolean =>
  server.tools?.[tool.name]?.idempotent ?? server.idempotent ?? (tool.idempotentHint === true || tool.readOnlyHint === true)

const NAME = /^[a-zA-Z0-9_.-]{1,64}$/

/**
 * The check of a result against the tool's listed output schema (none without one). Done here, from the logged list,
 * and not left to the SDK client: a client that did not list the tools itself (a resumed run, another process) checks
 * nothing. Throws on a schema Ajv cannot compile (the tool is then withheld).
 */
const outputCheck = (name: string, tool: Listed): (output: Json.Json) => Effect.Effect<Json.Json, McpToolOutputInvalid> => {
  if (tool.outputSchema === undefined) return Effect.succeed
  if (!Json.isObject(tool.outputSchema)) throw new Error("its output schema is not a JSON object")
  const decode = Schema.decodeUnknownEither(PluginTool.jsonSchema(tool.outputSchema))
  return (output) => {
    const structured = Json.isObject(output) ? output.structuredContent : undefined
    if (structured === undefined) {
      return Effect.fail(new McpToolOutputInvalid({ tool: name, path: "$", reason: "is missing (the tool lists an output schema)" }))
    }
    return Either.match(decode(structured), {
      onLeft: (error) => Effect.fail(new McpToolOutputInvalid({ tool: name, ...Tool.firstIssue(error) })),
      onRight: () => Effect.succeed(output)
    })
  }
}

/**
 * A call that got no answer in time was sent, then cancelled: the server may have acted. A non-idempotent tool's call
 * is then of unknown outcome (its step in doubt, as after a crash: reconciliation), never a plain failure the model
 * may simply retry; an idempotent one stays a timeout, safe to repeat.
 */
const unansweredIsUnknown = (name: string, idempotent: boolean) => (e: Errors.ToolError | Errors.ToolOutcomeUnknown) =>
  e._tag === "ToolError" && e.timedOut === true && !idempotent
    ? Effect.fail(new Errors.ToolOutcomeUnknown({ tool: name, reason: `${e.reason}; the request had reached the server, which may have acted` }))
    : Effect.fail(e)

/**
 * The kernel's deadline for a call: a backstop only, past the call's own timeout (`Connection.call`), which ends it
 * first with the outcome above. `reconcile` also waits for it before it settles a call.
 */
const BACKSTOP_MS = 5_000

/** The governed tool for a listed one (a plugin-SDK tool: its arguments validated before the handler runs). */
const governed = (service: Service, server: McpConfig.Server, tool: Listed): Tool.Tool => {
  const name = qualifiedName(server.name, tool.name)
  const timeoutMs = McpConfig.timeoutOf(server, tool.name)
  const idempotent = idempotentOf(server, tool)
  const parameters = Json.isObject(tool.inputSchema) ? tool.inputSchema : {}
  const checkOutput = outputCheck(name, tool)
  return defineTool<Json.Json>({
    name,
    description: tool.description,
    parameters,
    requiresCapability: McpConfig.capabilityOf(server, tool.name),
    idempotent,
    timeout: timeoutMs + BACKSTOP_MS,
    ...McpConfig.approvalOf(server, tool.name),
    handler: (args, context) =>
      Effect.gen(function*() {
        const connection = yield* Effect.mapError(connectionOf(service, server.name, context.tenant.tenantId), (e) => new Errors.ToolError({ tool: name, reason: e.message }))
        const result = yield* Effect.catchAll(
          connection.call(tool.name, name, args, { signal: context.signal, timeoutMs }),
          unansweredIsUnknown(name, idempotent)
        )
        const output = toOutput(name, result, service.options.saveBinariesTo)
        return output.ok ? yield* checkOutput(output.output) : yield* output.error
      })
  })
}

/** Why a listed tool cannot be offered at all, whatever its pins: a name or schema Artana cannot govern. */
const unusable = (service: Service, server: McpConfig.Server, tool: Listed): string | undefined => {
  const name = qualifiedName(server.name, tool.name)
  if (!NAME.test(name)) return `its name "${name}" is not one the model APIs take (${NAME.source})`
  if (!Json.isObject(tool.inputSchema) || (tool.inputSchema.type !== undefined && tool.inputSchema.type !== "object")) {
    return "its input schema is not an object schema"
  }
  try {
    outputCheck(name, tool)
  } catch (e) {
    return `its output schema cannot be validated: ${e instanceof Error ? e.message : String(e)}`
  }
  try {
    governed(service, server, tool)
    return undefined
  } catch (e) {
    return `its input schema cannot be validated: ${e instanceof Error ? e.message : String(e)}`
  }
}

/** The decision on one listed tool: offered, or withheld (unusable, or not as pinned). */
export const decide = (service: Service, server: McpConfig.Server, tool: Listed): Entry => {
  const print = fingerprint(tool)
  const withheld = (reason: string): Entry => ({ server: server.name, tool, fingerprint: print, decision: "withheld", reason })
  const bad = unusable(service, server, tool)
  if (bad !== undefined) return withheld(bad)
  if (server.pins !== undefined) {
    const pinned = server.pins[tool.name]
    if (pinned === undefined) return withheld("not pinned: a person has not reviewed this tool (artana mcp pin)")
    if (pinned !== print) return withheld(`changed since it was pinned (fingerprint ${print}, pinned ${pinned}): review it and pin again (artana mcp pin)`)
  }
  return { server: server.name, tool, fingerprint: print, decision: "offered" }
}

/**
 * Lists the servers' tools now and decides on each (what the run's step logs), on `tenantId`'s connections (without
 * one, the process's own: see `McpServers.Service.connection`).
 */
export const list = (service: Service, servers?: ReadonlyArray<string>, tenantId?: string): Effect.Effect<ToolList, McpServerError> =>
  Effect.map(
    Effect.forEach(servers ?? service.config.servers.map((s) => s.name), (name) =>
      Effect.gen(function*() {
        const connection = yield* connectionOf(service, name, tenantId)
        const tools = yield* connection.list
        return tools.map((t) => decide(service, connection.server, listed(t)))
      }), { concurrency: "unbounded" }),
    (perServer) => ({ entries: perServer.flat() })
  )

/** What `load` returns: the tools to offer, and those withheld with why. */
export interface Loaded {
  readonly tools: ReadonlyArray<Tool.Tool>
  readonly withheld: ReadonlyArray<{ readonly tool: string; readonly reason: string }>
  /** The logged list itself. */
  readonly list: ToolList
}

/** The governed tools of a logged list (no server is asked). */
export const fromList = (service: Service, list: ToolList): Loaded => {
  const tools: Array<Tool.Tool> = []
  const withheld: Array<{ tool: string; reason: string }> = []
  for (const entry of list.entries) {
    const server = service.config.servers.find((s) => s.name === entry.server)
    const name = qualifiedName(entry.server, entry.tool.name)
    if (entry.decision === "withheld") withheld.push({ tool: name, reason: entry.reason ?? "withheld" })
    else if (server === undefined) withheld.push({ tool: name, reason: `server "${entry.server}" is no longer configured` })
    else tools.push(governed(service, server, entry.tool))
  }
  return { tools, withheld, list }
}

export interface LoadOptions {
  /** The servers to list (default all configured). */
  readonly servers?: ReadonlyArray<string> | undefined
  /** The step's key (default `step:<index>`, by call order). */
  readonly key?: string | undefined
}

/**
 * The servers' tools for this run: listed once, in a memoized step of the run whose value (`ToolList`) the log
 * keeps, so a resume or a replay takes the list from the log and asks no server. Needs `McpServers` in the kernel's
 * layer. A server that cannot be reached or listed fails the step with `McpServerError` (nothing is logged).
 *
 * @example
 * const mcp = yield* McpTools.load(ctx)
 * // mcp.withheld: [{ tool: "files.delete", reason: "changed since it was pinned (...)" }]
 * const answer = yield* ctx.chat({ prompt: "Summarize notes.txt", tools: mcp.tools })
 */
export const load = (ctx: Workflow.WorkflowContext, options: LoadOptions = {}): Effect.Effect<Loaded, McpServerError> =>
  Effect.gen(function*() {
    const found = yield* Effect.serviceOption(McpServers)
    if (Option.isNone(found)) {
      return yield* Effect.dieMessage("McpTools.load: no McpServers service; provide McpServers.layer(config) to the kernel's layer")
    }
    const service = found.value
    const logged = yield* ctx.step("mcp.tools", list(service, options.servers, ctx.tenant.tenantId), ToolList, { key: options.key })
    return fromList(service, logged)
  })

/**
 * The servers' tools as an agent extension (`@artana/agent`'s `Extension`, by its shape: this package does not import
 * the agent): each run of the agent lists them once, in a logged step keyed `tools:<name>:list`, and offers them with
 * its own tools; a resumed or replayed run takes them from its log.
 *
 * @example
 * const analyst = AutonomousAgent.make({ name: "analyst", instructions, extensions: [McpTools.agentExtension()] })
 */
export const agentExtension = (options: { readonly name?: string | undefined; readonly servers?: ReadonlyArray<string> | undefined } = {}): AgentExtension => ({
  name: options.name ?? "mcp",
  runTools: ({ ctx, key }) => Effect.map(load(ctx, { servers: options.servers, key: key("list") }), (loaded) => loaded.tools)
})

/** What `agentExtension` returns: an agent `Extension` with `runTools`. */
export interface AgentExtension {
  readonly name: string
  readonly runTools: (input: {
    readonly ctx: Workflow.WorkflowContext
    readonly key: (name: string) => string
  }) => Effect.Effect<ReadonlyArray<Tool.Tool>, McpServerError>
}
