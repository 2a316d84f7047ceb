// YAML decoded with an Effect Schema: every problem located by line, column and path.
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { Yaml } from "@artana/plugin-sdk"

const Config = Schema.Struct({ name: Schema.String, limits: Schema.Struct({ max: Schema.Number }) })
const decode = (text: string) => Either.flatMap(Yaml.parse(text), (source) => Yaml.decode(source, Config))

describe("Yaml", () => {
  it("decodes a document", () => {
    expect(decode("name: a\nlimits:\n  max: 3\n")).toEqual(Either.right({ name: "a", limits: { max: 3 } }))
  })

  it.each([
    ["a syntax error", "name: [a\n", { kind: "yaml", line: 2, path: "$" }],
    ["a wrong type, at its value", "name: a\nlimits:\n  max: three\n", { kind: "schema", line: 3, column: 8, path: "$.limits.max" }],
    ["an unknown field, at its key", "name: a\nlimits: { max: 1 }\nextra: 1\n", { kind: "schema", line: 3, column: 1, path: "$.extra", reason: "unknown field \"extra\"" }],
    ["a missing field, at its parent", "name: a\nlimits: {}\n", { kind: "schema", line: 2, path: "$.limits.max" }],
    ["a duplicate key", "name: a\nname: b\n", { kind: "yaml", line: 2 }]
  ])("locates %s", (_what, text, issue) => {
    const result = decode(text)
    expect(Either.isLeft(result) && result.left).toMatchObject(issue)
  })
})
