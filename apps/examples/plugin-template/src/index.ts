/**
 * artana-plugin-template: a complete Artana tool plugin, to copy. It converts amounts between currencies with rates
 * the host configures: `fx.convert` (parameters as raw JSON Schema) and `fx.rates` (parameters as an Effect
 * Schema). The default export is the plugin; hosts load it by package name:
 *
 *   yield* Plugins.loadPackage("artana-plugin-template", { base: "EUR", rates: { USD: 1.08, GBP: 0.85 } })
 *
 * @since 0.1.0
 */
import { definePlugin, defineTool, type Plugin } from "@artana/plugin-sdk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

const Currency = Schema.String.pipe(Schema.pattern(/^[A-Z]{3}$/), Schema.annotations({ description: "ISO 4217 code" }))

/** What the host configures: the base currency and the rates of the others against it. */
export const Config = Schema.Struct({
  base: Currency,
  rates: Schema.Record({ key: Currency, value: Schema.Number.pipe(Schema.positive()) })
})
export type Config = typeof Config.Type

/** An amount in a currency, in the other's units, or why not. */
export class UnknownCurrency extends Schema.TaggedError<UnknownCurrency>()("UnknownCurrency", { currency: Schema.String, known: Schema.Array(Schema.String) }) {
  override get message() {
    return `no rate for ${this.currency}; known currencies: ${this.known.join(", ")}`
  }
}

const rateOf = (config: Config, currency: string) =>
  currency === config.base ? Effect.succeed(1) : currency in config.rates
  ? Effect.succeed(config.rates[currency]!)
  : Effect.fail(new UnknownCurrency({ currency, known: [config.base, ...Object.keys(config.rates)] }))

const plugin: Plugin.Plugin<Config, typeof Config.Encoded> = definePlugin({
  name: "artana-plugin-template",
  version: "0.1.0",
  capabilities: ["fx:read"],
  configSchema: Config,
  tools: (config) => [
    defineTool<{ readonly amount: number; readonly from: string; readonly to: string }>({
      name: "fx.convert",
      description: "Converts an amount from one currency to another at the configured rates",
      parameters: {
        type: "object",
        properties: {
          amount: { type: "number", minimum: 0 },
          from: { type: "string", pattern: "^[A-Z]{3}$" },
          to: { type: "string", pattern: "^[A-Z]{3}$" }
        },
        required: ["amount", "from", "to"],
        additionalProperties: false
      },
      requiresCapability: "fx:read",
      idempotent: true,
      handler: ({ amount, from, to }) =>
        Effect.gen(function*() {
          const fromRate = yield* rateOf(config, from)
          const toRate = yield* rateOf(config, to)
          return { amount: Math.round((amount / fromRate) * toRate * 100) / 100, currency: to }
        })
    }),
    defineTool({
      name: "fx.rates",
      description: "The configured rates against the base currency",
      parameters: Schema.Struct({}),
      requiresCapability: "fx:read",
      idempotent: true,
      handler: () => Effect.succeed({ base: config.base, rates: config.rates })
    })
  ]
})

export default plugin
