// What git on the host would run of what a contained command wrote: a repository's hooks and configuration. People
// review an agent's work with `git status` and `git diff` in the folder it wrote, so nothing a command does in a
// writable folder may make those run a program of the command's choosing. git reads as configuration, and runs:
// - in an existing repository's git directory: `hooks/`, `config`, `config.worktree`, a `commondir` (which makes
//   another folder the repository's, its configuration and hooks included), `modules/*` (each submodule's own git
//   directory: `git status` runs git in every submodule the index names) and `worktrees/*` (linked worktrees' git
//   directories, with their own `commondir`); and a `.git` file (`gitdir: ...`) names the git directory itself;
// - a repository the command made: its own configuration and hooks, which the host's `git status` in the enclosing
//   repository runs too once the index (writable: `git add` must work) names it as a submodule (a gitlink).
// Before a call (`guardRepositories`), what exists of that is bound read-only inside the sandbox, and every folder on
// the way to it is bound onto itself (a mount point cannot be renamed: no `mv .git .git-old` to swap in a copy).
// After the call (`afterCall`), what did not exist must still not: a part git reads that the command created is
// removed, and a git directory the command made (a `.git`, or a bare repository: git takes any folder with a HEAD,
// objects/ and refs/ for one) loses its HEAD (moved to `HEAD-untrusted`: git no longer takes it for a repository),
// and a `.git` is moved aside too (`.git-untrusted`: a submodule whose `.git` is no repository fails `git status`),
// unless it is as plain as `git init` leaves one (hooks only `*.sample`, configuration only the keys below, none of
// the other parts); a `.git` file or link is moved aside (`.git-untrusted`) unless it names a git directory that was
// already there or one the command cannot write. A policy whose fs.write allows hidden files
// at a path (`deny_hidden: false`) is trusted to let commands change git's files there: none of this applies there.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { exists, isDirectory, real, TooMany, walk, which } from "./files.js"

/** The parts of a git directory git reads as configuration or runs, and the folders of other git directories in it. */
const PARTS = ["hooks", "config", "config.worktree", "commondir"]
const NESTS = ["modules", "worktrees"]
/** The keys `git init`, `git clone` and `git -c user.name=...` leave in a repository's configuration: none runs a program. */
const PLAIN_KEY =
  /^(core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)|extensions\.objectformat|user\.(name|email)|init\.defaultbranch|remote\..+\.(url|fetch|pushurl)|branch\..+\.(remote|merge))$/

/** What guards the repositories of a sandbox's writable folders: computed from the files before a call, checked after it. */
export interface GitGuard {
  /** bwrap arguments, after the binds: git directories and the folders in them bound onto themselves, their parts read-only. */
  readonly masks: ReadonlyArray<ReadonlyArray<string>>
  /** Parts git reads that were absent: a command must not create them. */
  readonly absent: ReadonlyArray<string>
  /** `modules/` and `worktrees/` folders that were there, and the git directories they held. */
  readonly nests: ReadonlyArray<string>
  readonly gitDirs: ReadonlySet<string>
  /** The `.git` entries of the writable folders before the call (and bare repositories), and what the links among them named. */
  readonly repos: ReadonlySet<string>
  readonly links: ReadonlyMap<string, string>
  /** The writable folders, and the hidden folders in them the sandbox masked (nothing could be written there). */
  readonly roots: ReadonlyArray<string>
  readonly masked: ReadonlySet<string>
  /** Whether fs.write allows hidden files at a path (the policy then trusts commands with git's files there). */
  readonly allowed: (p: string) => boolean
}

/** The git directories in a `modules/` or `worktrees/` folder (a folder holding HEAD; submodule names may hold slashes), and the folders on the way. */
const gitDirsIn = (nest: string, limit: { left: number }): { readonly gitDirs: Array<string>; readonly folders: Array<string> } => {
  const gitDirs: Array<string> = []
  const folders: Array<string> = []
  walk(nest, limit, (entry, stat) => {
    if (!stat.isDirectory()) return false
    const isGitDir = exists(path.join(entry, "HEAD"))
    ;(isGitDir ? gitDirs : folders).push(entry)
    return !isGitDir
  })
  return { gitDirs, folders }
}

