import { describe, expect, it } from "vitest"
import type { Edge, PackageSource, Workspace } from "../lib/architecture.js"
import { check, findCycles, formatViolation, parseImports, RULES } from "../lib/architecture.js"

const pkg = (dir: string, manifest: PackageSource["manifest"], files: Record<string, string> = {}): PackageSource => ({
  dir,
  manifest,
  files: new Map(Object.entries(files))
})

const graph = (edges: Record<string, ReadonlyArray<string>>): ReadonlyMap<string, ReadonlyArray<Edge>> =>
  new Map(Object.entries(edges).map(([from, tos]) => [from, tos.map((to) => ({ to, specifier: `./${to}`, line: 1 }))]))

describe("parseImports", () => {
  it("finds imports, re-exports and dynamic imports, marks `import type`, and ignores comments and strings", () => {
    const refs = parseImports(
      "a.ts",
      [
        `import { a } from "./a.js"`,
        `import type { B } from "./b.js"`,
        `import { type C } from "./c.js"`,
        `export * from "./d.js"`,
        `export type { E } from "./e.js"`,
        `// import { x } from "./commented.js"`,
        `const s = "import { y } from './string.js'"`,
        `const m = await import("node:fs")`
      ].join("\n")
    )
    expect(refs.map((r) => [r.specifier, r.typeOnly, r.line])).toEqual([
      ["./a.js", false, 1],
      ["./b.js", true, 2],
      ["./c.js", false, 3], // verbatimModuleSyntax keeps `import {} from "./c.js"`
      ["./d.js", false, 4],
      ["./e.js", true, 5],
      ["node:fs", false, 8]
    ])
  })
})

describe("findCycles", () => {
  it("finds a cycle once, whichever file the search enters it from", () => {
    const cycles = findCycles(graph({ "a.ts": ["b.ts"], "b.ts": ["c.ts"], "c.ts": ["a.ts"], "d.ts": ["b.ts"] }))
    expect(cycles.map((c) => c.files)).toEqual([["a.ts", "b.ts", "c.ts"]])
    expect(cycles[0]!.closing).toMatchObject({ from: "c.ts", to: "a.ts" })
  })

  it("finds a self-import and two separate cycles; a DAG has none", () => {
    expect(findCycles(graph({ "a.ts": ["a.ts"] })).map((c) => c.files)).toEqual([["a.ts"]])
    expect(findCycles(graph({ "a.ts": ["b.ts"], "b.ts": ["a.ts"], "c.ts": ["d.ts"], "d.ts": ["c.ts"] })).length).toBe(2)
    expect(findCycles(graph({ "a.ts": ["b.ts", "c.ts"], "b.ts": ["c.ts"], "c.ts": [] }))).toEqual([])
  })
})

