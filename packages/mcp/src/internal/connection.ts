// One server's connection: made on first use (a stdio server is started then), made again after it closed (a
// server that died is started again for the next call), closed with the layer's scope.
import { Errors, Json } from "@artana/core"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import * as Config from "effect/Config"
import type * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
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
   * `ToolOutcomeUnknown`: the call may have acted. No answer within `timeoutMs` (the request was sent, then
   * cancelled) is a `ToolError` with `timedOut`: the caller knows whether the tool is safe to repeat (see `McpTools`).
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

interface Connected {
  readonly client: Client
  readonly sdk: Sdk
  /** Ends the connection at once, for a server given up on (see `abandon`). */
  readonly abandon: () => Promise<void>
}

/** Bounds the wait for a killed process to be reaped: a grandchild holding its pipes may delay its close event. */
const REAPED_WITHIN_MS = 5_000

/**
 * Ends a connection given up on (a server that did not answer `initialize` or `tools/list` in time). `client.close()`
 * is not enough: it closes the stdio child's stdin and waits before signalling, and once a failed `connect` has begun
 * closing the transport it no longer holds the process, so a child that ignores its stdin (a hung server) was left
 * running. The child is killed by the pid taken when it was spawned, and awaited until the transport saw it close
 * (the process reaped, so the pid is gone).
 */
/** The transport's close, as the client saw it: a promise, and whether it has happened. */
interface Closing {
  readonly done: Promise<void>
  readonly seen: () => boolean
}

const abandonment = (client: Client, pid: number | null, closed: Closing) => async (): Promise<void> => {
  if (pid === null) {
    await client.close().catch(() => undefined)
    return
  }
  // Already closed (exited at start, say): its pid may belong to another process by now.
  if (closed.seen()) return
  try {
    process.kill(pid, "SIGKILL")
  } catch {
    // Already gone.
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([closed.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, REAPED_WITHIN_MS)))])
  clearTimeout(timer)
}

/** Whether a failure is the SDK's request timeout (`timeout_ms` passed), so the message can say which deadline. */
const timedOut = ({ ErrorCode, McpError }: Sdk, e: unknown): boolean => e instanceof McpError && e.code === ErrorCode.RequestTimeout

/** What a call's failure says about its outcome (see `Connection.call`). */
const callFailure = (
  { ErrorCode, McpError, StreamableHTTPError }: Sdk,
  server: string,
  qualified: string,
  e: unknown
): Errors.ToolError | Errors.ToolOutcomeUnknown => {
  if (e instanceof McpError && e.code !== ErrorCode.ConnectionClosed) {
    return new Errors.ToolError({ tool: qualified, reason: e.message, timedOut: e.code === ErrorCode.RequestTimeout })
  }
  if (neverSent(e)) return new Errors.ToolError({ tool: qualified, reason: `server "${server}" cannot be reached: ${messageOf(e)}` })
  // An HTTP 4xx refuses the request itself (a token revoked, a bad request): it did not act.
  if (e instanceof StreamableHTTPError && e.code !== undefined && e.code >= 400 && e.code < 500) {
    return new Errors.ToolError({ tool: qualified, reason: `server "${server}" refused the call: ${e.message}` })
  }
  return new Errors.ToolOutcomeUnknown({ tool: qualified, reason: `server "${server}" went away during the call: ${messageOf(e)}` })
}

type Transport = Effect.Effect.Success<ReturnType<typeof transportOf>>

/**
 * Connects a client to the server over `transport` (a stdio server's process is spawned here); `wentAway` hears the
 * transport's close. A failed `initialize` abandons the server (its process killed), as one given up on.
 */
const startClient = (server: Server, loaded: Sdk, transport: Transport, timeoutMs: number, wentAway: () => void): Promise<Connected> => {
  const client = new loaded.Client({ name: "artana", version: "0.1.0" }, { capabilities: {} })
  let seen = false
  let onClosed = (): void => undefined
  const done = new Promise<void>((resolve) => (onClosed = () => {
    seen = true
    resolve()
  }))
  const started = client.connect(transport, { timeout: timeoutMs })
  // Spawned synchronously by `connect`: the pid is known now, before a failed `connect` lets go of the process.
  const abandon = abandonment(client, transport instanceof loaded.StdioClientTransport ? transport.pid : null, { done, seen: () => seen })
  client.onclose = () => {
    onClosed()
    wentAway()
  }
  return started.then(
    (): Connected => ({ client, sdk: loaded, abandon }),
    async (e: unknown) => {
      await abandon()
      throw new McpServerError({
        server: server.name,
        reason: timedOut(loaded, e) ? `did not answer initialize within its timeout_ms (${timeoutMs} ms)` : `cannot connect: ${messageOf(e)}`,
        cause: e
      })
    }
  )
}

