// What the middleware and the tools write into the log, and the audit reads back.
import type { Json } from "@artana/core"
import * as Schema from "effect/Schema"

/** The name the middleware writes its notes and denials under. */
export const MIDDLEWARE = "sandbox"

/** What the middleware notes for an allowed call (the `data` of its `MiddlewareNote`). */
export const AllowedNote = Schema.Struct({
  tool: Schema.String,
  reason: Schema.String,
  filesRead: Schema.optional(Schema.Array(Schema.String)),
  filesWritten: Schema.optional(Schema.Array(Schema.String)),
  domains: Schema.optional(Schema.Array(Schema.String)),
  commands: Schema.optional(Schema.Array(Schema.String))
})
export type AllowedNote = typeof AllowedNote.Type

/** The note's JSON, for `CallContext.note`. */
export const noteJson = (note: AllowedNote): Json.JsonObject => ({
  tool: note.tool,
  reason: note.reason,
  ...(note.filesRead === undefined ? {} : { filesRead: [...note.filesRead] }),
  ...(note.filesWritten === undefined ? {} : { filesWritten: [...note.filesWritten] }),
  ...(note.domains === undefined ? {} : { domains: [...note.domains] }),
  ...(note.commands === undefined ? {} : { commands: [...note.commands] })
})
