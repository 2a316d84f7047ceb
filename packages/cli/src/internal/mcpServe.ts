/**
 * `artana mcp serve`: the policy's tools (the sandbox's and its MCP servers') served as an MCP server, each call a run
 * of its own (`Kernel.callTool`): logged, hash-chained and governed by the policy like a plan step. Over stdio, or
 * over Streamable HTTP: bound to 127.0.0.1 by default; on any other address a bearer token is required, printed once
 * and kept only as its SHA-256, and a request without it gets 401 with nothing run.
 */
import { Json, Kernel, type Tenant, type Tool } from "@artana/core"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as ExitCode from "../ExitCode.js"
import * as Database from "./database.js"
import * as Out from "./output.js"
import type { Common } from "./planCommands.js"
import * as Services from "./services.js"
import * as Toolbox from "./toolbox.js"

export interface ServeArgs extends Common {
  readonly policy: string
  /** `HOST:PORT` to serve Streamable HTTP on; stdio when absent. */
  readonly http: string | undefined
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"])

const text = (value: string, isError = false): CallToolResult => ({ content: [{ type: "text", text: value }], ...(isError ? { isError } : {}) })

/** The MCP server: the tools, and each call run through the kernel as a run of its own. */
const makeServer = (tools: ReadonlyArray<Tool.Tool>, tenant: Tenant.TenantContext, run: <A>(effect: Effect.Effect<A, unknown, Kernel.Kernel>) => Promise<A>) => {
  const server = new Server({ name: "artana", version: "0.1.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, () =>
    Promise.resolve({
      tools: tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: { type: "object" as const, ...t.spec.parameters },
        annotations: { idempotentHint: t.idempotent }
      }))
    }))
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const args = Json.fromUnknown(request.params.arguments ?? {})
    if (!args.ok) return text(`the arguments are not JSON: ${args.error}`, true)
    const outcome = await run(Effect.either(Effect.flatMap(Kernel.Kernel, (kernel) => kernel.callTool({ tenant, tool: request.params.name, args: args.json }))))
    if (Either.isLeft(outcome)) {
      const error = outcome.left
      return text(typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error), true)
    }
    const result = outcome.right
    if (result.status === "completed") {
      return { content: [{ type: "text", text: JSON.stringify(result.output) }], ...(Json.isObject(result.output) ? { structuredContent: result.output } : {}) }
    }
    if (result.status === "needs_reconciliation") return text(`run ${result.runId}: the call is in doubt and needs reconciliation (artana reconcile)`, true)
    return text(`run ${result.runId} is ${result.status}`, true)
  })
  return server
}

const sha256 = (s: string) => createHash("sha256").update(s).digest()

/** `artana mcp serve --policy POLICY [--http HOST:PORT]`: runs until interrupted (Ctrl-C, SIGTERM, stdin closed). */
export const serve = (args: ServeArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const toolbox = yield* Toolbox.fromPolicyFile(args.policy, undefined, args.tenant)
    const tenant = yield* Services.tenant(args.tenant, toolbox.tools)
    const kernel = Services.kernel({ store: Database.layer(Database.parse(args.db), { create: true }), tools: toolbox.tools, middleware: toolbox.middleware, auditKey: args.auditKey })
    // Built in the command's scope: the store stays open while the server serves.
    const runtime = yield* Effect.provide(Effect.runtime<Kernel.Kernel>(), yield* Layer.build(kernel))
    const run = <A>(effect: Effect.Effect<A, unknown, Kernel.Kernel>) => Runtime.runPromise(runtime)(effect)

    if (args.http === undefined) {
      const server = makeServer(toolbox.tools, tenant, run)
      yield* Effect.acquireRelease(Effect.promise(() => server.connect(new StdioServerTransport())), () => Effect.promise(() => server.close()))
      // Served until the client closes stdin (or the command is interrupted).
      yield* Effect.async<void>((resume) => {
        server.onclose = () => resume(Effect.void)
      })
      return ExitCode.Ok
    }

    const at = args.http.lastIndexOf(":")
    const host = at < 0 ? args.http : args.http.slice(0, at)
    const port = at < 0 ? 0 : Number(args.http.slice(at + 1))
    // Anywhere but loopback, a bearer token: printed once, kept only as its hash.
    const token = LOOPBACK.has(host) ? undefined : randomBytes(32).toString("base64url")
    const expected = token === undefined ? undefined : sha256(`Bearer ${token}`)
    const allowed = (header: string | undefined) => expected === undefined || (header !== undefined && timingSafeEqual(sha256(header), expected))

    const listener = http.createServer((req, res) => {
      if (!allowed(req.headers.authorization)) {
        res.writeHead(401, { "WWW-Authenticate": "Bearer" }).end()
        return
      }
      const transport = new StreamableHTTPServerTransport({})
      const server = makeServer(toolbox.tools, tenant, run)
      res.on("close", () => {
        void transport.close()
        void server.close()
      })
      void server.connect(transport).then(() => transport.handleRequest(req, res))
    })
    const address = yield* Effect.acquireRelease(
      Effect.async<AddressInfo>((resume) => {
        listener.listen(port, host, () => {
          const bound = listener.address()
          resume(typeof bound === "object" && bound !== null ? Effect.succeed(bound) : Effect.dieMessage(`listening on ${String(bound)}`))
        })
      }),
      () => Effect.async<void>((resume) => {
        listener.closeAllConnections()
        listener.close(() => resume(Effect.void))
      })
    )
    const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}/mcp`
    yield* Out.stderr(`artana mcp serve: ${toolbox.tools.length} tools at ${url}`)
    if (token !== undefined) yield* Out.stderr(`bearer token (shown once, kept only hashed): ${token}`)
    return yield* Effect.never
  })))
