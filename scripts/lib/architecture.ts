/**
 * The architecture check's logic: package boundaries (DESIGN.md, "Packages and who may import whom") and
 * circular relative imports inside each package's src. Everything here is pure over an in-memory
 * `Workspace`, so it is tested on small fixtures (scripts/test); `loadWorkspace` reads the real repo.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs"
import { isBuiltin } from "node:module"
import { join, posix, relative } from "node:path"
import ts from "typescript"

// ---------------------------------------------------------------------------------------------------------
// The rules, as data. Adding a package is one line in `RULES`.
// ---------------------------------------------------------------------------------------------------------

/** The Effect family every library may use. */
export const EFFECT = ["effect", "@effect/sql", "@effect/experimental", "@effect/platform"] as const

/**
 * Small, well-kept libraries the kernel may use where one does the job (DESIGN.md: "a small, well-kept
 * library where one does the job (a JSON Schema validator)"). None today. Add one here, with a comment
 * saying what it does for core, only after the design discussion.
 */
export const CORE_SMALL_LIBRARIES: ReadonlyArray<string> = []

/**
 * Testing kits. A package may ship test helpers under their own entry point (core's `./testing/suites`, the
 * contract suites every store runs; an adapter's `./testing`), and those may import a test runner, listed in
 * package.json as an *optional* peer dependency. The package's main entry must never pull it in: a src file
 * that `runnerFreeEntries` reach (by any import, type-only ones included: declarations keep them) imports no
 * test runner.
 */
export const TEST_RUNNERS: ReadonlyArray<string> = ["vitest", "@effect/vitest"]
export const DEFAULT_RUNNER_FREE_ENTRIES: ReadonlyArray<string> = ["src/index.ts"]

export interface PackageRule {
  /**
   * adapter: depends on core and its driver; nothing depends on it but consumers (and tests).
   * library: any package of the framework that is not an adapter.
   * consumer: apps, examples, the CLI, bench: may depend on anything, adapters included.
   */
  readonly kind: "adapter" | "library" | "consumer"
  /** Workspace (@artana/*) packages it may depend on; omitted: any that the other rules allow. */
  readonly workspace?: ReadonlyArray<string>
  /** Third-party packages it may depend on; omitted: any. Node builtins are always allowed. */
  readonly external?: ReadonlyArray<string>
  /** Packages it must never import, even by a type-only import. */
  readonly never?: ReadonlyArray<string>
  /** Packages it must list in dependencies or peerDependencies. */
  readonly mustDependOn?: ReadonlyArray<string>
  /** Entry points that must not reach a test runner (TEST_RUNNERS); default DEFAULT_RUNNER_FREE_ENTRIES. */
  readonly runnerFreeEntries?: ReadonlyArray<string>
}

/** Keyed by package name. Packages that do not exist yet are simply absent from the workspace. */
export const RULES: Readonly<Record<string, PackageRule>> = {
  "@artana/core": {
    kind: "library",
    workspace: [], // the kernel knows no driver, no provider, no agent, no experience: no @artana/* at all
    external: [...EFFECT, ...CORE_SMALL_LIBRARIES],
    // `./testing` (scripted model, in-memory layers) stays runner-free too; only `./testing/suites` uses vitest
    runnerFreeEntries: ["src/index.ts", "src/testing.ts"]
  },
  // One native driver: better-sqlite3 12 (Node 20, 22); Node 24+ runs the built-in node:sqlite.
  "@artana/store-sqlite": {
    kind: "adapter",
    workspace: ["@artana/core"],
    external: [...EFFECT, "@effect/sql-sqlite-node", "better-sqlite3", "@types/better-sqlite3"]
  },
  "@artana/store-postgres": { kind: "adapter", workspace: ["@artana/core"], external: [...EFFECT, "@effect/sql-pg", "pg", "postgres"] },
  // The driver (`openai`), the tokenizer of its models, and the SSE grammar of the streamed body it reads itself.
  "@artana/model-openai": { kind: "adapter", workspace: ["@artana/core"], external: [...EFFECT, "openai", "gpt-tokenizer", "eventsource-parser"] },
  "@artana/model-anthropic": { kind: "adapter", workspace: ["@artana/core"], external: [...EFFECT, "@anthropic-ai/sdk"] },
  "@artana/middleware": { kind: "library" },
  // DESIGN.md: agent depends on core (and @effect/sql for its SQL MemoryStore); never on experience, which plugs into it.
  "@artana/agent": { kind: "library", workspace: ["@artana/core"], external: [...EFFECT], never: ["@artana/experience"] },
  "@artana/experience": { kind: "library" },
  // A plugin gets nothing from the host but its config: the SDK knows the kernel's contracts only (no store, no
  // provider, no agent), plus its validator, resolver and YAML parser.
  "@artana/plugin-sdk": {
    kind: "library",
    workspace: ["@artana/core"],
    external: [...EFFECT, "ajv", "ajv-formats", "import-meta-resolve", "yaml"]
  },
  // DESIGN.md: built with the plugin SDK, exactly as a third party would build a plugin: core and the SDK only.
  "@artana/sandbox": {
    kind: "library",
    workspace: ["@artana/core", "@artana/plugin-sdk"],
    external: [...EFFECT, "ipaddr.js", "picomatch"],
    mustDependOn: ["@artana/plugin-sdk"]
  },
  // DESIGN.md: built with the plugin SDK as a third party would, on the official MCP SDK (and the zod it needs).
  "@artana/mcp": {
    kind: "library",
    workspace: ["@artana/core", "@artana/plugin-sdk"],
    external: [...EFFECT, "@modelcontextprotocol/sdk", "zod"],
    mustDependOn: ["@artana/plugin-sdk"]
  },
  "@artana/worker": { kind: "library" },
  "@artana/cli": { kind: "consumer" },
  "@artana/examples": { kind: "consumer" },
  "@artana/packaging": { kind: "consumer" },
  "@artana/bench": { kind: "consumer" },
  // DESIGN.md: the optional OpenTelemetry export: core (its tracing reference) and Effect's own OTLP exporter only.
  "@artana/otel": { kind: "library", workspace: ["@artana/core"], external: [...EFFECT, "@effect/opentelemetry"] }
}