/**
 * The guard of the `.git` entries found in writable folders (`repos`), given the folders, the hidden folders the
 * sandbox masks in them, and where fs.write allows hidden files. Throws `TooMany` past the walk's limit.
 */
export const guardRepositories = (
  repos: ReadonlyArray<string>,
  roots: ReadonlyArray<string>,
  masked: ReadonlySet<string>,
  allowed: (p: string) => boolean,
  limit: { left: number }
): GitGuard => {
  const masks: Array<ReadonlyArray<string>> = []
  const absent: Array<string> = []
  const nests: Array<string> = []
  const gitDirs = new Set<string>()
  const onItself = (p: string) => masks.push(["--bind", p, p])
  const guardDir = (dir: string) => {
    onItself(dir)
    for (const part of PARTS.map((p) => path.join(dir, p)).filter((p) => !allowed(p))) {
      if (exists(part)) masks.push(["--ro-bind", part, part])
      else absent.push(part)
    }
    for (const nest of NESTS.map((n) => path.join(dir, n)).filter((p) => !allowed(p))) {
      if (!exists(nest)) {
        absent.push(nest)
        continue
      }
      nests.push(nest)
      onItself(nest)
      const found = gitDirsIn(nest, limit)
      found.folders.forEach(onItself)
      for (const gitDir of found.gitDirs) {
        gitDirs.add(gitDir)
        guardDir(gitDir)
      }
    }
  }
  const links = new Map<string, string>()
  for (const repo of new Set(repos)) {
    if (allowed(repo)) continue
    const stat = fs.lstatSync(repo)
    if (stat.isDirectory()) guardDir(repo)
    else if (stat.isFile()) masks.push(["--ro-bind", repo, repo])
    // A link cannot be bound (bwrap would bind its target): it is checked after the call, and put back if changed.
    else if (stat.isSymbolicLink()) links.set(repo, fs.readlinkSync(repo))
  }
  return { masks, absent, nests, gitDirs, repos: new Set(repos), links, roots, masked, allowed }
}

