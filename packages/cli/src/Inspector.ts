/**
 * The web inspector `artana ui` serves, for an application to serve over its own kernel: its workflows, model and
 * tools. Then the inbox's "respond" resumes a run paused for a person with the application's workflow, and (with
 * `resumeAfterDecision`) an approved or rejected call's run goes on at once, as `Artana.approve`/`reject` do; `artana ui`
 * knows plan runs only.
 *
 * @example
 * const server = yield* Inspector.serve({ tenant: "acme", allowActions: true, approver: "ops", resumeAfterDecision: true })
 * // server.url: http://127.0.0.1:8484/ — served until the scope closes
 * // provided with the application's layers: Kernel, EventStore, ToolRegistry
 *
 * @since 0.1.0
 */
import { Errors, type EventStore, type Kernel, type ToolRegistry } from "@artana/core"
import { serve as listenOn } from "@hono/node-server"
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { makeApp } from "./internal/ui/app.js"
import { cookieName, isLoopback, loopbackHosts, newToken } from "./internal/ui/guard.js"

export interface Options {
  /** The tenant shown first (the runs list has a field for another, unless `tenants` limits them); one of `tenants`. */
  readonly tenant: string
  /**
   * The only tenants served: a request naming another is refused (403), reads and actions alike. Default: any tenant a
   * request names. Give it when the inspector is for one tenant's people (`tenants: ["acme"]`).
   */
  readonly tenants?: ReadonlyArray<string> | undefined
  /**
   * Who decides, from the request: the identity the application (or its proxy) authenticated, e.g. a header its proxy
   * sets. When given, the form's approver is ignored (a tool's `approvers` then checks this identity), and a request it
   * names nobody for may not act. Default: the form's approver, which the person types (`approver` prefilled).
   */
  readonly approverOf?: ((request: Request) => string | undefined) | undefined
  /** The address to bind (default 127.0.0.1); any other requires the token `serve` makes (`Server.token`). */
  readonly host?: string | undefined
  /** The port (default 8484; 0: any free port, in `Server.url`). */
  readonly port?: number | undefined
  /** Let the inbox approve, reject and respond (default false: every POST is refused). */
  readonly allowActions?: boolean | undefined
  /** Who decides by default (editable in the form; logged with each decision). */
  readonly approver?: string | undefined
  /** The HMAC key the runs were hashed with, if any (the chain badge checks with it). */
  readonly auditKey?: Redacted.Redacted<string> | undefined
  /** The store as the header shows it (default "the application's store"). */
  readonly storeName?: string | undefined
  /** After a decision on a run that is not a plan run, resume it with the kernel (its workflow must be the kernel's). */
  readonly resumeAfterDecision?: boolean | undefined
}

/** A listening inspector. */
export interface Server {
  readonly url: string
  readonly port: number
  /** The token every request needs (off loopback), else undefined. */
  readonly token: string | undefined
}

/** Serves the inspector over the kernel and store in context until the scope closes. */
export const serve = (
  options: Options
): Effect.Effect<Server, Errors.InvalidInput, Scope.Scope | Kernel.Kernel | EventStore.EventStore | ToolRegistry.ToolRegistry> =>
  Effect.gen(function*() {
    if (options.tenants !== undefined && !options.tenants.includes(options.tenant)) {
      return yield* new Errors.InvalidInput({ what: "tenant", reason: `"${options.tenant}" is not one of the tenants served (tenants: ${options.tenants.join(", ")})` })
    }
    const context = yield* Effect.context<Kernel.Kernel | EventStore.EventStore | ToolRegistry.ToolRegistry>()
    const host = options.host ?? "127.0.0.1"
    const token = isLoopback(host) ? undefined : newToken()
    let port = options.port ?? 8484
    const app = makeApp({
      run: (effect) => Effect.runPromiseExit(Effect.provide(effect, context)),
      store: options.storeName ?? "the application's store",
      tenant: options.tenant,
      allowActions: options.allowActions === true,
      approver: options.approver ?? "",
      tenants: options.tenants === undefined ? undefined : new Set(options.tenants),
      approverOf: options.approverOf,
      auditKey: options.auditKey,
      resumeAfterDecision: options.resumeAfterDecision === true,
      guard: { token, csrf: newToken(), hosts: () => (token === undefined ? loopbackHosts(port) : undefined), cookie: () => cookieName(port) }
    })
    port = yield* listen(app.fetch, host, port)
    const shown = host.includes(":") ? `[${host}]` : host
    return { url: `http://${shown}:${port}/`, port, token }
  })

const listen = (fetch: Parameters<typeof listenOn>[0]["fetch"], host: string, port: number) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.async<{ readonly server: ReturnType<typeof listenOn>; readonly port: number }, Errors.InvalidInput>((resume) => {
        const server = listenOn({ fetch, hostname: host, port })
        server.once("error", (error) => resume(Effect.fail(new Errors.InvalidInput({ what: "--host/--port", reason: `cannot listen on ${host}:${port}: ${error.message}` }))))
        server.once("listening", () => {
          const address = server.address()
          resume(Effect.succeed({ server, port: typeof address === "object" && address !== null ? address.port : port }))
        })
      }),
      ({ server }) =>
        Effect.async<void>((resume) => {
          // Followers of live runs keep their connection open: close them too.
          if ("closeAllConnections" in server) server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    ),
    (listening) => listening.port
  )
