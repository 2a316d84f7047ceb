// Installs as a user does. Every publishable package is packed (`pnpm pack`), and the tarballs are installed into
// fresh projects in a temp directory outside the workspace, with exactly the README's install line (its @artana/*
// names pointed at the tarballs; effect and everything else come from the npm registry). Each README's checked
// examples are compiled with tsc (strict, NodeNext) and run on this Node; the `artana` CLI, installed globally as its
// README says (`npm i -g @artana/cli`, into a prefix of the test's), runs the root README's five-minute demo. One
// fixture for the file: pack and install once.
//
// @artana/* are not on the registry, so each project's package.json overrides them with the tarballs: the
// packages' own dependencies on each other (the CLI's on @artana/sandbox, say) resolve to the tarballs too. A global
// install reads no project's overrides: it gets the @artana scope from a registry of the tarballs (registry.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Native from "./native.js"
import type { Readme } from "./readmes.js"
import { checkedReadmes, installLines, nameOf, packagesOf } from "./readmes.js"
import * as Registry from "./registry.js"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc")

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly version: string
  readonly exports?: Record<string, unknown>
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
}

interface Packed {
  readonly name: string
  readonly manifest: Manifest
  readonly tarball: string
}

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "artana-install-"))
const TARBALLS = path.join(tmp, "tarballs")

/** better-sqlite3 for the installs: the workspace's binary as a local prebuild, or a compile against this Node. */
const native = Native.prepare(ROOT, path.join(tmp, "native"))
/**
 * With the prebuild, pnpm's side-effects cache is off: each project unpacks it (a second), and neither reads a build
 * the machine's shared store may hold for this Node nor writes one there. Without it, a compile per project would
 * take minutes: the cache stays on.
 */
const installEnv = native.prebuilt === undefined ? native.env : { ...native.env, npm_config_side_effects_cache: "false" }
/** A command may compile better-sqlite3 when there is no prebuild: its time is added to the command's. */
const COMMAND_MS = native.prebuilt === undefined ? 480_000 + Native.COMPILE_MS : 480_000

/** The environment of a child: nothing of the pnpm script that runs this test (its package, its workspace). */
const childEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", ...installEnv, ...extra }
  for (const key of Object.keys(env)) {
    if (/^(npm_package_|npm_lifecycle_|PNPM_SCRIPT|npm_config_user_agent$|INIT_CWD$|ARTANA_)/.test(key)) delete env[key]
  }
  return env
}

const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = childEnv(), timeout = COMMAND_MS) =>
  new Promise<Result>((resolve) => {
    execFile(command, args, { cwd, env, timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    })
  })

/** How long each step of the fixture took, printed at its end: the budget is about 3 minutes in CI. */
const timings: Array<string> = []
const timed = async <A>(label: string, f: () => Promise<A>): Promise<A> => {
  const start = performance.now()
  try {
    return await f()
  } finally {
    timings.push(`${label} ${((performance.now() - start) / 1000).toFixed(1)} s`)
  }
}

