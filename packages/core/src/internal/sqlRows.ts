/**
 * Rows of the SQL event store read back: a driver's values as numbers and text, a run's row as its `RunInfo`, and a
 * row that does not decode as a `StoreError` naming the row and column (`decodeRows`).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { StoreError } from "../Errors.js"
import { type RunInfo, RunStatus } from "../Event.js"
import * as Codec from "./sqlCodec.js"

/** A row as the driver gives it, by column name. */
export type Fields = { readonly [key: string]: unknown }

/** Drivers return integers as number, bigint (SQLite safe integers) or string (Postgres BIGINT). */
export const toNumber = (value: unknown): number | undefined => {
  if (typeof value === "number") return value
  if (typeof value === "bigint") return Number(value)
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value)
    return Number.isNaN(n) ? undefined : n
  }
  return undefined
}

/** Thrown by a decoder when a column does not hold what it should; `decodeRows` turns it into a `StoreError`. */
export class CorruptRow {
  constructor(readonly column: string, readonly reason: string) {}
}

export const num = (row: Fields, column: string): number => numberValue(row[column], column)

export const text = (row: Fields, column: string): string => textValue(row[column], column)

export const numberValue = (value: unknown, column: string): number => {
  const n = toNumber(value)
  if (n === undefined) throw new CorruptRow(column, `expected a number, found ${typeof value}`)
  return n
}

export const textValue = (value: unknown, column: string): string => {
  if (typeof value !== "string") throw new CorruptRow(column, `expected text, found ${typeof value}`)
  return value
}

/** A stored hash or event id as text (see `sqlCodec`). */
export const unpacked = (kind: typeof Codec.HASH, value: unknown, column: string): string => {
  const text = Codec.unpack(kind, value)
  if (text === undefined) throw new CorruptRow(column, `expected bytes or text, found ${value instanceof Uint8Array ? "bytes that are not UTF-8" : typeof value}`)
  return text
}

const isRunStatus = Schema.is(RunStatus)

/** A run's row as its `RunInfo`. */
export const runFromRow = (row: Fields): RunInfo => {
  const status = row.status
  if (!isRunStatus(status)) throw new CorruptRow("status", `unknown run status ${JSON.stringify(status)}`)
  const parent = row.parent_run_id
  if (parent !== null && parent !== undefined && typeof parent !== "string") {
    throw new CorruptRow("parent_run_id", `expected text, found ${typeof parent}`)
  }
  return {
    runId: text(row, "run_id"),
    tenantId: text(row, "tenant_id"),
    workflow: text(row, "workflow"),
    ...(typeof parent === "string" ? { parentRunId: parent } : {}),
    rootRunId: text(row, "root_run_id"),
    status,
    headSeq: num(row, "head_seq"),
    headHash: unpacked(Codec.HASH, row.head_hash, "head_hash"),
    costUsd: num(row, "cost_usd"),
    createdAt: num(row, "created_at"),
    updatedAt: num(row, "updated_at"),
    ownerEpoch: num(row, "owner_epoch"),
    version: text(row, "version"),
    ...(typeof row.forked_from === "string" ? { forkedFrom: row.forked_from } : {})
  }
}

/** Maps rows with `f`; a row that does not decode is a `StoreError` naming the row and column. */
export const decodeRows = <Row, A>(
  operation: string,
  rows: ReadonlyArray<Row>,
  describe: (row: Row) => string,
  f: (row: Row) => A
): Effect.Effect<Array<A>, StoreError> =>
  Effect.suspend(() => {
    const out = new Array<A>(rows.length)
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      try {
        out[i] = f(row)
      } catch (cause) {
        if (!(cause instanceof CorruptRow)) return Effect.die(cause)
        return Effect.fail(
          new StoreError({ operation, reason: `corrupt row (${describe(row)}), column ${cause.column}: ${cause.reason}` })
        )
      }
    }
    return Effect.succeed(out)
  })