/** The configuration's keys as git reads them (git itself parses the file; includes not followed), or undefined when it cannot. */
const configKeys = (file: string): ReadonlyArray<string> | undefined => {
  const git = which("git")
  if (git === undefined) return undefined
  const out = spawnSync(git, ["config", "--file", file, "--no-includes", "--list", "-z"], {
    cwd: "/",
    encoding: "utf8",
    timeout: 10_000,
    env: { PATH: "/usr/bin:/bin", HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", LC_ALL: "C" }
  })
  if (out.status !== 0 || typeof out.stdout !== "string") return undefined
  return out.stdout.split("\0").filter((item) => item !== "").map((item) => item.split("\n")[0]!)
}

/** Whether a git directory a command made is as plain as `git init` leaves one: nothing in it that git would run. */
const plainRepository = (dir: string): boolean => {
  if ([...PARTS.slice(2), ...NESTS].some((p) => exists(path.join(dir, p)))) return false
  const hooks = path.join(dir, "hooks")
  if (exists(hooks)) {
    if (!fs.lstatSync(hooks).isDirectory()) return false
    if (!fs.readdirSync(hooks).every((n) => n.endsWith(".sample") && fs.lstatSync(path.join(hooks, n)).isFile())) return false
  }
  const config = path.join(dir, "config")
  if (!exists(config)) return true
  if (!fs.lstatSync(config).isFile()) return false
  const keys = configKeys(config)
  return keys !== undefined && keys.every((k) => PLAIN_KEY.test(k))
}

/** Whether a `.git` file a command made names a git directory that was there before the call, or one outside the writable folders. */
const knownPointer = (file: string, guard: GitGuard): boolean => {
  if (fs.lstatSync(file).size > 4096) return false
  const named = /^gitdir: (.+?)\r?\n?$/.exec(fs.readFileSync(file, "utf8"))?.[1]
  const target = named === undefined ? undefined : real(path.resolve(path.dirname(file), named))
  if (target === undefined) return false
  const inside = guard.roots.some((root) => target === root || target.startsWith(root + path.sep))
  return !inside || guard.gitDirs.has(target) || guard.repos.has(target)
}

/** A check's answer, false when the files changed under it (a vanished entry, an unreadable one). */
const answer = (check: () => boolean): boolean => {
  try {
    return check()
  } catch {
    return false
  }
}

/** Moves an entry aside, to the first free `<name>-untrusted[-N]` beside it; returns where. */
const moveAside = (entry: string): string => {
  for (let n = 0; ; n++) {
    const to = `${entry}-untrusted${n === 0 ? "" : `-${n}`}`
    if (exists(to)) continue
    fs.renameSync(entry, to)
    return to
  }
}

/**
 * Whether git takes a folder for a git directory (its `is_git_directory`): a HEAD that names a ref or a commit (or is
 * a link), and `objects/` and `refs/` folders, or a `commondir` naming where they are.
 */
export const isGitDirectory = (dir: string): boolean => {
  const head = path.join(dir, "HEAD")
  const headOk = answer(() => {
    const stat = fs.lstatSync(head)
    if (stat.isSymbolicLink()) return true
    if (!stat.isFile() || stat.size > 1024) return false
    return /^(ref: refs\/|[0-9a-f]{40}|[0-9a-f]{64})/.test(fs.readFileSync(head, "utf8"))
  })
  return headOk && ((isDirectory(path.join(dir, "objects")) && isDirectory(path.join(dir, "refs"))) || exists(path.join(dir, "commondir")))
}

/**
 * After a call (every process of it gone): removes the parts of the guarded repositories the command created, and
 * makes inert what it made that git would run something of: a git directory's HEAD is moved aside (git then no longer
 * takes the folder for a repository), a `.git` file or link naming a git directory of its own is. Returns what it
 * did, one line each (empty: nothing of git's was touched).
 */
export const afterCall = (guard: GitGuard, limit: { left: number }): ReadonlyArray<string> => {
  const done: Array<string> = []
  const remove = (p: string) => {
    fs.rmSync(p, { recursive: true, force: true })
    done.push(`${p} (removed)`)
  }
  guard.absent.filter(exists).forEach(remove)
  for (const [link, target] of guard.links) {
    if (answer(() => fs.readlinkSync(link) === target)) continue
    const aside = exists(link) ? `; what was there moved to ${moveAside(link)}` : ""
    fs.symlinkSync(target, link)
    done.push(`${link} (a link to the repository's git directory, changed: put back${aside})`)
  }
  for (const nest of guard.nests) gitDirsIn(nest, limit).gitDirs.filter((g) => !guard.gitDirs.has(g)).forEach(remove)
  const known = (p: string) => guard.repos.has(p) || guard.gitDirs.has(p) || guard.allowed(p)
  try {
    for (const root of guard.roots) {
      walk(root, limit, (entry, stat) => {
        const name = path.basename(entry)
        if (stat.isDirectory() && isGitDirectory(entry)) {
          if (!known(entry) && !answer(() => plainRepository(entry))) {
            const head = moveAside(path.join(entry, "HEAD"))
            // A `.git` goes aside too: git would fail on a `.git` that is no repository (a submodule's, in `git status`).
            const to = name === ".git" ? moveAside(entry) : entry
            done.push(`${entry} (a repository the command made; its HEAD moved to ${path.join(to, path.basename(head))}${to === entry ? "" : `, itself to ${to}`})`)
          }
          return false
        }
        if (name === ".git") {
          if (!stat.isDirectory() && !known(entry) && !(stat.isFile() && answer(() => knownPointer(entry, guard)))) {
            done.push(`${entry} (names a git directory the command made; moved to ${moveAside(entry)})`)
          }
          return false
        }
        // Hidden folders the sandbox masked were read-only; where hidden files are allowed, the policy trusts them.
        return !(name.startsWith(".") && (guard.masked.has(entry) || guard.allowed(entry)))
      })
    }
  } catch (e) {
    if (!(e instanceof TooMany)) throw e
    done.push(`the writable folders now hold too many entries to check for repositories the command made`)
  }
  return done
}
