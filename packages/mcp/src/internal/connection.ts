// One server's connection: made on first use (a stdio server is started then), made again after it closed (a
// server that died is started again for the next call), closed with the layer's scope.
import { Errors, Json } from "@artana/core"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import * as Config from "effect/Config"
import type * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { isStdio, type Server } from "../McpConfig.js"
import { McpServerError } from "../McpErrors.js"
import type * as SdkModule from "./sdk.js"

export interface Connection {
  readonly server: Server
  readonly list: Effect.Effect<ReadonlyArray<McpTool>, McpServerError>
  /**
   * Calls a tool. A failure the server answered (a JSON-RPC error) or that happened before the request was sent is
   * a `ToolError`; one after it was sent, with no answer (the server died, the connection broke), is
   * `ToolOutcomeUnknown`: the call may have acted.
   */
  readonly call: (
    tool: string,
    qualified: string,
    args: Json.Json,
    options: { readonly signal: AbortSignal; readonly timeoutMs: number }
  ) => Effect.Effect<unknown, Errors.ToolError | Errors.ToolOutcomeUnknown>
  readonly close: Effect.Effect<void>
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

type Sdk = typeof SdkModule

let sdkLoaded: Promise<Sdk> | undefined
/** The MCP SDK, loaded on the first connection of the process (see `sdk.ts`). */
const sdk = (server: string): Effect.Effect<Sdk, McpServerError> =>
  Effect.tryPromise({
    try: () => (sdkLoaded ??= import("./sdk.js")),
    catch: (cause) => new McpServerError({ server, reason: `cannot load the MCP SDK: ${messageOf(cause)}`, cause })
  })

/** `${NAME}` replaced by the variable's value, read through Effect's `Config` (the environment by default). */
const interpolate = (server: string, where: string, template: string): Effect.Effect<Redacted.Redacted<string>, McpServerError> =>
  Effect.gen(function*() {
    let out = ""
    let last = 0
    for (const match of template.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
      const name = match[1]!
      const value = yield* Effect.mapError(
        Config.redacted(name),
        () => new McpServerError({ server, reason: `${where} reads the environment variable ${name}, which is not set` })
      )
      out += template.slice(last, match.index) + Redacted.value(value)
      last = match.index + match[0].length
    }
    return Redacted.make(out + template.slice(last))
  })

const resolveAll = (server: string, what: string, record: Readonly<Record<string, string>> | undefined) =>
  Effect.map(
    Effect.forEach(Object.entries(record ?? {}), ([k, v]) => Effect.map(interpolate(server, `${what} ${k}`, v), (r) => [k, Redacted.value(r)] as const)),
    (entries) => Object.fromEntries(entries)
  )

const transportOf = (server: Server, { getDefaultEnvironment, StdioClientTransport, StreamableHTTPClientTransport }: Sdk) =>
  Effect.gen(function*() {
    if (isStdio(server)) {
      const env = yield* resolveAll(server.name, "env", server.env)
      return new StdioClientTransport({
        command: server.command,
        args: [...(server.args ?? [])],
        env: { ...getDefaultEnvironment(), ...env },
        ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
        stderr: "inherit"
      })
    }
    const headers = yield* resolveAll(server.name, "header", server.headers)
    return new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } })
  })