const ok = async (command: string, args: ReadonlyArray<string>, cwd: string): Promise<Result> => {
  const result = await timed(`${command} ${args[0]} (${path.basename(cwd)})`, () => run(command, args, cwd))
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(" ")} (in ${cwd}) exited ${result.code}\n${result.stdout}\n${result.stderr}`)
  }
  return result
}

const publishable = (): ReadonlyArray<{ readonly dir: string; readonly manifest: Manifest }> =>
  fs.readdirSync(path.join(ROOT, "packages")).flatMap((d) => {
    const dir = path.join(ROOT, "packages", d)
    const file = path.join(dir, "package.json")
    if (!fs.existsSync(file)) return []
    const manifest = JSON.parse(fs.readFileSync(file, "utf8")) as Manifest
    return manifest.private === true ? [] : [{ dir, manifest }]
  })

const pack = async (): Promise<ReadonlyArray<Packed>> => {
  fs.mkdirSync(TARBALLS)
  const packed: Array<Packed> = []
  for (const { dir, manifest } of publishable()) {
    await ok("pnpm", ["pack", "--pack-destination", TARBALLS], dir)
    const tarball = path.join(TARBALLS, `${manifest.name.replace("@", "").replace("/", "-")}-${manifest.version}.tgz`)
    if (!fs.existsSync(tarball)) throw new Error(`pnpm pack wrote no ${tarball}`)
    packed.push({ name: manifest.name, manifest, tarball })
  }
  return packed
}

/**
 * A fresh project whose @artana/* dependencies are the tarballs: `direct` (the ones its install commands name, which
 * npm refuses to see overridden) from the command line, the others through overrides.
 */
const project = (name: string, packed: ReadonlyArray<Packed>, direct: ReadonlyArray<string>): string => {
  const dir = path.join(tmp, name)
  fs.mkdirSync(dir)
  const overrides = Object.fromEntries(packed.filter((p) => !direct.includes(p.name)).map((p) => [p.name, `file:${p.tarball}`]))
  const manifest = { name, private: true, type: "module", pnpm: { overrides } }
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2))
  return dir
}

/** The README's install line, its @artana/* names pointed at the tarballs: the arguments after `pnpm`. */
const installArgs = (line: string, packed: ReadonlyArray<Packed>): ReadonlyArray<string> =>
  line.split(/\s+/).slice(1).map((arg) => {
    if (!arg.startsWith("@artana/")) return arg
    const found = packed.find((p) => p.name === nameOf(arg))
    if (found === undefined) throw new Error(`the install line names ${arg}, which is not a publishable package`)
    return found.tarball
  })

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    target: "ES2022",
    lib: ["ES2022"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    types: ["node"],
    outDir: "out",
    skipLibCheck: true
  },
  include: ["*.ts"]
}

interface Installed {
  readonly readme: Readme
  readonly dir: string
  readonly compiled: Result
}

/** A README's project: its install lines, then TypeScript and Node's types (a TypeScript user has both), then tsc. */
const installReadme = async (readme: Readme, packed: ReadonlyArray<Packed>): Promise<Installed> => {
  const dir = project(`readme-${readme.examples[0]!.name}`, packed, readme.installLines.flatMap(packagesOf).map(nameOf))
  for (const line of readme.installLines) await ok("pnpm", [...installArgs(line, packed), "--ignore-workspace"], dir)
  await ok("pnpm", ["add", "-D", "@types/node@^20.19.0", "--ignore-workspace"], dir)
  for (const example of readme.examples) fs.writeFileSync(path.join(dir, `${example.name}.ts`), example.code)
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2))
  const compiled = await timed(`tsc (${path.basename(dir)})`, () => run(process.execPath, [TSC, "-p", "."], dir))
  return { readme, dir, compiled }
}

/**
 * The npm registry, pinged once with the installs' environment before they start. Where it cannot be reached (no
 * network, or a proxy that re-signs TLS with a certificate authority the environment does not name), `pnpm add`
 * may wait without end (seen: after a TLS failure it sat idle until the fixture's timeout, 9 minutes on): the
 * fixture fails at once instead, saying why. `npm ping`, not a package's metadata: npm answers `npm view` from its
 * cache when the registry cannot be reached.
 */
const registryReachable = async (): Promise<void> => {
  const result = await run("npm", ["ping", "--fetch-retries=0"], tmp, childEnv(), 60_000)
  if (result.code !== 0) {
    const reason = result.stderr.split("\n").find((l) => /request to|ETIMEDOUT|ENOTFOUND|ECONNREFUSED|cert/i.test(l)) ?? `npm ping exited ${result.code}`
    throw new Error(
      `the npm registry cannot be reached from the installs' environment (${reason.replace(/^npm error /, "")}). ` +
        "Behind a proxy that re-signs TLS, name its certificate authority in npm's `cafile` or in NODE_EXTRA_CA_CERTS " +
        "(apps/packaging/turbo.json passes it, and the proxy variables, through turbo to this test)."
    )
  }
}

/** The @artana scope's registry (the tarballs) for the global installs; the npm registry serves the rest. */
let registry: Registry.Registry | undefined
/** The prefix of the global installs: `bin/artana`, `lib/node_modules/@artana/cli`. */
const GLOBAL = path.join(tmp, "global")