// ---------------------------------------------------------------------------------------------------------
// The workspace model
// ---------------------------------------------------------------------------------------------------------

export interface Manifest {
  readonly name?: string
  readonly dependencies?: Readonly<Record<string, string>>
  readonly peerDependencies?: Readonly<Record<string, string>>
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>
}

export interface PackageSource {
  /** Directory relative to the repo root, posix separators: "packages/core". */
  readonly dir: string
  readonly manifest: Manifest
  /** Source files, keyed by path relative to `dir` ("src/Kernel.ts"). */
  readonly files: ReadonlyMap<string, string>
}

export interface Workspace {
  readonly packages: ReadonlyArray<PackageSource>
}

export interface Violation {
  /** File relative to the repo root ("packages/core/src/a.ts" or "packages/core/package.json"). */
  readonly file: string
  readonly line?: number
  /** The import specifier or dependency at fault. */
  readonly import: string
  readonly rule: string
}

// ---------------------------------------------------------------------------------------------------------
// Import extraction (TypeScript's parser: comments and strings never count)
// ---------------------------------------------------------------------------------------------------------

export interface ImportRef {
  readonly specifier: string
  /** `import type ...`, `export type ... from`, or an `import("x")` type: erased at runtime. */
  readonly typeOnly: boolean
  readonly line: number
}

/**
 * Every module a file references: static imports, `export ... from`, dynamic `import()`, `require()`,
 * `import x = require()` and `import("x")` types. Only clause-level `import type` / `export type` count as
 * type-only: with `verbatimModuleSyntax` (tsconfig.base.json), `import { type A } from "./a.js"` is still
 * emitted as `import {} from "./a.js"`, a runtime edge.
 */
export const parseImports = (fileName: string, text: string): ReadonlyArray<ImportRef> => {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const refs: Array<ImportRef> = []
  const add = (lit: ts.Expression | undefined, typeOnly: boolean) => {
    if (lit !== undefined && ts.isStringLiteralLike(lit)) {
      refs.push({ specifier: lit.text, typeOnly, line: sf.getLineAndCharacterOfPosition(lit.getStart(sf)).line + 1 })
    }
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node.moduleSpecifier, node.importClause?.isTypeOnly === true)
    } else if (ts.isExportDeclaration(node)) {
      add(node.moduleSpecifier, node.isTypeOnly)
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly)
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument
      if (ts.isLiteralTypeNode(arg)) add(arg.literal, true)
    } else if (ts.isCallExpression(node)) {
      const isImport = node.expression.kind === ts.SyntaxKind.ImportKeyword
      const isRequire = ts.isIdentifier(node.expression) && node.expression.text === "require"
      if (isImport || isRequire) add(node.arguments[0], false)
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return refs
}

/** The package a bare specifier names: "@effect/sql/SqlClient" -> "@effect/sql", "openai/x" -> "openai". */
export const packageOf = (specifier: string): string => {
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!
}

const isRelative = (specifier: string) => specifier.startsWith("./") || specifier.startsWith("../")

