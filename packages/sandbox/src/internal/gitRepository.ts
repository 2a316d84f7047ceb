// The repository git works in, judged before git runs: git reads its configuration, and a repository's own
// `config` can make git run programs (`diff.external`, `filter.<driver>.clean`, `diff.<driver>.textconv`,
// `core.sshCommand`, `gpg.program` with `commit.gpgSign`, `alias.x = !sh`...) or read files outside the workspace
// (`include.path`, `core.excludesFile`, `commit.template`, `objects/info/alternates`). The environment already
// overrides what it can (hooks, fsmonitor, pager, editor, protocols); the rest is refused here: the repository's
// configuration may hold only keys from a short allowlist of harmless ones (what `git init` and `git clone` write,
// identities, branches and remotes, display settings), read by git itself (`git config --file F --list`), and its
// git directory, common directory and alternate object stores must be inside the readable area.
import { spawnSync, type SpawnSyncReturns } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { exists, isDirectory, isFile, real } from "./files.js"
import { inside, isLocalUrl } from "./git.js"
import { allowedKey } from "./gitConfigKeys.js"


/**
 * The first link under `dir` (a git directory), not following links, or undefined. Submodules' and worktrees'
 * repositories (modules/, worktrees/) are walked too; at most 200,000 entries are looked at, past which the walk stops
 * and reports the directory itself as unjudgeable.
 */
const linkWithin = (dir: string): string | undefined => {
  let budget = 200_000
  const walk = (at: string): string | undefined => {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(at, { withFileTypes: true })
    } catch {
      return undefined
    }
    for (const entry of entries) {
      if (--budget < 0) return dir
      const full = path.join(at, entry.name)
      if (entry.isSymbolicLink()) return full
      if (entry.isDirectory()) {
        const found = walk(full)
        if (found !== undefined) return found
      }
    }
    return undefined
  }
  return walk(dir)
}

/** The configuration files of the repositories under a `modules` directory (submodules, and theirs), however deep. */
const submoduleConfigs = (modules: string): ReadonlyArray<string> => {
  if (!isDirectory(modules)) return []
  const found: Array<string> = []
  const walk = (dir: string, depth: number) => {
    if (depth > 16 || !isDirectory(dir)) return
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue
      const sub = path.join(dir, entry.name)
      if (isGitDirectory(sub)) {
        if (isFile(path.join(sub, "config"))) found.push(path.join(sub, "config"))
        walk(path.join(sub, "modules"), depth + 1)
      } else walk(sub, depth + 1)
    }
  }
  walk(modules, 0)
  return found
}

/** What git's discovery checks a bare repository by: a HEAD, an objects and a refs directory. */
const isGitDirectory = (dir: string): boolean => {
  if (!isFile(path.join(dir, "HEAD"))) return false
  // A `commondir` file names where the objects and refs are (a linked worktree's git directory; or one made up).
  const commondir = path.join(dir, "commondir")
  const common = isFile(commondir) ? real(path.resolve(dir, fs.readFileSync(commondir, "utf8").trim())) : dir
  // One git could not resolve is taken for a repository all the same: judged, it is refused, not passed over.
  return common === undefined || (isDirectory(path.join(common, "objects")) && isDirectory(path.join(common, "refs")))
}

/**
 * The git directory a `.git` entry names: its real path for a directory or a link, the `gitdir:` of a file; null when
 * that cannot be told (a dangling link, a file that names nothing); undefined when there is no such entry.
 */
export const gitDirOf = (dotGit: string): string | null | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.lstatSync(dotGit)
  } catch {
    return undefined
  }
  try {
    if (stat.isFile()) {
      const named = /^gitdir:\s*(.+?)\s*$/m.exec(fs.readFileSync(dotGit, "utf8").slice(0, 4096))
      return named === null ? null : real(path.resolve(path.dirname(dotGit), named[1]!)) ?? null
    }
    return fs.realpathSync.native(dotGit)
  } catch {
    return null
  }
}

/**
 * A local path the repository's configuration names as a remote: git reads it (fetch, pull) and writes it (push).
 * `remote`: a remote's URL (`remote.origin.url`); `submodule`: a submodule's URL; `branch`: a branch's remote or push
 * remote given as a path instead of a remote's name (`branch.main.remote = ../other`), which git reaches when a
 * command names no remote.
 */
export interface LocalRemote {
  /** The configuration key (`remote.origin.url`). */
  readonly key: string
  readonly kind: "remote" | "submodule" | "branch"
  /** The remote's name (`origin`), for a remote's URL. */
  readonly remote: string | undefined
  /** The path as configured, relative to where git runs (the work tree's top, or the git directory). */
  readonly url: string
}

/** Whether a directory is a repository's top (it holds `.git`) or a bare repository. */
export const isRepository = (dir: string): boolean => exists(path.join(dir, ".git")) || isGitDirectory(dir)