/** An `npm i -g` line of a README, run as written, into the test's prefix with the scope's registry. */
const installGlobally = async (line: string): Promise<Result> => {
  expect(line).toMatch(/^npm i -g @artana\//)
  if (registry === undefined) throw new Error("the @artana registry is not started")
  const args = [...line.split(/\s+/).slice(1), "--prefix", GLOBAL, `--@artana:registry=${registry.url}`, "--no-audit", "--no-fund"]
  return ok("npm", args, tmp)
}

/** The CLI as its README installs it: `npm i -g @artana/cli`, a global install (into the test's prefix). */
const installCli = async (): Promise<void> => {
  const line = installLines(fs.readFileSync(path.join(ROOT, "packages/cli/README.md"), "utf8")).find((l) => l.includes("@artana/cli"))
  if (line === undefined) throw new Error("packages/cli/README.md has no install line for @artana/cli")
  expect(line).toBe("npm i -g @artana/cli")
  await installGlobally(line)
}

let packed: ReadonlyArray<Packed> = []
let installed: ReadonlyArray<Installed> = []

/** The READMEs with checked examples: a project each. */
const READMES = checkedReadmes(ROOT)
/** Projects installed at once: each mostly waits on the registry, then runs tsc. */
const INSTALLS_AT_ONCE = 2

/** `f` over `items`, at most `limit` at a time, the results in the items' order. */
const inPool = async <A, B>(items: ReadonlyArray<A>, limit: number, f: (a: A) => Promise<B>): Promise<ReadonlyArray<B>> => {
  const results: Array<B> = []
  let next = 0
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) results[i] = await f(items[i]!)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

beforeAll(async () => {
  await timed("npm ping", registryReachable)
  packed = await pack()
  registry = await Registry.start(packed)
  // The npm install of the CLI and the pnpm projects at once: each waits on the network and on native builds.
  const [, projects] = await Promise.all([
    installCli(),
    inPool(READMES, INSTALLS_AT_ONCE, (readme) => installReadme(readme, packed))
  ])
  installed = projects
  const sqlite = native.prebuilt === undefined ? "better-sqlite3 compiled from source" : `better-sqlite3 from the workspace's ${native.prebuilt}`
  console.log(`install fixture (${sqlite}): ${timings.join(", ")}`)
  // Packing, the CLI's global install, and a minute per README's project (on a loaded 2-core machine, 10 READMEs took
  // more than the 600 s this budget once was).
}, 300_000 + 60_000 * READMES.length + (native.prebuilt === undefined ? 2 * Native.COMPILE_MS : 0))

afterAll(async () => {
  await registry?.close()
  await fs.promises.rm(tmp, { recursive: true, force: true })
})

/** The directories of the package `name` installed under `root` (in any `node_modules`, however deep). */
const packageDirs = (root: string, name: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue
      const sub = path.join(dir, entry.name)
      if (path.basename(dir) === "node_modules" && entry.name === name) found.push(sub)
      walk(sub)
    }
  }
  walk(root)
  return found
}

/** The Effect line the packages are built on: core's peer ranges of `effect` and `@effect/*`. */
const effectPeers = (): Record<string, string> => {
  const core = JSON.parse(fs.readFileSync(path.join(ROOT, "packages/core/package.json"), "utf8")) as Manifest
  return Object.fromEntries(
    Object.entries(core.peerDependencies ?? {}).filter(([name]) => name === "effect" || name.startsWith("@effect/"))
  )
}

/** Core's peers a project must install itself: the `effect` / `@effect/*` ones not marked optional, with their ranges. */
const requiredEffectPeers = (): Record<string, string> => {
  const core = JSON.parse(fs.readFileSync(path.join(ROOT, "packages/core/package.json"), "utf8")) as Manifest
  return Object.fromEntries(Object.entries(effectPeers()).filter(([name]) => core.peerDependenciesMeta?.[name]?.optional !== true))
}

/** The publishable packages that install @artana/core: core, and those depending on it (as a dependency or a peer), however deep. */
const installingCore = (): ReadonlySet<string> => {
  const manifests = publishable().map((p) => p.manifest)
  const found = new Set(["@artana/core"])
  for (let grew = true; grew;) {
    grew = false
    for (const m of manifests) {
      const needs = Object.keys({ ...m.dependencies, ...m.peerDependencies })
      if (found.has(m.name) || !needs.some((n) => found.has(n))) continue
      found.add(m.name)
      grew = true
    }
  }
  return found
}

