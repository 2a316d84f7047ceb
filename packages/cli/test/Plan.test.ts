import { describe, expect, it } from "@effect/vitest"
import { Tool, ToolRegistry } from "@artana/core"
import { Plan } from "@artana/cli"
import { Effect, Either, Schema } from "effect"

const tools = ToolRegistry.make([
  Tool.make({
    name: "fs.read",
    description: "read a file",
    parameters: Schema.Struct({ path: Schema.String, encoding: Schema.optional(Schema.Literal("utf8", "base64")) }),
    handler: () => Effect.succeed("")
  }),
  Tool.make({ name: "shell.run", description: "run", parameters: Schema.Struct({ argv: Schema.Array(Schema.String) }), handler: () => Effect.succeed("") })
])

const error = (text: string, withTools = true) => {
  const parsed = Plan.parse(text, { file: "plan.yaml", tools: withTools ? tools : undefined })
  if (Either.isRight(parsed)) throw new Error(`expected an error, got ${JSON.stringify(parsed.right)}`)
  return parsed.left
}

describe("Plan.parse", () => {
  it("normalizes a plan: default ids step-<n>, default args {}, on_error stop", () => {
    const plan = Plan.parse("steps:\n  - tool: fs.read\n    args: { path: a.txt }\n  - id: list\n    name: List\n    tool: shell.run\n    args:\n      argv: [ls]\n", { file: "p.yaml", tools })
    expect(plan).toEqual(Either.right({
      onError: "stop",
      steps: [
        { id: "step-1", tool: "fs.read", args: { path: "a.txt" } },
        { id: "list", name: "List", tool: "shell.run", args: { argv: ["ls"] } }
      ]
    }))
    expect(Either.getOrThrow(Plan.parse("on_error: continue\nsteps: [{ tool: x }]", { file: "p.yaml" })).onError).toBe("continue")
    expect(Either.getOrThrow(Plan.parse("steps: [{ tool: x }]", { file: "p.yaml" })).steps[0]!.args).toEqual({})
  })

  it("malformed YAML names the file, line and column", () => {
    const e = error("steps:\n  - tool: fs.read\n    args: { path: [unclosed }\n")
    expect(e).toMatchObject({ _tag: "PlanError", kind: "yaml", file: "plan.yaml", line: 3 })
    expect(e.column).toBeGreaterThan(1)
    expect(e.message).toMatch(/^plan\.yaml:3:\d+: /)
  })

  it("duplicate keys are malformed YAML, at the second key", () => {
    expect(error("steps: []\nsteps: []\n")).toMatchObject({ kind: "yaml", line: 2, column: 1 })
  })

  it("a field of the wrong type names its path, line and column", () => {
    const e = error("steps:\n  - tool: fs.read\n    args: [1, 2]\n")
    expect(e).toMatchObject({ kind: "schema", path: "$.steps[0].args", line: 3, column: 11 })
    expect(e.message).toContain("plan.yaml:3:11: steps[0].args:")
    expect(error("steps:\n  - tool: 42\n")).toMatchObject({ kind: "schema", path: "$.steps[0].tool", line: 2, column: 11 })
    expect(error("on_error: halt\nsteps: [{ tool: fs.read }]\n")).toMatchObject({ kind: "schema", path: "$.on_error", line: 1, column: 11 })
  })

  it("an unknown field is refused at its key (a typo is never ignored)", () => {
    const e = error("steps:\n  - tool: fs.read\n    arg: { path: a }\n")
    expect(e).toMatchObject({ kind: "schema", path: "$.steps[0].arg", line: 3, column: 5 })
    expect(e.reason).toBe('unknown field "arg"')
  })

  it("a missing field points at its parent", () => {
    expect(error("steps:\n  - name: no tool\n")).toMatchObject({ kind: "schema", path: "$.steps[0].tool", line: 2, column: 5 })
    expect(error("steps: []\n")).toMatchObject({ kind: "schema", path: "$.steps" })
    expect(error("")).toMatchObject({ kind: "schema", path: "$" })
    expect(error("- just\n- a list\n")).toMatchObject({ kind: "schema" })
  })

  it("step ids are checked and unique (explicit or default)", () => {
    expect(error("steps:\n  - { id: a, tool: fs.read }\n  - { id: a, tool: fs.read }\n")).toMatchObject({ kind: "duplicate_id", line: 3 })
    expect(error("steps:\n  - { id: step-2, tool: fs.read }\n  - { tool: fs.read }\n")).toMatchObject({ kind: "duplicate_id", path: "$.steps[1].tool" })
    expect(error("steps:\n  - { id: 'has space', tool: fs.read }\n")).toMatchObject({ kind: "schema", path: "$.steps[0].id" })
  })

  it("an unknown tool names the available tools, at the tool's line", () => {
    const e = error("steps:\n  - tool: fs.read\n    args: { path: a }\n  - tool: fs.delete\n")
    expect(e).toMatchObject({ _tag: "PlanError", kind: "unknown_tool", path: "$.steps[1].tool", line: 4, column: 11 })
    expect(e.reason).toBe('unknown tool "fs.delete"; available tools: fs.read, shell.run')
    // Without tools, only the shape is checked.
    expect(Either.isRight(Plan.parse("steps:\n  - tool: fs.delete\n", { file: "p.yaml" }))).toBe(true)
  })

  it("arguments that do not decode with the tool's parameters name the path inside args", () => {
    const e = error("steps:\n  - tool: shell.run\n    args:\n      argv: [ls, 3]\n")
    expect(e).toMatchObject({ kind: "invalid_arguments", path: "$.steps[0].args.argv[1]", line: 4, column: 18 })
    expect(error("steps:\n  - tool: fs.read\n    args: { path: a, encoding: latin1 }\n")).toMatchObject({ kind: "invalid_arguments", path: "$.steps[0].args.encoding" })
    expect(error("steps:\n  - tool: fs.read\n")).toMatchObject({ kind: "invalid_arguments", path: "$.steps[0].args.path" })
  })

  it("values YAML has and JSON lacks are refused", () => {
    expect(error("steps:\n  - tool: fs.read\n    args: { path: .nan }\n", false)).toMatchObject({ kind: "schema", path: "$.steps[0].args.path" })
  })

  it("alias bombs are refused", () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]", "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]", "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]", "d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]", "steps: []"].join("\n")
    expect(error(bomb)).toMatchObject({ kind: "yaml" })
  })
})

describe("Plan.load", () => {
  it.effect("a missing file is a PlanError saying so", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(Plan.load("/nonexistent/plan.yaml"))
      expect(e).toMatchObject({ _tag: "PlanError", kind: "unreadable", file: "/nonexistent/plan.yaml" })
      expect(e.message).toContain("ENOENT")
    }))
})
