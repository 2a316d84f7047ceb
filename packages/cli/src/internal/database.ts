/**
 * The store a command works on, from `--db`: a `postgres://` (or `postgresql://`) URL opens PostgreSQL through
 * `@artana/store-postgres`; anything else is the path of a SQLite file (`@artana/store-sqlite`).
 */
import type { Errors, EventStore } from "@artana/core"
import { PostgresStore } from "@artana/store-postgres"
import { SqliteStore } from "@artana/store-sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"

export type Database =
  | { readonly kind: "sqlite"; readonly filename: string }
  | { readonly kind: "postgres"; readonly url: Redacted.Redacted<string> }

export const parse = (db: string): Database =>
  /^postgres(ql)?:\/\//i.test(db) ? { kind: "postgres", url: Redacted.make(db) } : { kind: "sqlite", filename: db }

/** How the database is shown: a SQLite path, or the URL with its password hidden. */
export const describe = (db: Database): string =>
  db.kind === "sqlite" ? db.filename : PostgresStore.redactUrl(Redacted.value(db.url))

/** A command that reads runs was pointed at a SQLite file that does not exist (it is not created). */
export class DatabaseNotFound extends Schema.TaggedError<DatabaseNotFound>()("DatabaseNotFound", {
  filename: Schema.String
}) {
  override get message() {
    return `no database at ${this.filename}: start a run with \`artana run\` first, or pass --db (or set ARTANA_DB)`
  }
}

/**
 * The event store on `db`. `create: false` refuses a SQLite file that does not exist rather than creating an empty
 * one. `readOnly: true` (the commands that only read) opens the store read-only: no table is created, no migration
 * runs (the schema is checked, and a newer one refused), nothing can be written, so a database on a read-only file
 * or file system (a backup, a snapshot) can be inspected.
 */
export const layer = (
  db: Database,
  options: { readonly create: boolean; readonly readOnly?: boolean | undefined }
): Layer.Layer<EventStore.EventStore, Errors.StoreUnavailable | Errors.SchemaMismatch | DatabaseNotFound> => {
  const readOnly = options.readOnly === true
  if (db.kind === "postgres") return PostgresStore.layer({ url: db.url, pool: { max: 4 }, readOnly })
  const { filename } = db
  return Layer.unwrapEffect(Effect.suspend(() =>
    !options.create && filename !== ":memory:" && !fs.existsSync(filename)
      ? Effect.fail(new DatabaseNotFound({ filename }))
      : Effect.succeed(SqliteStore.layer({ filename, readOnly: readOnly && filename !== ":memory:" }))
  ))
}
