// What the middleware and the tools write into the log, and the audit reads back.
import type { Json } from "@artana/core"
import * as Schema from "effect/Schema"

/** The name the middleware writes its notes and denials under. */
export const MIDDLEWARE = "sandbox"

/** How a shell step was contained: the mechanism, what it saw read-only and read-write, whether it had a network. */
export const Containment = Schema.Struct({
  mechanism: Schema.Literal("bubblewrap", "none"),
  readOnly: Schema.Array(Schema.String),
  readWrite: Schema.Array(Schema.String),
  network: Schema.Boolean
})
export type Containment = typeof Containment.Type

/** What the middleware notes for an allowed call (the `data` of its `MiddlewareNote`). */
export const AllowedNote = Schema.Struct({
  tool: Schema.String,
  reason: Schema.String,
  filesRead: Schema.optional(Schema.Array(Schema.String)),
  filesWritten: Schema.optional(Schema.Array(Schema.String)),
  domains: Schema.optional(Schema.Array(Schema.String)),
  commands: Schema.optional(Schema.Array(Schema.String)),
  containment: Schema.optional(Containment)
})
export type AllowedNote = typeof AllowedNote.Type

/** The note's JSON, for `CallContext.note`. */
export const noteJson = (note: AllowedNote): Json.JsonObject => ({
  tool: note.tool,
  reason: note.reason,
  ...(note.filesRead === undefined ? {} : { filesRead: [...note.filesRead] }),
  ...(note.filesWritten === undefined ? {} : { filesWritten: [...note.filesWritten] }),
  ...(note.domains === undefined ? {} : { domains: [...note.domains] }),
  ...(note.commands === undefined ? {} : { commands: [...note.commands] }),
  ...(note.containment === undefined ? {} : {
    containment: {
      mechanism: note.containment.mechanism,
      readOnly: [...note.containment.readOnly],
      readWrite: [...note.containment.readWrite],
      network: note.containment.network
    }
  })
})
