// The template's own tests, with the SDK's test kit: each call goes through a real kernel.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { PluginTest } from "@artana/plugin-sdk/testing"
import plugin from "../src/index.js"

const config = { base: "EUR", rates: { USD: 1.08, GBP: 0.85 } }

describe("artana-plugin-template", () => {
  it.effect("converts through the base currency at the configured rates", () =>
    Effect.gen(function*() {
      const { events, result } = yield* PluginTest.run({ plugin, config, tool: "fx.convert", args: { amount: 100, from: "USD", to: "GBP" } })
      expect(result).toEqual(Either.right({ amount: 78.7, currency: "GBP" }))
      expect(events.map((e) => e.type)).toEqual(["RunStarted", "ToolRequested", "ToolCompleted", "RunCompleted"])
    }))

  it.effect("an unknown currency is the tool's error, logged; arguments outside the schema never reach it", () =>
    Effect.gen(function*() {
      const unknown = yield* PluginTest.run({ plugin, config, tool: "fx.convert", args: { amount: 1, from: "EUR", to: "JPY" } })
      expect(Either.isLeft(unknown.result) && unknown.result.left.message).toContain("no rate for JPY; known currencies: EUR, USD, GBP")
      expect(unknown.events.map((e) => e.type)).toContain("ToolFailed")
      const invalid = yield* PluginTest.run({ plugin, config, tool: "fx.convert", args: { amount: -1, from: "EUR", to: "USD" } })
      expect(Either.isLeft(invalid.result) && invalid.result.left).toMatchObject({ _tag: "InvalidToolArguments", path: "$.amount" })
    }))

  it.effect("the config is checked by the plugin's schema", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(PluginTest.run({ plugin, config: { base: "euro", rates: {} }, tool: "fx.rates", args: {} }))
      expect(error).toMatchObject({ _tag: "InvalidPluginConfig", path: "$.base" })
    }))
})