/** Resolve a relative NodeNext specifier to a file in `files` ("./x.js" -> "src/x.ts"), or undefined. */
export const resolveRelative = (from: string, specifier: string, files: ReadonlyMap<string, string>): string | undefined => {
  const target = posix.normalize(posix.join(posix.dirname(from), specifier))
  const candidates = [
    target,
    target.replace(/\.js$/, ".ts"),
    target.replace(/\.mjs$/, ".mts"),
    target.replace(/\.jsx$/, ".tsx"),
    `${target}.ts`,
    `${target}/index.ts`
  ]
  return candidates.find((c) => files.has(c))
}

// ---------------------------------------------------------------------------------------------------------
// Cycles
// ---------------------------------------------------------------------------------------------------------

export interface Edge {
  readonly to: string
  readonly specifier: string
  readonly line: number
}

/**
 * Circular imports, by depth-first search: every back edge closes a cycle (the path from its target down to
 * its source). Each cycle is reported once, whichever file the search entered it from; a strongly connected
 * component with several cycles reports each one the search meets, and at least one.
 */
export const findCycles = (graph: ReadonlyMap<string, ReadonlyArray<Edge>>): ReadonlyArray<{ readonly files: ReadonlyArray<string>; readonly closing: Edge & { readonly from: string } }> => {
  const state = new Map<string, "open" | "done">()
  const stack: Array<string> = []
  const seen = new Set<string>()
  const cycles: Array<{ files: ReadonlyArray<string>; closing: Edge & { from: string } }> = []
  const dfs = (node: string): void => {
    state.set(node, "open")
    stack.push(node)
    for (const edge of graph.get(node) ?? []) {
      const s = state.get(edge.to)
      if (s === undefined) {
        dfs(edge.to)
      } else if (s === "open") {
        const files = stack.slice(stack.indexOf(edge.to))
        // one key per cycle whatever file it is entered from: rotate to start at the smallest name
        const min = files.indexOf([...files].sort()[0]!)
        const key = [...files.slice(min), ...files.slice(0, min)].join("\0")
        if (!seen.has(key)) {
          seen.add(key)
          cycles.push({ files, closing: { ...edge, from: node } })
        }
      }
    }
    stack.pop()
    state.set(node, "done")
  }
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) dfs(node)
  return cycles
}

// ---------------------------------------------------------------------------------------------------------
// The check
// ---------------------------------------------------------------------------------------------------------

const isTestFile = (path: string) => /(^|\/)(test|tests|__tests__)\//.test(path) || /\.(test|spec)\.tsx?$/.test(path)