export type Repository =
  | {
    readonly ok: true
    /** The repository's git directory (real path), or undefined when git will find none. */
    readonly gitDir: string | undefined
    /** Its common directory (a linked worktree's main repository; else the git directory), or undefined with no repository. */
    readonly common: string | undefined
    /** What a command that writes the repository writes: its work tree's top directory (the git directory, if bare). */
    readonly root: string | undefined
    readonly remotes: ReadonlyArray<LocalRemote>
    /** The names of its configured remotes (a command-line word that is one names that remote, not a path). */
    readonly remoteNames: ReadonlySet<string>
  }
  | { readonly ok: false; readonly reason: string }

/** How the sandbox runs `git config` to read a configuration file: the executable, and its minimal environment. */
export interface Reader {
  readonly git: string
  /** The environment for a run in `home`, an empty directory of its own (no repository is found around it). */
  readonly env: (home: string) => NodeJS.ProcessEnv
}

/** The entries of a configuration file as git reads it (its includes not followed: `include.*` is itself refused). */
const configEntries = (reader: Reader, file: string): ReadonlyArray<readonly [string, string | undefined]> | { readonly error: string } => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-git-"))
  let listed: SpawnSyncReturns<string>
  try {
    listed = spawnSync(reader.git, ["config", "--file", file, "--no-includes", "--list", "-z"], {
      cwd: home,
      env: reader.env(home),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 5_000,
      maxBuffer: 1_048_576
    })
  } finally {
    fs.rmSync(home, { recursive: true, force: true })
  }
  if (listed.status !== 0) return { error: (listed.stderr || listed.error?.message || "git config failed").trim() }
  // -z: each entry ends with NUL; the key and its value are separated by a newline (no newline: a valueless boolean).
  return listed.stdout.split("\u0000").filter((e) => e !== "").map((e) => {
    const newline = e.indexOf("\n")
    return newline === -1 ? [e, undefined] as const : [e.slice(0, newline), e.slice(newline + 1)] as const
  })
}

const URL_KEY = /^(remote\..+\.(url|pushurl)|submodule\..+\.url)$/
const BRANCH_REMOTE_KEY = /^branch\..+\.(remote|pushremote)$/

/**
 * The repository git will work in from `cwd` (or the one `--git-dir` names), searching upwards no further than `top`
 * (the top of the readable area, where `GIT_CEILING_DIRECTORIES` stops git too), and whether git may work there:
 * its git directory, common directory and alternate object stores inside `top`, and only allowed keys in its
 * configuration. No repository is fine (`git init`, `git clone`, or a command that fails by itself).
 */
