// JSON Schema objects composed of parts are closed over every part's properties (cases found in review).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { defineTool } from "@artana/plugin-sdk"

const toolWith = (parameters: Record<string, unknown>) =>
  defineTool<Record<string, unknown>>({ name: "t", description: "x", parameters: parameters as never, handler: () => Effect.succeed(null) })

const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
  [
    "allOf composing two object parts (top level)",
    { type: "object", allOf: [{ properties: { a: { type: "string" } }, required: ["a"] }, { properties: { b: { type: "number" } } }] },
    `{"a":"x","b":1,"admin":true}`
  ],
  [
    "an object property whose schema is an allOf",
    { type: "object", properties: { to: { allOf: [{ type: "object", properties: { email: { type: "string" } } }] } } },
    `{"to":{"email":"a@b.c","admin":true}}`
  ],
  [
    "if/then/else branches with properties",
    { type: "object", properties: { kind: { type: "string" } }, if: { properties: { kind: { const: "a" } } }, then: { properties: { x: { type: "number" } } } },
    `{"kind":"a","x":1,"admin":true}`
  ],
  [
    "a type list including object",
    { type: "object", properties: { opts: { type: ["object", "null"], properties: { v: { type: "number" } } } } },
    `{"opts":{"v":1,"admin":true}}`
  ],
  [
    "a $ref to an allOf definition",
    { type: "object", properties: { to: { $ref: "#/$defs/Addr" } }, $defs: { Addr: { allOf: [{ type: "object", properties: { email: { type: "string" } } }] } } },
    `{"to":{"email":"a@b.c","admin":true}}`
  ],
  [
    "an object nested under not/dependentSchemas (an object schema with properties, no type)",
    { type: "object", properties: { a: { type: "string" } }, dependentSchemas: { a: { properties: { b: { type: "object", properties: { c: { type: "string" } } } } } } },
    `{"a":"x","b":{"c":"y","admin":true}}`
  ]
]

describe("composed JSON Schema objects are closed too", () => {
  it.each(cases)("%s: an unknown property is refused as invalid arguments", (_name, parameters, args) => {
    const result = toolWith(parameters).decodeArguments(args)
    expect(Either.isLeft(result), `decoded to ${JSON.stringify(Either.isRight(result) ? result.right : null)}`).toBe(true)
  })
})