export const check = (ws: Workspace, rules: Readonly<Record<string, PackageRule>> = RULES): ReadonlyArray<Violation> => {
  const violations: Array<Violation> = []
  const workspaceNames = new Set(ws.packages.flatMap((p) => (p.manifest.name === undefined ? [] : [p.manifest.name])))
  const isWorkspace = (name: string) => workspaceNames.has(name) || name in rules || name.startsWith("@artana/")

  /** Why `pkg` (with `rule`) may not depend on `dep`, or undefined if it may. */
  const forbidden = (pkg: string, rule: PackageRule, dep: string): string | undefined => {
    if (dep === pkg) return undefined
    if (rule.never?.includes(dep)) return `${pkg} never imports ${dep}`
    if (isWorkspace(dep)) {
      const target = rules[dep]
      if (target?.kind === "adapter" && rule.kind !== "consumer") {
        return `nothing depends on an adapter (${dep}) except apps, examples, the CLI, bench and tests`
      }
      if (rule.workspace !== undefined && !rule.workspace.includes(dep)) {
        return rule.workspace.length === 0
          ? `${pkg} imports no other @artana package`
          : `${pkg} may depend only on ${rule.workspace.join(", ")} among @artana packages`
      }
      return undefined
    }
    if (rule.external !== undefined && !rule.external.includes(dep) && !TEST_RUNNERS.includes(dep)) {
      return `${pkg} may import only ${[...rule.external, "node:*"].join(", ")}`
    }
    return undefined
  }

  for (const p of [...ws.packages].sort((a, b) => a.dir.localeCompare(b.dir))) {
    const name = p.manifest.name
    const manifestFile = `${p.dir}/package.json`
    if (name === undefined) {
      violations.push({ file: manifestFile, import: "(name)", rule: "every workspace package has a name" })
      continue
    }
    const rule = rules[name]
    if (rule === undefined) {
      violations.push({ file: manifestFile, import: name, rule: "package missing from the RULES table in scripts/lib/architecture.ts" })
      continue
    }

    // (a) package.json: dependencies and peerDependencies (devDependencies serve tests, which are exempt)
    const declared = { ...p.manifest.dependencies, ...p.manifest.peerDependencies }
    for (const dep of Object.keys(declared).sort()) {
      if (TEST_RUNNERS.includes(dep) && p.manifest.peerDependenciesMeta?.[dep]?.optional !== true) {
        violations.push({ file: manifestFile, import: dep, rule: `${dep} is for the testing kit only: an optional peer dependency` })
        continue
      }
      const why = forbidden(name, rule, dep)
      if (why !== undefined) violations.push({ file: manifestFile, import: dep, rule: why })
    }
    for (const dep of rule.mustDependOn ?? []) {
      if (!(dep in declared)) violations.push({ file: manifestFile, import: dep, rule: `${name} depends on ${dep} (dependencies or peerDependencies)` })
    }

    // (a) import specifiers in src, and (b) the relative import graph
    const srcFiles = new Map([...p.files].filter(([path]) => path.startsWith("src/") && !isTestFile(path)))
    const imports = new Map([...srcFiles].sort(([a], [b]) => a.localeCompare(b)).map(([path, text]) => [path, parseImports(path, text)]))
    const resolved = (path: string, ref: ImportRef) => (isRelative(ref.specifier) ? resolveRelative(path, ref.specifier, srcFiles) : undefined)
    // the cycle graph has runtime edges only: `import type` / `export type` are erased and cannot cycle at load
    const graph = new Map([...imports].map(([path, refs]) => [
      path,
      refs.flatMap((ref) => {
        const to = resolved(path, ref)
        return to === undefined || ref.typeOnly ? [] : [{ to, specifier: ref.specifier, line: ref.line }]
      })
    ]))
    // the files the runner-free entries reach, by every import (types included)
    const runnerFree = new Map<string, string | undefined>() // file -> the file it was reached from
    const reach = (path: string, from: string | undefined): void => {
      if (runnerFree.has(path) || !imports.has(path)) return
      runnerFree.set(path, from)
      for (const ref of imports.get(path)!) {
        const to = resolved(path, ref)
        if (to !== undefined) reach(to, path)
      }
    }
    for (const entry of rule.runnerFreeEntries ?? DEFAULT_RUNNER_FREE_ENTRIES) reach(entry, undefined)
    const chain = (path: string): string => {
      const from = runnerFree.get(path)
      return from === undefined ? path : `${chain(from)} -> ${path}`
    }

    for (const [path, refs] of imports) {
      const file = `${p.dir}/${path}`
      for (const ref of refs) {
        if (isRelative(ref.specifier) || ref.specifier.startsWith("node:") || isBuiltin(ref.specifier)) continue
        const dep = packageOf(ref.specifier)
        if (TEST_RUNNERS.includes(dep) && runnerFree.has(path)) {
          violations.push({ file, line: ref.line, import: ref.specifier, rule: `a test runner reachable from a main entry point (${chain(path)}): only a testing entry point may reach one` })
          continue
        }
        const why = forbidden(name, rule, dep)
        if (why !== undefined) violations.push({ file, line: ref.line, import: ref.specifier, rule: why })
      }
    }
    for (const cycle of findCycles(graph)) {
      const { closing } = cycle
      violations.push({
        file: `${p.dir}/${closing.from}`,
        line: closing.line,
        import: closing.specifier,
        rule: `circular import: ${[...cycle.files, cycle.files[0]!].join(" -> ")}`
      })
    }
  }
  return violations
}

export const formatViolation = (v: Violation): string =>
  `${v.file}${v.line === undefined ? "" : `:${v.line}`}: "${v.import}" -- ${v.rule}`

// ---------------------------------------------------------------------------------------------------------
// Reading the real repo
// ---------------------------------------------------------------------------------------------------------

const walk = (root: string, dir: string, out: Map<string, string>): void => {
  if (!existsSync(join(root, dir))) return
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") walk(root, path, out)
    } else if (/\.(ts|mts|tsx)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) {
      out.set(path, readFileSync(join(root, path), "utf8"))
    }
  }
}

/** Workspace packages: packages/*, apps/*, bench (as pnpm-workspace.yaml lists them); src/**\/*.ts of each. */
export const loadWorkspace = (repoRoot: string): Workspace => {
  const dirs: Array<string> = []
  for (const group of ["packages", "apps"]) {
    if (!existsSync(join(repoRoot, group))) continue
    for (const e of readdirSync(join(repoRoot, group), { withFileTypes: true })) {
      if (e.isDirectory() && existsSync(join(repoRoot, group, e.name, "package.json"))) dirs.push(`${group}/${e.name}`)
    }
  }
  if (existsSync(join(repoRoot, "bench", "package.json"))) dirs.push("bench")
  return {
    packages: dirs.sort().map((dir) => {
      const root = join(repoRoot, dir)
      const files = new Map<string, string>()
      walk(root, "src", files)
      return { dir: relative(repoRoot, root).split("\\").join("/"), manifest: JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Manifest, files }
    })
  }
}
