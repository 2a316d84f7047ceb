/**
 * Tenancy checks for contract suites: another tenant's id must behave exactly like an id that never existed. A
 * suite compares the failure it gets for tenant B with A's id against the failure for a never-used id, each
 * written with its id replaced by a placeholder: the same tag, fields and message, so nothing tells B that A's id
 * exists.
 *
 * @example
 * const theirs = yield* Effect.flip(store.getRun("tenant-b", aRunId))
 * const never = yield* Effect.flip(store.getRun("tenant-b", "never-used"))
 * expect(TenantIsolation.shape(theirs, aRunId)).toEqual(TenantIsolation.shape(never, "never-used"))
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"

/** A failure as a caller can observe it, with `id` written as `<id>` wherever it appears. */
export interface Shape {
  readonly tag: string
  readonly message: string
  readonly fields: Readonly<Record<string, unknown>>
}

const replaceIn = (value: unknown, id: string): unknown => {
  if (typeof value === "string") return value.split(id).join("<id>")
  if (Array.isArray(value)) return value.map((v) => replaceIn(v, id))
  if (Predicate.isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceIn(v, id)]))
  return value
}

/** `error`'s tag, message and own fields, with `id` replaced by `<id>`. */
export const shape = (error: unknown, id: string): Shape => {
  const tag = Predicate.hasProperty(error, "_tag") ? String(error._tag) : "<untagged>"
  const message = error instanceof Error ? error.message : String(error)
  const fields = Predicate.isRecord(error) ? Object.fromEntries(Object.entries(error).map(([k, v]) => [k, replaceIn(v, id)])) : {}
  return { tag, message: message.split(id).join("<id>"), fields }
}
