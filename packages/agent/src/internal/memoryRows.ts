/** The SQL memory store's rows as entries: drivers differ in how they return integers; a bad row is a `StoreError`. */
import { Errors } from "@artana/core"
import * as Effect from "effect/Effect"
import type { MemoryEntry } from "../MemoryStore.js"

export type Row = { readonly [column: string]: unknown }

export const corrupt = (operation: string, reason: string) => new Errors.StoreError({ operation, reason: `corrupt memory row: ${reason}` })

/** Drivers return integers as number, bigint (SQLite safe integers) or string (Postgres BIGINT). */
const toNumber = (value: unknown): number | undefined => {
  if (typeof value === "number") return value
  if (typeof value === "bigint") return Number(value)
  if (typeof value === "string" && value.trim() !== "" && !Number.isNaN(Number(value))) return Number(value)
  return undefined
}

/** A row of the entries table as an entry, with its insertion order (`seq`). */
export const entryOf = (operation: string, row: Row): Effect.Effect<{ readonly entry: MemoryEntry; readonly order: number }, Errors.StoreError> => {
  const order = toNumber(row.seq)
  const createdAt = toNumber(row.created_at)
  const updatedAt = toNumber(row.updated_at)
  const { id, tenant_id, agent_id, content } = row
  if (order === undefined || createdAt === undefined || updatedAt === undefined) return Effect.fail(corrupt(operation, `seq or times of ${String(id)} are not numbers`))
  if (typeof id !== "string" || typeof tenant_id !== "string" || typeof agent_id !== "string" || typeof content !== "string") {
    return Effect.fail(corrupt(operation, `id, tenant_id, agent_id or content of ${String(id)} is not text`))
  }
  return Effect.succeed({ order, entry: { id, tenantId: tenant_id, agentId: agent_id, content, createdAt, updatedAt } })
}