/**
 * `provider` is the `ConfigProvider` the layer was built with: `${NAME}`s are read through it when the server is first
 * connected (in a tool call, whose own services are emptied by the plugin SDK). `initialize` and `tools/list` wait at
 * most the server's `timeout_ms` (default 60 s); a server that does not answer in time is given up on and its process
 * killed.
 */
export const make = (server: Server, provider: ConfigProvider.ConfigProvider): Connection => {
  let current: Promise<Connected> | undefined
  let closed = false
  const timeoutMs = server.timeout_ms ?? 60_000

  const closedError = () => new McpServerError({ server: server.name, reason: "the connections were closed with their layer" })

  // The connection being made, claimed in one synchronous step (before any wait): two uses at once share one process,
  // and a close that comes while the SDK loads finds it and is seen before anything is started.
  const open = (): Promise<Connected> => {
    const connecting: Promise<Connected> = Effect.runPromise(Effect.either(Effect.gen(function*() {
      const loaded = yield* sdk(server.name)
      const transport = yield* Effect.withConfigProvider(transportOf(server, loaded), provider)
      return { loaded, transport }
    }))).then((prepared) => {
      if (prepared._tag === "Left") throw prepared.left
      if (closed) throw closedError()
      const { loaded, transport } = prepared.right
      // A server that went away is connected again (started again) on next use.
      return startClient(server, loaded, transport, timeoutMs, () => {
        if (current === connecting) current = undefined
      })
    })
    connecting.catch(() => {
      if (current === connecting) current = undefined
    })
    return connecting
  }

  const connect = Effect.gen(function*() {
    if (closed) return yield* closedError()
    if (current === undefined) current = open()
    const pending = current
    return yield* Effect.tryPromise({
      try: () => pending,
      catch: (cause) =>
        cause instanceof McpServerError ? cause : new McpServerError({ server: server.name, reason: `cannot connect: ${messageOf(cause)}`, cause })
    })
  })

  const list = Effect.gen(function*() {
    const { abandon, client, sdk: loaded } = yield* connect
    const tools: Array<McpTool> = []
    let cursor: string | undefined
    do {
      const params = cursor === undefined ? {} : { cursor }
      const page = yield* Effect.tryPromise({
        try: () =>
          client.listTools(params, { timeout: timeoutMs }).catch(async (e: unknown) => {
            // A server that does not list its tools in time is hung: it is stopped, and started again on next use.
            if (timedOut(loaded, e)) await abandon()
            throw e
          }),
        catch: (cause) =>
          new McpServerError({
            server: server.name,
            reason: timedOut(loaded, cause) ? `did not list its tools within its timeout_ms (${timeoutMs} ms)` : `listing its tools failed: ${messageOf(cause)}`,
            cause
          })
      })
      tools.push(...page.tools)
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return tools
  }).pipe(Effect.withSpan("Mcp.listTools", { attributes: { server: server.name } }))

  const call: Connection["call"] = (tool, qualified, args, options) => {
    // Whether the request left: a deadline passed before it did (still connecting) means nothing was sent.
    let sending = false
    const attempt = Effect.gen(function*() {
      // The schema the arguments were validated with is an object schema: anything else never reaches a server.
      if (!Json.isObject(args)) return yield* new Errors.ToolError({ tool: qualified, reason: "the arguments are not a JSON object" })
      const { client, sdk: loaded } = yield* Effect.mapError(
        connect,
        (e) => new Errors.ToolError({ tool: qualified, reason: e.message, cause: e })
      )
      sending = true
      return yield* Effect.tryPromise({
        try: (interrupted) =>
          client.callTool({ name: tool, arguments: args }, undefined, {
            signal: AbortSignal.any([interrupted, options.signal]),
            // The timeout below ends the call first (and cancels it: interrupted); the SDK's is a backstop.
            timeout: options.timeoutMs + 5_000
          }),
        catch: (e) => callFailure(loaded, server.name, qualified, e)
      })
    })
    return Effect.timeoutFail(attempt, {
      duration: Duration.millis(options.timeoutMs),
      onTimeout: () =>
        sending
          ? new Errors.ToolError({ tool: qualified, reason: `no answer within ${options.timeoutMs} ms; the request was cancelled`, timedOut: true })
          : new Errors.ToolError({ tool: qualified, reason: `server "${server.name}" was not connected within ${options.timeoutMs} ms; nothing was sent` })
    }).pipe(Effect.withSpan("Mcp.callTool", { attributes: { server: server.name, tool } }))
  }

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
