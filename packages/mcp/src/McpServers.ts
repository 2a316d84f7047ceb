/**
 * `McpServers`: the connections to the configured MCP servers, for the layer's lifetime. A server is connected on
 * first use (a stdio server's process is started then, so a replay, which calls no tool and lists nothing, never
 * starts one), connected again after it went away, and closed when the layer's scope closes (a stdio server's
 * process is ended: stdin closed, then SIGTERM, then SIGKILL). Each tenant has its own connection to a server unless
 * the server's config says `sessions: shared`; a tenant's connection unused for the server's `idle_timeout_ms` is
 * closed (see `internal/sessions.ts`).
 *
 * Provide it to the kernel's layer so workflows find it (`McpTools.load`):
 *
 * ```ts
 * const KernelLive = Kernel.layer().pipe(Layer.provideMerge(Layer.mergeAll(store, model, ToolRegistry.layer([]), McpServers.layer(config))))
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Tool } from "@artana/core"
import * as McpConfig from "./McpConfig.js"
import { InvalidMcpConfig, McpServerError } from "./McpErrors.js"
import type * as Connection from "./internal/connection.js"
import * as Sessions from "./internal/sessions.js"

export interface Options {
  /**
   * Where images (and other binary content) that tools return are written, content-addressed
   * (`<sha256>.<ext>`): the log holds only the reference. Unset: only the reference is kept.
   */
  readonly saveBinariesTo?: string | undefined
}

export interface Service {
  readonly config: McpConfig.Config
  readonly options: Options
  /**
   * The connection to a configured server that `tenantId` uses: its own (`sessions: per_tenant`, the default) or the
   * process's (`shared`). Without a tenant (a listing outside any run), the process's own.
   */
  readonly connection: (server: string, tenantId?: string) => Connection.Connection | undefined
}

/** The connections to the configured MCP servers. */
export class McpServers extends Context.Tag("@artana/mcp/McpServers")<McpServers, Service>() {}

/** Decodes a config given as plain data (a policy's `mcp:` section, JSON), naming the path of the first problem. */
export const decodeConfig = (input: unknown): Either.Either<McpConfig.Config, InvalidMcpConfig> =>
  Either.mapLeft(Schema.decodeUnknownEither(McpConfig.Config)(input, { errors: "first", onExcessProperty: "error" }), (e) => {
    const issue = Tool.firstIssue(e)
    return new InvalidMcpConfig({ path: issue.path, reason: issue.reason })
  })

/** The connections, closed when `scope` closes. */
export const make = (config: McpConfig.Config, options: Options = {}): Effect.Effect<Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const provider = yield* Effect.configProviderWith(Effect.succeed)
    const servers = new Map(config.servers.map((s) => [s.name, Sessions.make(s, provider)] as const))
    yield* Effect.addFinalizer(() => Effect.forEach([...servers.values()], (s) => s.close, { concurrency: "unbounded", discard: true }))
    // Tenants' idle connections are closed by a sweep, as often as half the shortest idle time (at least every 50 ms).
    const idles = config.servers.filter(Sessions.perTenant).map(Sessions.idleMillis)
    if (idles.length > 0) {
      const every = Math.max(50, Math.floor(Math.min(...idles) / 2))
      const sweep = Effect.suspend(() => Effect.forEach([...servers.values()], (s) => s.sweep(Date.now()), { discard: true }))
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(every), sweep)))
    }
    return { config, options, connection: (server, tenantId) => servers.get(server)?.connection(tenantId) }
  })

/**
 * The servers of `config` (a decoded `McpConfig.Config`, or plain data checked here).
 *
 * @example
 * const servers = McpServers.layer({ servers: [{ name: "files", command: "node", args: ["files-server.js"] }] })
 */
export const layer = (config: unknown, options: Options = {}): Layer.Layer<McpServers, InvalidMcpConfig> =>
  Layer.scoped(
    McpServers,
    Effect.flatMap(decodeConfig(config), (decoded) => make(decoded, options))
  )

/** The connection to `server` that `tenantId` uses, or a `McpServerError` naming the configured ones. */
export const connectionOf = (service: Service, server: string, tenantId?: string): Effect.Effect<Connection.Connection, McpServerError> => {
  const connection = service.connection(server, tenantId)
  return connection === undefined
    ? Effect.fail(new McpServerError({ server, reason: `no such server; configured: ${service.config.servers.map((s) => s.name).join(", ") || "none"}` }))
    : Effect.succeed(connection)
}
