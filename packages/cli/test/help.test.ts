// `artana --help`: Artana's own help (descriptions, examples, exit codes; none of @effect/cli's generic text),
// answered without loading any package, so it starts about as fast as Node (the time is a benchmark: `pnpm bench
// cli`; this file checks the invariant behind it).
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { builtinModules } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { artana, cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const SRC = fileURLToPath(new URL("../src/", import.meta.url))

/** The packages a module loads before it runs, following its static imports (`import type` and `import()` aside). */
const staticPackages = (entry: string): Set<string> => {
  const packages = new Set<string>()
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const text = fs.readFileSync(file, "utf8")
    for (const m of text.matchAll(/^import\s+(?!type\b)[^"']*?from\s+["']([^"']+)["']/gm)) {
      const spec = m[1]!
      if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts")))
      else packages.add(spec)
    }
  }
  visit(entry)
  return packages
}

const FILLER = ["A user-defined piece of text", "This setting is optional", "A true or false value", "--wizard", "--completions"]

describe("artana --help", () => {
  it("loads no package before answering --help or --version: only Node's own modules", () => {
    const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)])
    const loaded = [...staticPackages(path.join(SRC, "bin.ts"))]
    expect(loaded.filter((spec) => !builtins.has(spec))).toEqual([])
  })

  it.live("lists every command with its description, the common options, examples and the exit codes", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      for (const args of [["--help"], [], ["-h"]]) {
        const help = yield* artana(args, { cwd })
        expect(help.code).toBe(0)
        for (const name of ["run", "replay", "reconcile", "report", "list-runs", "show-run", "verify"]) {
          expect(help.stdout).toMatch(new RegExp(`^  ${name}\\s+\\S`, "m"))
        }
        expect(help.stdout).toContain("--db FILE|postgres://URL")
        expect(help.stdout).toContain("artana run plan.yaml --policy policy.yaml --run-id demo-1")
        for (const code of [0, 1, 2, 3, 4, 5, 6, 7, 8, 130]) expect(help.stdout).toMatch(new RegExp(`^\\s+${code}  \\S`, "m"))
        for (const filler of FILLER) expect(help.stdout).not.toContain(filler)
        expect(help.stdout).not.toContain("\u001b[")
      }
    }))

  it.live("a command's help: its usage, arguments, options, examples and its exit codes; a bad command line points to it", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const reconcile = yield* artana(["reconcile", "--help"], { cwd })
      expect(reconcile.code).toBe(0)
      expect(reconcile.stdout.split("\n")[0]).toBe("artana reconcile RUN --step ID (--completed JSON | --failed MESSAGE) [--force]")
      for (const flag of ["--step ID", "--completed JSON", "--failed MESSAGE", "--force", "--tenant ID", "--verbose"]) expect(reconcile.stdout).toContain(flag)
      expect(reconcile.stdout).toContain("artana reconcile crash-1 --step slow --failed")
      expect(reconcile.stdout).toMatch(/^\s+8 {2}the run needs attention/m)
      for (const filler of FILLER) expect(reconcile.stdout).not.toContain(filler)
      expect((yield* artana(["help", "list-runs"], { cwd })).stdout.split("\n")[0]).toBe("artana list-runs [--status S] [--workflow W] [--since TIME] [--until TIME] [--limit N] [--after CURSOR] [--version V] [--root RUN]")

      const missing = yield* artana(["report"], { cwd })
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain("Missing argument <RUN>")
      expect(missing.stderr).toContain("see `artana report --help` for the usage")

      // A first word that is no command: said as such, not as @effect/cli's "Invalid subcommand".
      const option = yield* artana(["--bogus"], { cwd })
      expect(option.code).toBe(2)
      expect(option.stderr).toContain("--bogus before a command: the command comes first")
      expect(option.stderr).not.toContain("Invalid subcommand")
      const typo = yield* artana(["lsit-runs"], { cwd })
      expect(typo.code).toBe(2)
      expect(typo.stderr).toContain('no command "lsit-runs"; the commands: run, replay')
      expect(typo.stderr).toContain("see `artana --help` for the usage")
    }))
})
