/**
 * `artana ui`: opens the store once (read-only unless `--allow-actions`), serves the inspector with
 * `@hono/node-server` until the process is stopped, and prints where (and, off loopback, the token, once, on stderr).
 */
import { Errors } from "@artana/core"
import { serve } from "@hono/node-server"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type { AddressInfo } from "node:net"
import * as Database from "../database.js"
import * as Out from "../output.js"
import * as Services from "../services.js"
import { approverOf } from "../approvalCommands.js"
import { makeApp } from "./app.js"
import { isLoopback, loopbackHosts, newToken } from "./guard.js"
import type { Run } from "./run.js"

export interface UiArgs {
  readonly db: string
  readonly tenant: string
  readonly format: Out.Format
  readonly verbose: boolean
  readonly auditKey: Redacted.Redacted<string> | undefined
  readonly port: number
  readonly host: string
  readonly allowActions: boolean
  readonly approver: string | undefined
}

const listen = (options: { readonly fetch: Parameters<typeof serve>[0]["fetch"]; readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: ReturnType<typeof serve>; readonly port: number }, Error>((resume) => {
      const server = serve({ fetch: options.fetch, hostname: options.host, port: options.port })
      server.once("error", (error) => resume(Effect.fail(error)))
      server.once("listening", () => {
        const address = server.address()
        resume(Effect.succeed({ server, port: typeof address === "object" && address !== null ? (address satisfies AddressInfo).port : options.port }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        // Followers of live runs keep their connection open: close them too.
        if ("closeAllConnections" in server) server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

export const ui = (args: UiArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const db = Database.parse(args.db)
    const store = Database.layer(db, { create: false, readOnly: !args.allowActions })
    const context = yield* Layer.build(Services.kernel({ store, auditKey: args.auditKey }))
    const run: Run = (effect) => Effect.runPromiseExit(Effect.provide(effect, context))
    const token = isLoopback(args.host) ? undefined : newToken()
    let port = args.port
    const app = makeApp({
      run,
      store: Database.describe(db),
      tenant: args.tenant,
      allowActions: args.allowActions,
      approver: approverOf(args),
      auditKey: args.auditKey,
      guard: { token, csrf: newToken(), hosts: () => (token === undefined ? loopbackHosts(port) : undefined) }
    })
    const listening = yield* listen({ fetch: app.fetch, host: args.host, port: args.port }).pipe(
      Effect.catchAll((error) => Effect.fail(new Errors.InvalidInput({ what: "--host/--port", reason: `cannot listen on ${args.host}:${args.port}: ${error.message}` })))
    )
    port = listening.port
    const shown = args.host.includes(":") ? `[${args.host}]` : args.host
    const url = `http://${shown}:${port}/`
    if (args.format === "json") {
      yield* Out.json({ url, readOnly: !args.allowActions, tokenRequired: token !== undefined })
    } else {
      yield* Out.stdout(`artana ui: ${url} (${args.allowActions ? "actions allowed" : "read-only"}; store ${Database.describe(db)}; Ctrl-C to stop)`)
    }
    // Printed once, on stderr: the only place the token is ever shown.
    if (token !== undefined) yield* Out.stderr(`artana ui: every request needs this token (shown once): ${url}?token=${token}`)
    return yield* Effect.never
  })))
