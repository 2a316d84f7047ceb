/**
 * The architecture check (CONVENTIONS.md, "Repo tooling"):
 *   node --import tsx scripts/check-architecture.ts
 * (a) package boundaries from DESIGN.md ("Packages and who may import whom"), on each package.json's
 *     dependencies/peerDependencies and on the import specifiers of packages' src (tests are exempt);
 * (b) no circular relative imports inside each package's src (`import type` edges are ignored: erased);
 * (c) no function in a package's src longer than MAX_FUNCTION_LINES (scripts/lib/functionSize.ts).
 * The rules are the `RULES` table in scripts/lib/architecture.ts. Exits 1 on any violation.
 */
import { fileURLToPath } from "node:url"
import { check, formatViolation, loadWorkspace, RULES } from "./lib/architecture.js"
import { longFunctions, MAX_FUNCTION_LINES } from "./lib/functionSize.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const ws = loadWorkspace(root)
const long = ws.packages.flatMap((p) =>
  [...p.files].filter(([f]) => f.startsWith("src/")).flatMap(([f, text]) =>
    longFunctions(f, text).map((l) => `${p.dir}/${f}:${l.line}: ${l.name} is ${l.lines} lines -- split it (at most ${MAX_FUNCTION_LINES})`)
  )
)
const violations = [...check(ws, RULES).map(formatViolation), ...long]
const files = ws.packages.reduce((n, p) => n + [...p.files.keys()].filter((f) => f.startsWith("src/")).length, 0)

if (violations.length > 0) {
  console.error(`architecture: ${violations.length} violation(s)`)
  for (const v of violations) console.error(`  ${v}`)
  process.exitCode = 1
} else {
  console.log(`architecture: ok (${ws.packages.length} packages, ${files} src files: package boundaries, no circular imports, functions of at most ${MAX_FUNCTION_LINES} lines)`)
}