describe("the READMEs' install lines", () => {
  it("pin effect and every @effect/* package they name to the range the packages are built on (Effect 3, not the registry's latest)", () => {
    const peers = effectPeers()
    expect(peers["effect"]).toMatch(/^\^3\./)
    const files = ["README.md", ...publishable().map((p) => path.relative(ROOT, path.join(p.dir, "README.md")))]
    const lines = files.flatMap((file) => installLines(fs.readFileSync(path.join(ROOT, file), "utf8")).map((line) => ({ file, line })))
    expect(lines.length).toBeGreaterThanOrEqual(files.length)
    const unpinned = lines.flatMap(({ file, line }) =>
      packagesOf(line)
        .filter((spec) => nameOf(spec) === "effect" || nameOf(spec).startsWith("@effect/"))
        .filter((spec) => peers[nameOf(spec)] === undefined || spec !== `${nameOf(spec)}@${peers[nameOf(spec)]}`)
        .map((spec) => `${file}: ${spec} (in \`${line}\`)`)
    )
    expect(unpinned).toEqual([])
    // A line that installs @artana/core names effect too, so the user's own `import { Effect } from "effect"` is Effect 3.
    const withoutEffect = lines.filter(({ line }) => line.startsWith("pnpm add") && !packagesOf(line).some((s) => nameOf(s) === "effect"))
    expect(withoutEffect).toEqual([])
    // A project's line that installs @artana/core, named or through a package depending on it, names every effect /
    // @effect/* peer core requires (at core's range, checked above): a peer left out is resolved by whatever the package
    // manager picks, or missing at the first import. A global install (`npm i -g`, the CLI) is an application's own tree.
    const required = requiredEffectPeers()
    expect(Object.keys(required)).toContain("effect")
    const withCore = installingCore()
    const missing = lines
      .filter(({ line }) => !/\s-g(\s|$)/.test(line))
      .flatMap(({ file, line }) => {
        const named = packagesOf(line).map(nameOf)
        if (!named.some((n) => withCore.has(n))) return []
        return Object.entries(required).filter(([peer]) => !named.includes(peer)).map(([peer, range]) => `${file}: ${peer}@${range} (in \`${line}\`)`)
      })
    expect(missing).toEqual([])
  })
})

describe("the packed tarballs", () => {
  it("carry no .tsbuildinfo and give every export a default condition (require() of the ESM build)", async () => {
    expect(packed.map((p) => p.name).sort()).toEqual(publishable().map((p) => p.manifest.name).sort())
    for (const p of packed) {
      const { stdout } = await ok("tar", ["tzf", p.tarball], tmp)
      expect(stdout.split("\n").filter((f) => f.endsWith(".tsbuildinfo")), p.name).toEqual([])
      for (const [entry, target] of Object.entries(p.manifest.exports ?? {})) {
        if (typeof target !== "object" || target === null || !("import" in target)) continue
        expect(target, `${p.name} exports["${entry}"]`).toHaveProperty("default", target.import)
      }
    }
  })
})

describe("a fresh project with a README's install line", () => {
  it("installs, compiles every checked example with tsc (strict, NodeNext) and runs those that run offline", async () => {
    expect(installed.map((i) => i.readme.file)).toContain("README.md")
    for (const { readme, dir, compiled } of installed) {
      expect(compiled.stdout + compiled.stderr, `tsc on ${readme.file}'s examples`).toBe("")
      expect(compiled.code, `tsc on ${readme.file}'s examples`).toBe(0)
      for (const example of readme.examples.filter((e) => !e.compileOnly)) {
        const result = await run(process.execPath, [path.join("out", `${example.name}.js`)], dir)
        expect(result.stderr, `${readme.file}: ${example.name}`).toBe("")
        expect(result.code, `${readme.file}: ${example.name}`).toBe(0)
      }
    }
  }, 60_000 + 30_000 * READMES.flatMap((r) => r.examples.filter((e) => !e.compileOnly)).length)

  it("has one effect, on the 3.x line, whatever the registry's latest is", () => {
    for (const { readme, dir } of installed) {
      const effect = JSON.parse(fs.readFileSync(path.join(dir, "node_modules/effect/package.json"), "utf8")) as Manifest
      expect(effect.version, readme.file).toMatch(/^3\./)
    }
  })

  it("can require() the packages from CommonJS (Node's require(esm))", async () => {
    const root = installed.find((i) => i.readme.file === "README.md")!
    fs.writeFileSync(
      path.join(root.dir, "require.cjs"),
      `const { Kernel } = require("@artana/core")\nconst { SqliteStore } = require("@artana/store-sqlite")\n` +
        `console.log(typeof Kernel.layer, typeof SqliteStore.layer)\n`
    )
    const result = await run(process.execPath, ["require.cjs"], root.dir)
    expect(result.stdout.trim()).toBe("function function")
    expect(result.code).toBe(0)
  })
})

