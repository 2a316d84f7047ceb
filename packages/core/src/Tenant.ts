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
export class TenantContext extends Schema.Class<TenantContext>("TenantContext")({
  tenantId: Schema.NonEmptyTrimmedString,
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

