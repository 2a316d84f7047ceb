// The `artana` the tests start (vitest's globalSetup), and the steering tests' agent process: src/bin.ts and everything it imports, the sources of the
// @artana/* packages included (test/bin/tsconfig.json's paths, as under tsx), bundled into one file by esbuild once
// per test run. `artana run` of a two-step plan took 0.7-0.9 s of CPU from it, 3.9-4.4 s as `node --import tsx
// src/bin.ts` (over a thousand modules, each through tsx's loader hooks); `artana report` 0.5-0.7 s against 2.8-4.0 s
// (load 25; wall 1.5-3.4 s against 8.4-10.6 s). The suite starts about two hundred of them, on a busy machine.
//
// Each module keeps its own `import.meta.url` (a file it reads beside it, a package it requires from where it is), and
// better-sqlite3 (a native addon) is loaded from node_modules as it is. A command that loads the application's own
// modules (`replay-test --workflows`) runs under tsx instead: they import @artana/core and effect, and must get the
// very modules the command runs on (`artanaUnderTsx`).
import { build, type Plugin } from "esbuild"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    /** The bundled `artana` (a file to run with `node`). */
    readonly artanaBin: string
    /** The bundled agent process of the steering tests (test/steer/child.ts). */
    readonly steerChild: string
  }
}

const CLI = fileURLToPath(new URL("../", import.meta.url))

/**
 * Every bundled module sees the `import.meta.url` of its own file, not the bundle's; a native addon is imported from
 * where its importer would find it (an absolute path: the bundle's folder has no node_modules).
 */
const asInSources: Plugin = {
  name: "as-in-sources",
  setup(b) {
    b.onResolve({ filter: /^(better-sqlite3|pg-native)$/ }, async (args) => {
      if (args.pluginData === "resolving") return undefined
      const found = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: "resolving" })
      return found.errors.length > 0 ? { path: args.path, external: true } : { path: found.path, external: true }
    })
    b.onLoad({ filter: /\.(ts|js|mjs)$/ }, (args) => {
      const text = fs.readFileSync(args.path, "utf8")
      if (!text.includes("import.meta.url")) return undefined
      return {
        contents: text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)),
        loader: args.path.endsWith(".ts") ? "ts" : "js"
      }
    })
  }
}

/** One entry point and everything it imports, in one ES module file. */
const bundle = (entry: string, outfile: string, tsconfig: string) =>
  build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    tsconfig,
    plugins: [asInSources],
    // The CommonJS packages in the bundle call `require`.
    banner: { js: "import { createRequire as artanaCreateRequire } from 'node:module'; const require = artanaCreateRequire(import.meta.url);" },
    logLevel: "warning"
  })

export default async function setup(project: Pick<TestProject, "provide">): Promise<() => void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-cli-bin-"))
  const artana = path.join(dir, "artana.mjs")
  const steerChild = path.join(dir, "steer-child.mjs")
  await Promise.all([
    bundle(path.join(CLI, "src/bin.ts"), artana, path.join(CLI, "test/bin/tsconfig.json")),
    // The steering tests' agent process resolves the @artana/* packages it imports from node_modules, as it did under
    // tsx (no paths): one copy of each.
    bundle(path.join(CLI, "test/steer/child.ts"), steerChild, path.join(CLI, "tsconfig.test.json"))
  ])
  project.provide("artanaBin", artana)
  project.provide("steerChild", steerChild)
  return () => fs.rmSync(dir, { recursive: true, force: true })
}
