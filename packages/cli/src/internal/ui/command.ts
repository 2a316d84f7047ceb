/**
 * `artana ui`: opens the store once (read-only unless `--allow-actions`), serves the inspector (`Inspector.serve`) until
 * the process is stopped, and prints where (and, off loopback, the token, once, on stderr).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as Inspector from "../../Inspector.js"
import { approverOf } from "../approvalCommands.js"
import * as Database from "../database.js"
import * as Out from "../output.js"
import * as Services from "../services.js"

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

export const ui = (args: UiArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const db = Database.parse(args.db)
    const store = Database.layer(db, { create: false, readOnly: !args.allowActions })
    const context = yield* Layer.build(Services.kernel({ store, auditKey: args.auditKey }))
    const server = yield* Inspector.serve({
      tenant: args.tenant,
      host: args.host,
      port: args.port,
      allowActions: args.allowActions,
      approver: approverOf(args),
      auditKey: args.auditKey,
      storeName: Database.describe(db)
    }).pipe(Effect.provide(context))
    if (args.format === "json") {
      yield* Out.json({ url: server.url, readOnly: !args.allowActions, tokenRequired: server.token !== undefined })
    } else {
      yield* Out.stdout(`artana ui: ${server.url} (${args.allowActions ? "actions allowed" : "read-only"}; store ${Database.describe(db)}; Ctrl-C to stop)`)
    }
    // Printed once, on stderr: the only place the token is ever shown.
    if (server.token !== undefined) yield* Out.stderr(`artana ui: every request needs this token (shown once): ${server.url}?token=${server.token}`)
    return yield* Effect.never
  })))