export const judgeRepository = (
  baseDir: string,
  top: string,
  cwd: string,
  explicitGitDir: string | undefined,
  explicitWorkTree: string | undefined,
  reader: Reader
): Repository => {
  const shown = (p: string) => path.relative(baseDir, p) || "."
  const area = `the readable area (${shown(top)})`
  let gitDir: string | undefined
  let root: string | undefined
  let namedBy: string | undefined
  if (explicitGitDir !== undefined) {
    // A gitfile (`gitdir: <dir>`) given as the git directory: git follows it.
    const named = isFile(explicitGitDir) ? gitDirOf(explicitGitDir) : real(explicitGitDir)
    if (named === null) return { ok: false, reason: `git: --git-dir ${shown(explicitGitDir)} is a file that names no repository` }
    const found = named
    if (found === undefined) return { ok: true, gitDir: undefined, common: undefined, root: undefined, remotes: [], remoteNames: new Set() }
    gitDir = found
    root = real(explicitWorkTree ?? cwd) ?? cwd
  } else {
    for (let dir = cwd; ; dir = path.dirname(dir)) {
      const found = gitDirOf(path.join(dir, ".git"))
      if (found === null) return { ok: false, reason: `git: ${shown(path.join(dir, ".git"))} points to a repository that cannot be told (a dangling link, or a file naming none)` }
      if (found !== undefined) {
        gitDir = found
        namedBy = path.join(dir, ".git")
        root = explicitWorkTree === undefined ? dir : real(explicitWorkTree) ?? explicitWorkTree
        break
      }
      if (isGitDirectory(dir)) {
        gitDir = real(dir)
        root = explicitWorkTree === undefined ? gitDir : real(explicitWorkTree) ?? explicitWorkTree
        break
      }
      if (dir === top || path.dirname(dir) === dir) break
    }
  }
  if (gitDir === undefined) return { ok: true, gitDir: undefined, common: undefined, root: undefined, remotes: [], remoteNames: new Set() }
  if (!inside(top, gitDir)) {
    return { ok: false, reason: namedBy === undefined ? `git: the repository ${gitDir} is outside ${area}` : `git: ${shown(namedBy)} points to a repository outside ${area}` }
  }
  // A linked worktree's git directory names the repository's common directory; alternates name other object stores.
  let common = gitDir
  const commondirFile = path.join(gitDir, "commondir")
  if (isFile(commondirFile)) {
    const named = fs.readFileSync(commondirFile, "utf8").trim()
    const resolved = real(path.resolve(gitDir, named))
    if (resolved === undefined || !inside(top, resolved)) return { ok: false, reason: `git: the repository's common directory (${named}) is outside ${area}` }
    common = resolved
  }
  // Alternates, followed as git follows them: an object store's own alternates too.
  const stores = [path.join(common, "objects")]
  for (let i = 0; i < stores.length; i++) {
    const alternates = path.join(stores[i]!, "info", "alternates")
    if (!isFile(alternates)) continue
    if (stores.length > 16) return { ok: false, reason: `git: the repository's alternates (objects/info/alternates) chain through more than 16 object stores` }
    for (const line of fs.readFileSync(alternates, "utf8").split("\n").map((l) => l.trim())) {
      if (line === "" || line.startsWith("#")) continue
      const resolved = line.startsWith("\"") ? undefined : real(path.resolve(stores[i]!, line))
      if (resolved === undefined || !inside(top, resolved)) return { ok: false, reason: `git: the repository borrows objects from ${line} (${shown(alternates)}), outside ${area}` }
      if (!stores.includes(resolved)) stores.push(resolved)
    }
  }
  // git reads and writes what is in its directory (objects, refs, HEAD, logs...) through a link there: none may be.
  for (const dir of new Set([gitDir, common])) {
    const link = linkWithin(dir)
    if (link !== undefined) return { ok: false, reason: `git: ${shown(link)} is a link in the repository's git directory; git would read and write through it` }
  }
  // git still reads remotes from the files of $GIT_DIR/remotes and $GIT_DIR/branches (before configuration existed),
  // which name URLs this does not judge: a repository that has such files is refused.
  for (const legacy of ["remotes", "branches"]) {
    const dir = path.join(common, legacy)
    if (isDirectory(dir) && fs.readdirSync(dir).length > 0) {
      return { ok: false, reason: `git: ${shown(dir)} names remotes in files (git's old remotes format), which shell.run does not read: move them to the configuration` }
    }
  }
  const listed: Array<readonly [string, string | undefined]> = []
  // The repository's configuration, its worktree's, and its submodules' (their repositories live in modules/; git
  // works in them for some commands, so their keys are held to the same list; their remotes are theirs, not judged here).
  const own = [path.join(common, "config"), path.join(gitDir, "config.worktree")]
  for (const file of [...own, ...submoduleConfigs(path.join(common, "modules"))]) {
    if (!isFile(file)) continue
    const entries = configEntries(reader, file)
    if ("error" in entries) return { ok: false, reason: `git: ${shown(file)} cannot be read (${entries.error})` }
    // A submodule's repository names its work tree (core.worktree, which git writes there): a submodule's, inside this
    // work tree; this repository's own (git working in a submodule), the work tree git found it from.
    const ownWorkTree = ([key, value]: readonly [string, string | undefined]) => {
      if (key !== "core.worktree" || value === undefined || root === undefined) return false
      const named = real(path.resolve(path.dirname(file), value))
      return named !== undefined && (own.includes(file) ? named === root && explicitGitDir === undefined && explicitWorkTree === undefined : inside(root, named))
    }
    const refused = entries.filter((entry) => !ownWorkTree(entry)).map(([key]) => key).find((k) => !allowedKey(k))
    if (refused !== undefined) {
      return {
        ok: false,
        reason: `git: ${shown(file)} sets ${refused}, which shell.run does not let git read (configuration can make git run programs or read other files; ` +
          "allowed: identities, branches, remotes' urls and refspecs, what git init and clone write, display settings)"
      }
    }
    if (own.includes(file)) listed.push(...entries)
  }
  // The remotes git knows by name: those with a URL (keys are lower-cased by git except the subsection). A remote with
  // settings but no URL is no remote to git: its name is taken for a path.
  const remoteNames = new Set(listed.flatMap(([key]) => (/^remote\..+\.url$/.test(key) ? [key.slice("remote.".length, key.lastIndexOf("."))] : [])))
  const remotes: Array<LocalRemote> = []
  for (const [key, url] of listed) {
    if (url === undefined || !isLocalUrl(url)) continue
    if (URL_KEY.test(key)) {
      const remote = key.startsWith("remote.")
      remotes.push({ key, kind: remote ? "remote" : "submodule", remote: remote ? key.slice("remote.".length, key.lastIndexOf(".")) : undefined, url })
    } else if (BRANCH_REMOTE_KEY.test(key) && !remoteNames.has(url)) {
      remotes.push({ key, kind: "branch", remote: undefined, url })
    }
  }
  return { ok: true, gitDir, common, root: root ?? gitDir, remotes, remoteNames }
}