describe("check", () => {
  const core = (files: Record<string, string>, manifest: PackageSource["manifest"] = {}) =>
    pkg("packages/core", { name: "@artana/core", peerDependencies: { effect: "^3" }, ...manifest }, files)

  it("passes a clean workspace", () => {
    const ws: Workspace = {
      packages: [
        core({ "src/index.ts": `export * from "./a.js"`, "src/a.ts": `import * as Effect from "effect/Effect"\nimport { readFileSync } from "node:fs"\nexport { Effect, readFileSync }` }),
        pkg("packages/store-sqlite", { name: "@artana/store-sqlite", dependencies: { "@effect/sql-sqlite-node": "1" }, peerDependencies: { "@artana/core": "workspace:^" } }, {
          "src/index.ts": `import { Kernel } from "@artana/core"\nimport { SqliteClient } from "@effect/sql-sqlite-node"\nexport { Kernel, SqliteClient }`
        }),
        pkg("apps/examples", { name: "@artana/examples", dependencies: { "@artana/store-sqlite": "workspace:^" } }, { "src/main.ts": `import "@artana/store-sqlite"` })
      ]
    }
    expect(check(ws, RULES)).toEqual([])
  })

  it("reports a relative-import cycle in a package's src, ignoring `import type` edges", () => {
    const ws: Workspace = {
      packages: [
        core({
          "src/a.ts": `import { b } from "./b.js"\nexport const a = b`,
          "src/b.ts": `export { c as b } from "./internal/c.js"`,
          "src/internal/c.ts": `import { a } from "../a.js"\nexport const c = a`,
          "src/d.ts": `import type { A } from "./e.js"\nexport type D = A`,
          "src/e.ts": `import type { D } from "./d.js"\nexport type A = D`
        })
      ]
    }
    const violations = check(ws, RULES)
    expect(violations).toEqual([
      { file: "packages/core/src/internal/c.ts", line: 1, import: "../a.js", rule: "circular import: src/a.ts -> src/b.ts -> src/internal/c.ts -> src/a.ts" }
    ])
    expect(formatViolation(violations[0]!)).toBe(
      `packages/core/src/internal/c.ts:1: "../a.js" -- circular import: src/a.ts -> src/b.ts -> src/internal/c.ts -> src/a.ts`
    )
  })

  it("reports boundary violations in package.json and in src imports; test files are exempt", () => {
    const ws: Workspace = {
      packages: [
        core(
          {
            "src/Kernel.ts": `import { SqliteStore } from "@artana/store-sqlite"\nimport Ajv from "ajv"\nexport { SqliteStore, Ajv }`,
            "src/Kernel.test.ts": `import { SqliteStore } from "@artana/store-sqlite"`
          },
          { dependencies: { "@artana/store-sqlite": "workspace:^" } }
        ),
        pkg("packages/agent", { name: "@artana/agent" }, { "src/index.ts": `import type { Rule } from "@artana/experience/Rule"\nexport type R = Rule` }),
        pkg("packages/sandbox", { name: "@artana/sandbox", dependencies: {} })
      ]
    }
    expect(check(ws, RULES).map((v) => [v.file, v.line, v.import, v.rule])).toEqual([
      ["packages/agent/src/index.ts", 1, "@artana/experience/Rule", "@artana/agent never imports @artana/experience"],
      ["packages/core/package.json", undefined, "@artana/store-sqlite", "nothing depends on an adapter (@artana/store-sqlite) except apps, examples, the CLI, bench and tests"],
      ["packages/core/src/Kernel.ts", 1, "@artana/store-sqlite", "nothing depends on an adapter (@artana/store-sqlite) except apps, examples, the CLI, bench and tests"],
      ["packages/core/src/Kernel.ts", 2, "ajv", "@artana/core may import only effect, @effect/sql, @effect/experimental, @effect/platform, node:*"],
      ["packages/sandbox/package.json", undefined, "@artana/plugin-sdk", "@artana/sandbox depends on @artana/plugin-sdk (dependencies or peerDependencies)"]
    ])
  })

  it("lets only a testing entry point reach a test runner, an optional peer; and asks for a rule for a new package", () => {
    const ws: Workspace = {
      packages: [
        core(
          {
            "src/index.ts": `export * from "./Kernel.js"`,
            "src/Kernel.ts": `export const k = 1`,
            "src/suites.ts": `export * as S from "./StoreSuite.js"`,
            "src/StoreSuite.ts": `import { it } from "@effect/vitest"\nimport { k } from "./Kernel.js"\nexport { it, k }`,
            "src/testing.ts": `export * from "./suites.js"`
          },
          { peerDependencies: { effect: "^3", "@effect/vitest": "^0.29" } }
        ),
        pkg("packages/store-postgres", { name: "@artana/store-postgres", peerDependencies: { vitest: "^3" }, peerDependenciesMeta: { vitest: { optional: true } } }, {
          "src/index.ts": `export * from "./Store.js"`,
          "src/Store.ts": `export const s = 1`,
          "src/testing.ts": `export * as PgTest from "./PgTest.js"`,
          "src/PgTest.ts": `import type { TestProject } from "vitest/node"\nexport type P = TestProject`
        }),
        pkg("packages/brand-new", { name: "@artana/brand-new" })
      ]
    }
    expect(check(ws, RULES).map((v) => [v.file, v.import, v.rule])).toEqual([
      ["packages/brand-new/package.json", "@artana/brand-new", "package missing from the RULES table in scripts/lib/architecture.ts"],
      ["packages/core/package.json", "@effect/vitest", "@effect/vitest is for the testing kit only: an optional peer dependency"],
      [
        "packages/core/src/StoreSuite.ts",
        "@effect/vitest",
        "a test runner reachable from a main entry point (src/testing.ts -> src/suites.ts -> src/StoreSuite.ts): only a testing entry point may reach one"
      ]
    ])
  })
})