/** Whether a failure to call means the request never reached the server (so it cannot have acted). */
const neverSent = (e: unknown): boolean => {
  // The SDK's stdio transport refuses to send once its process is gone (before its close event reached us).
  if (e instanceof Error && e.message === "Not connected") return true
  for (let cause: unknown = e, depth = 0; cause !== undefined && depth < 5; depth++) {
    if (typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ECONNREFUSED") return true
    cause = typeof cause === "object" && cause !== null && "cause" in cause ? cause.cause : undefined
  }
  return false
}

/**
 * `provider` is the `ConfigProvider` the layer was built with: `${NAME}`s are read through it when the server is first
 * connected (in a tool call, whose own services are emptied by the plugin SDK).
 */
export const make = (server: Server, provider: ConfigProvider.ConfigProvider): Connection => {
  let current: Promise<{ readonly client: Client; readonly sdk: Sdk }> | undefined
  let closed = false

  const connect = Effect.gen(function*() {
    if (closed) return yield* new McpServerError({ server: server.name, reason: "the connections were closed with their layer" })
    if (current === undefined) {
      const loaded = yield* sdk(server.name)
      const transport = yield* Effect.withConfigProvider(transportOf(server, loaded), provider)
      const client = new loaded.Client({ name: "artana", version: "0.1.0" }, { capabilities: {} })
      const connecting = client.connect(transport).then(() => ({ client, sdk: loaded }))
      current = connecting
      // A server that went away is connected again (started again) on next use.
      client.onclose = () => {
        if (current === connecting) current = undefined
      }
      connecting.catch(() => {
        if (current === connecting) current = undefined
      })
    }
    const pending = current
    return yield* Effect.tryPromise({
      try: () => pending,
      catch: (cause) => new McpServerError({ server: server.name, reason: `cannot connect: ${messageOf(cause)}`, cause })
    })
  })

  const list = Effect.gen(function*() {
    const { client } = yield* connect
    const tools: Array<McpTool> = []
    let cursor: string | undefined
    do {
      const page = yield* Effect.tryPromise({
        try: () => client.listTools(cursor === undefined ? {} : { cursor }),
        catch: (cause) => new McpServerError({ server: server.name, reason: `listing its tools failed: ${messageOf(cause)}`, cause })
      })
      tools.push(...page.tools)
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return tools
  }).pipe(Effect.withSpan("Mcp.listTools", { attributes: { server: server.name } }))

  const call: Connection["call"] = (tool, qualified, args, options) =>
    Effect.gen(function*() {
      // The schema the arguments were validated with is an object schema: anything else never reaches a server.
      if (!Json.isObject(args)) return yield* new Errors.ToolError({ tool: qualified, reason: "the arguments are not a JSON object" })
      const { client, sdk: { ErrorCode, McpError, StreamableHTTPError } } = yield* Effect.mapError(
        connect,
        (e) => new Errors.ToolError({ tool: qualified, reason: e.message, cause: e })
      )
      return yield* Effect.tryPromise({
        try: (interrupted) =>
          client.callTool({ name: tool, arguments: args }, undefined, {
            signal: AbortSignal.any([interrupted, options.signal]),
            // Artana's own timeout ends the call first (and cancels it); the SDK's is a backstop.
            timeout: options.timeoutMs + 5_000
          }),
        catch: (e): Errors.ToolError | Errors.ToolOutcomeUnknown => {
          if (e instanceof McpError && e.code !== ErrorCode.ConnectionClosed) {
            return new Errors.ToolError({ tool: qualified, reason: e.message, timedOut: e.code === ErrorCode.RequestTimeout })
          }
          if (neverSent(e)) return new Errors.ToolError({ tool: qualified, reason: `server "${server.name}" cannot be reached: ${messageOf(e)}` })
          // An HTTP 4xx refuses the request itself (a token revoked, a bad request): it did not act.
          if (e instanceof StreamableHTTPError && e.code !== undefined && e.code >= 400 && e.code < 500) {
            return new Errors.ToolError({ tool: qualified, reason: `server "${server.name}" refused the call: ${e.message}` })
          }
          return new Errors.ToolOutcomeUnknown({ tool: qualified, reason: `server "${server.name}" went away during the call: ${messageOf(e)}` })
        }
      })
    }).pipe(Effect.withSpan("Mcp.callTool", { attributes: { server: server.name, tool } }))

  const close = Effect.promise(async () => {
    closed = true
    const pending = current
    current = undefined
    if (pending === undefined) return
    try {
      await (await pending).client.close()
    } catch {
      // Closing a connection that failed: nothing to release.
    }
  })

  return { server, list, call, close }
}