describe("the artana CLI installed globally (npm i -g) from its tarball", () => {
  const artana = () => path.join(GLOBAL, "bin/artana")
  const globalModules = path.join(GLOBAL, "lib/node_modules")

  it("runs the root README's five-minute demo as written", async () => {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
    const start = readme.indexOf("<!-- cli-demo:start -->")
    const end = readme.indexOf("<!-- cli-demo:end -->")
    const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start, end))
    if (start === -1 || end === -1 || block === null) throw new Error("the root README has no cli-demo block")
    const cwd = fs.mkdtempSync(path.join(tmp, "demo-"))
    const script = `artana() { "${artana()}" "$@"; echo "[exit $?]"; }\n${block[1]!}`
    const result = await run("bash", ["-c", script], cwd)
    expect(result.stderr).toBe("")
    expect([...result.stdout.matchAll(/\[exit (\d+)\]/g)].map((m) => Number(m[1]))).toEqual([3, 3, 0, 0, 3])
    expect(result.stdout).toContain("hash chain intact")
    expect(result.stdout).toContain("matches its log")
    const json = result.stdout.slice(result.stdout.lastIndexOf("[exit", result.stdout.lastIndexOf("[exit") - 1) + "[exit 0]".length, result.stdout.lastIndexOf("[exit"))
    const report = JSON.parse(json.trim()) as { readonly steps: ReadonlyArray<{ readonly id: string; readonly decision: string }> }
    expect(report.steps.map((s) => [s.id, s.decision])).toEqual([["notes", "allowed"], ["count", "allowed"], ["peek", "denied"], ["save", "allowed"]])
  })

  it("has one better-sqlite3, built for this Node: the workspace's binary unpacked as a prebuilt download (no compile), or compiled against this Node's headers", async () => {
    const dirs = packageDirs(globalModules, "better-sqlite3")
    expect(dirs).toHaveLength(1)
    const binary = path.join(dirs[0]!, "build/Release/better_sqlite3.node")
    if (native.prebuilt !== undefined) {
      expect(fs.readFileSync(binary).equals(fs.readFileSync(native.prebuilt))).toBe(true)
      expect(fs.existsSync(path.join(dirs[0]!, "build/Release/obj.target"))).toBe(false)
    }
    const loaded = await run(process.execPath, ["-e", `new (require(${JSON.stringify(dirs[0])}))(":memory:").close()`], tmp)
    expect(loaded.stderr).toBe("")
    expect(loaded.code).toBe(0)
  })

  it("carries no PostgreSQL driver, and a postgres:// URL says what to install (exit 7, password hidden)", async () => {
    expect(fs.existsSync(path.join(globalModules, "@artana/cli/node_modules/pg"))).toBe(false)
    expect(fs.existsSync(path.join(globalModules, "@artana/store-postgres"))).toBe(false)
    const result = await run(artana(), ["list-runs", "--db", "postgres://app:s3cret@127.0.0.1:9/artana"], tmp)
    expect(result.code).toBe(7)
    expect(result.stderr).toContain("PostgreSQL support is not installed")
    expect(result.stderr).toContain("npm i -g @artana/store-postgres")
    expect(result.stderr).toContain("postgres://app:***@127.0.0.1:9/artana")
    expect(result.stdout + result.stderr).not.toContain("s3cret")
  })

  it("with @artana/store-postgres installed as the message says (npm i -g), opens PostgreSQL (here: a port where none listens)", async () => {
    const before = await run(artana(), ["list-runs", "--db", "postgres://app:s3cret@127.0.0.1:9/artana"], tmp)
    const told = /npm i -g @artana\/store-postgres/.exec(before.stderr)
    if (told === null) throw new Error(`the CLI did not say what to install:\n${before.stderr}`)
    await installGlobally(told[0])
    const result = await run(artana(), ["list-runs", "--db", "postgres://app:s3cret@127.0.0.1:9/artana"], tmp)
    expect(result.code).toBe(7)
    expect(result.stderr).toContain("postgres://app:***@127.0.0.1:9/artana")
    expect(result.stderr).not.toContain("not installed")
    expect(result.stdout + result.stderr).not.toContain("s3cret")
  })
})
