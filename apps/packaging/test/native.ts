// The installs' one native build: better-sqlite3 12 (what `@artana/store-sqlite` runs on Node 20 and 22; installed,
// unused, on 24). Its install script is `prebuild-install || node-gyp rebuild`: where GitHub is reachable it unpacks
// a prebuilt binary, elsewhere (this machine, offline CI) it compiles SQLite from source, about 75 s of CPU and
// several minutes at a load of 20. The workspace already holds a binary for the Node that runs this test (its
// `pnpm install` built or fetched it): it is offered to the installs as a local prebuild
// (prebuild-install's `npm_config_better_sqlite3_local_prebuilds`), so each install unpacks it as it would a download,
// on every Node version alike. Only when the workspace has none that this Node loads do the installs compile, then
// against this Node's own headers (a `nodedir` in ~/.npmrc may name another version's, which builds a binary this
// Node refuses: `NODE_MODULE_VERSION`), with the time that takes added to the fixture's.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"

export interface Native {
  /** The environment of the installs (npm, pnpm): where the local prebuild is, this Node's headers. */
  readonly env: Record<string, string>
  /** The workspace's binary offered as the prebuild, or undefined when the installs compile. */
  readonly prebuilt: string | undefined
}

/** The time a compile of better-sqlite3 may take on a loaded 2-core machine, added to the fixture's when it compiles. */
export const COMPILE_MS = 900_000

/** The absolute path of the better-sqlite3 addon `dir` (a package directory) loads on this Node, if it loads one. */
const loadedAddon = (dir: string): string | undefined => {
  // In a child: an addon of another Node's ABI throws, and one loaded here would stay loaded in the test's process.
  const probe = `const D = require(${JSON.stringify(dir)}); new D(":memory:").close();` +
    `process.stdout.write(Object.keys(require.cache).find((k) => k.endsWith(".node")) ?? "")`
  try {
    const found = execFileSync(process.execPath, ["-e", probe], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 60_000 })
    return found === "" ? undefined : found
  } catch {
    return undefined
  }
}

/** This Node's headers (`<prefix>/include/node`, as the official tarballs and Debian's packages lay them out). */
const nodedir = (): Record<string, string> => {
  const prefix = path.resolve(path.dirname(process.execPath), "..")
  return fs.existsSync(path.join(prefix, "include/node/node_version.h")) ? { npm_config_nodedir: prefix } : {}
}

/** Packs the workspace's binary as prebuild-install's download for this Node, under `dir`. */
export const prepare = (root: string, dir: string): Native => {
  const require = createRequire(path.join(root, "packages/store-sqlite/package.json"))
  const manifest = require.resolve("better-sqlite3/package.json")
  const { name, version } = JSON.parse(fs.readFileSync(manifest, "utf8")) as { readonly name: string; readonly version: string }
  const addon = loadedAddon(path.dirname(manifest))
  if (addon === undefined) return { env: nodedir(), prebuilt: undefined }
  // The layout of a prebuilt release: build/Release/<addon>.node in `{name}-v{version}-node-v{abi}-{platform}-{arch}.tar.gz`.
  const stage = path.join(dir, "stage")
  fs.mkdirSync(path.join(stage, "build/Release"), { recursive: true })
  fs.copyFileSync(addon, path.join(stage, "build/Release", path.basename(addon)))
  const prebuilds = path.join(dir, "prebuilds")
  fs.mkdirSync(prebuilds)
  const tarball = `${name}-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
  execFileSync("tar", ["-czf", path.join(prebuilds, tarball), "-C", stage, "build"])
  fs.rmSync(stage, { recursive: true })
  return { env: { ...nodedir(), [`npm_config_${name.replace(/[^a-zA-Z0-9]/g, "_")}_local_prebuilds`]: prebuilds }, prebuilt: addon }
}
