/**
 * Tenants: every run belongs to one, with the capabilities it holds and the USD budget it may spend.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Who a run belongs to, which tool capabilities it holds and how much it may spend.
 *
 * @example
 * const tenant = TenantContext.make({ tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit: 1 })
 */
/**
 * Why `id` cannot be a tenant's (or a run's) id, or undefined: a control character (a NUL among them) in it. Ids are
 * joined with a NUL into the keys of per-run maps and hashes; one that holds a control character could spell another
 * tenant's key (`"acme\u0000x"` and run `"r1"` against `"acme"` and run `"x\u0000r1"`). Stores refuse such ids
 * (`EventStore.invalidBatch`), and a `TenantContext` cannot hold one.
 */
export const badId = (id: string): string | undefined =>
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u001f\u007f]/.test(id) ? `${JSON.stringify(id)} holds a control character` : undefined

export class TenantContext extends Schema.Class<TenantContext>("TenantContext")({
  /** No control character (`badId`): the id is a key, joined with others by a NUL. */
  tenantId: Schema.NonEmptyTrimmedString.pipe(Schema.filter((id) => badId(id) === undefined, { message: () => "a tenant id holds no control character" })),
  capabilities: Schema.Array(Schema.String),
  /** USD, finite: a budget that cannot be written into the log (`Infinity`) is no budget. */
  budgetUsdLimit: Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
}) {}

/** True when the tenant holds `capability` (a tool without a required capability is always allowed). */
export const hasCapability = (tenant: TenantContext, capability: string | undefined): boolean =>
  capability === undefined || tenant.capabilities.includes(capability)

/**
 * A tenant as plain data, as code that does not build a `TenantContext` gives it: checked at the boundary
 * (`Artana.tenant`), where a bad one is `InvalidTenant`. `capabilities` defaults to none.
 *
 * @example
 * await artana.chat({ tenant: { tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit: 1 }, prompt: "Hi" })
 */
export interface Input {
  readonly tenantId: string
  readonly capabilities?: ReadonlyArray<string> | undefined
  readonly budgetUsdLimit: number
}

