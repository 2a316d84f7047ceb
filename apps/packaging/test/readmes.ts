// What the install test reads from the READMEs: the checked examples and the install line beside them.
//
// A checked example is a ```ts block right after an HTML comment `<!-- checked-example: NAME -->` (or
// `<!-- checked-example: NAME compile-only -->` for one that needs a network model or a database server to run).
// A README with a checked example has one or more install lines (`pnpm add ...` in ```sh blocks): its own, then any
// a section adds for its examples (core's table of the seed's calls: the agent's packages). The examples must compile
// and run in a fresh project where only those lines were run, in order.
import * as fs from "node:fs"
import * as path from "node:path"

export interface Example {
  readonly name: string
  readonly code: string
  readonly compileOnly: boolean
}

export interface Readme {
  /** The README's path, relative to the repository. */
  readonly file: string
  /** Its `pnpm add` lines, in order: the first is the package's own. */
  readonly installLines: ReadonlyArray<string>
  readonly examples: ReadonlyArray<Example>
}

const MARKER = /<!-- checked-example: ([a-z0-9-]+)( compile-only)? -->\n```ts\n([\s\S]*?)```/g
const SH_BLOCK = /```sh\n([\s\S]*?)```/g

/** The checked examples of a README's text. */
export const examples = (text: string): ReadonlyArray<Example> =>
  [...text.matchAll(MARKER)].map((m) => ({ name: m[1]!, compileOnly: m[2] !== undefined, code: m[3]! }))

/** Every install command of a README's text: the `pnpm add` / `npm i` lines of its sh blocks, comments cut off. */
export const installLines = (text: string): ReadonlyArray<string> =>
  [...text.matchAll(SH_BLOCK)].flatMap((m) =>
    m[1]!.split("\n").map((l) => l.replace(/\s+#.*$/, "").trim()).filter((l) => /^(pnpm add|npm i|npm install) /.test(l))
  )

/** The READMEs (root and packages/*) that hold checked examples, each with its install lines. */
export const checkedReadmes = (root: string): ReadonlyArray<Readme> => {
  const files = ["README.md", ...fs.readdirSync(path.join(root, "packages")).map((d) => `packages/${d}/README.md`)]
  return files.flatMap((file) => {
    const full = path.join(root, file)
    if (!fs.existsSync(full)) return []
    const text = fs.readFileSync(full, "utf8")
    const found = examples(text)
    if (found.length === 0) return []
    const lines = installLines(text).filter((l) => l.startsWith("pnpm add "))
    if (lines.length === 0) throw new Error(`${file}: a README with checked examples needs a \`pnpm add\` line`)
    return [{ file, installLines: lines, examples: found }]
  })
}

/** The registry's versions a command asks for: each non-flag argument after the verb (`effect@^3.22.4`, `@artana/core`). */
export const packagesOf = (line: string): ReadonlyArray<string> =>
  line.split(/\s+/).slice(2).filter((a) => !a.startsWith("-"))

/** The name of a package argument (`@effect/sql@^0.52.1` -> `@effect/sql`). */
export const nameOf = (spec: string): string => {
  const at = spec.indexOf("@", 1)
  return at === -1 ? spec : spec.slice(0, at)
}
