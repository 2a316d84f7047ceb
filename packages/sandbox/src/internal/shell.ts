// shell.run: argv only, never a shell. The executable is an allowed name looked up on a fixed PATH, or an allowed
// absolute path as written; denied tokens match whole arguments and `--opt=value` forms; git's options that run
// programs or load configuration are refused; arguments that name paths fall under the fs.read rule. The child
// gets a minimal environment, stdin from /dev/null, the base directory as cwd, and is killed with its whole
// process group on the timeout or the output cap.
import { type ChildProcessByStdio, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Readable } from "node:stream"
import type { FsRule, ShellRule } from "../Policy.js"
import { exists, isDirectory, isFile, isLink, real } from "./files.js"
import { checkRead, matcherOf, physical, physicalEntry } from "./fsGuard.js"
import { type GitPlan, gitPlan, inside, isLocalUrl, longName, realDir } from "./git.js"
import { gitDirOf, isRepository, judgeRepository } from "./gitRepository.js"
import { availability, containedCommand, SANDBOX_HOME } from "./contain.js"

/** The only PATH the sandbox looks executables up on, and gives its children. */
export const FIXED_PATH = ["/usr/local/bin", "/usr/bin", "/bin"]
/** A program path that does not exist: what git is told to run for gpg. */
const NO_PROGRAM = "/nonexistent/artana-sandbox/no-program"

export type CommandDecision =
  | {
    readonly ok: true
    readonly executable: string
    readonly name: string
    readonly args: ReadonlyArray<string>
    /** Paths the arguments name (absolute, as resolved against the working directory), read. */
    readonly reads: ReadonlyArray<string>
    /** Paths the command writes (git's outputs, a clone's directory). */
    readonly writes: ReadonlyArray<string>
    /** For git: the directory its search for a repository stops below. */
    readonly ceiling: string | undefined
  }
  | { readonly ok: false; readonly reason: string }

const deny = (reason: string): CommandDecision => ({ ok: false, reason })

const isExecutableFile = (file: string): boolean => {
  try {
    const stat = fs.statSync(file)
    if (!stat.isFile()) return false
    fs.accessSync(file, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * Arguments that name paths: with a slash, starting with `~` or `.`, or the name of an existing entry of `cwd`; the
 * value of `--opt=value`; and what follows a short option (`-F<file>`): since a value attached to a short option cannot
 * be told from a cluster of options (`-qF<file>`), every tail of a short option's argument that names an entry of
 * `cwd` is a path, and one holding a `/` or `~` is refused outright (give the path as its own argument).
 */
const pathArguments = (cwd: string, args: ReadonlyArray<string>, skip: ReadonlySet<number>): ReadonlyArray<string> | { readonly refused: string } => {
  const out: Array<string> = []
  // After a bare `--`, every argument is an operand, whatever it starts with (`diff -- --x/../../.env`).
  const operands = args.indexOf("--")
  for (const [i, arg] of args.entries()) {
    if (skip.has(i) || i === operands) continue
    if (operands !== -1 && i > operands) {
      out.push(arg)
      continue
    }
    if (/^-[^-]/.test(arg) && !arg.includes("=") && arg.length > 2) {
      if (/[/~]/.test(arg.slice(2))) {
        return { refused: `the argument ${JSON.stringify(arg)} attaches a path to a short option, which cannot be told from a cluster of options: give the path as its own argument` }
      }
      for (let k = 2; k < arg.length; k++) if (exists(path.join(cwd, arg.slice(k)))) out.push(arg.slice(k))
      continue
    }
    const value = arg.startsWith("-") ? (arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : undefined) : arg
    if (value === undefined || value === "") continue
    if (/^file:\/\//i.test(value)) {
      out.push(decodeFileUrl(value))
      continue
    }
    if (value.includes("://")) continue
    if (value.includes("/") || value.startsWith("~") || value.startsWith(".") || exists(path.join(cwd, value))) out.push(value)
  }
  return out
}

/** The path of a `file://` URL, as git reads it: its host ignored (`file://x/abs` is `/abs`), no percent-decoding. */
const decodeFileUrl = (url: string): string => url.replace(/^file:\/\/[^/]*/i, "") || "/"

/** The path arguments of a command line, or none when it has a refused one (judged below, with the reason). */
const inArgumentsOf = (cwd: string, args: ReadonlyArray<string>, skip: ReadonlySet<number>): ReadonlyArray<string> => {
  const found = pathArguments(cwd, args, skip)
  return "refused" in found ? [] : found
}

/**
 * Runs git during a decision, in a home of its own and the environment a call gets, with `globals` before `args`.
 * `ok` is false when it failed, or ran out of its 5 s: callers then refuse (a check that could not run passes nothing).
 */
const runGit = (executable: string, cwd: string, ceiling: string | undefined, globals: ReadonlyArray<string>, args: ReadonlyArray<string>): { readonly ok: boolean; readonly stdout: string } => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-git-"))
  try {
    const result = spawnSync(executable, [...globals, ...args], {
      cwd,
      env: environment("git", ceiling, home),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 5_000,
      maxBuffer: 64 * 1_048_576
    })
    return { ok: result.status === 0 && result.error === undefined, stdout: result.stdout ?? "" }
  } finally {
    fs.rmSync(home, { recursive: true, force: true })
  }
}

/** The global options of a command line that choose the repository (`--git-dir`, `--work-tree`). */
const globalsOf = (plan: GitPlan): ReadonlyArray<string> =>
  [...(plan.gitDir === undefined ? [] : [`--git-dir=${plan.gitDir}`]), ...(plan.workTree === undefined ? [] : [`--work-tree=${plan.workTree}`])]

/** A judged repository with a work tree: git is pointed at exactly these for the checks that list it. */
interface WorkTree {
  readonly gitDir: string
  readonly root: string
}

/** Runs git on a judged work tree; undefined when it failed. */
const onWorkTree = (executable: string, tree: WorkTree, ceiling: string | undefined, args: ReadonlyArray<string>): string | undefined => {
  const listed = runGit(executable, tree.root, ceiling, [`--git-dir=${tree.gitDir}`, `--work-tree=${tree.root}`], args)
  return listed.ok ? listed.stdout : undefined
}

/** The git directory and common directory git itself finds from `cwd` (real paths), or none. */
const discovered = (executable: string, cwd: string, ceiling: string | undefined, plan: GitPlan): { readonly gitDir: string | undefined; readonly common: string | undefined } => {
  const found = runGit(executable, cwd, ceiling, globalsOf(plan), ["rev-parse", "--absolute-git-dir", "--git-common-dir"])
  if (!found.ok) return { gitDir: undefined, common: undefined }
  const [gitDir, common] = found.stdout.split("\n")
  if (gitDir === undefined || common === undefined || gitDir === "" || common === "") return { gitDir: undefined, common: undefined }
  return { gitDir: real(gitDir) ?? gitDir, common: real(path.resolve(cwd, common)) ?? path.resolve(cwd, common) }
}

/** What a listing check found: a finding, nothing (undefined), or that it could not run (`failed`). */
type Found<A> = { readonly failed: true } | { readonly failed: false; readonly found: A }

/** The first folder of the work tree that is a link with tracked files below it, relative to its top. */
const linkedEntry = (executable: string, tree: WorkTree, ceiling: string | undefined): Found<string | undefined> => {
  const listed = onWorkTree(executable, tree, ceiling, ["ls-files", "-z", "--full-name"])
  if (listed === undefined) return { failed: true }
  const folders = new Set<string>()
  for (const entry of listed.split("\u0000")) {
    for (let at = entry.indexOf("/"); at !== -1; at = entry.indexOf("/", at + 1)) folders.add(entry.slice(0, at))
  }
  return { failed: false, found: [...folders].sort().find((folder) => isLink(path.join(tree.root, folder))) }
}

/** The populated submodules of the work tree (gitlinks with a `.git` there), as absolute paths. */
const gitlinks = (executable: string, tree: WorkTree, ceiling: string | undefined): Found<ReadonlyArray<string>> => {
  const listed = onWorkTree(executable, tree, ceiling, ["ls-files", "-s", "-z", "--full-name"])
  if (listed === undefined) return { failed: true }
  // -s -z: "mode object stage\tpath" entries, NUL-terminated; a gitlink's mode is 160000.
  const subs = listed.split("\u0000").filter((e) => e.startsWith("160000 ")).map((e) => path.join(tree.root, e.slice(e.indexOf("\t") + 1)))
  return { failed: false, found: subs.filter((sub) => exists(path.join(sub, ".git"))) }
}

/** The git directory (or common directory) of a repository that fs.write may write in, or undefined. */
const writableGitDir = (baseDir: string, write: FsRule | undefined, repository: { readonly gitDir: string | undefined; readonly common: string | undefined }): string | undefined =>
  write === undefined ? undefined : [repository.gitDir, repository.common].find((dir) => dir !== undefined && judgeWrite(baseDir, write, path.join(dir, "artana-probe")).ok)

/**
 * The first changed (or, with `untracked`, untracked) file of the work tree with a hidden component (`.env`), relative
 * to its top.
 */
const hiddenChange = (executable: string, tree: WorkTree, ceiling: string | undefined, untracked: boolean, ignored = false): Found<string | undefined> => {
  const listed = onWorkTree(executable, tree, ceiling, [
    "status", "--porcelain=v1", "-z", `--untracked-files=${untracked ? "all" : "no"}`, "--no-renames", "--ignore-submodules=all",
    ...(ignored ? ["--ignored=matching"] : [])
  ])
  if (listed === undefined) return { failed: true }
  // -z: "XY path" entries, NUL-terminated.
  return { failed: false, found: listed.split("\u0000").map((e) => e.slice(3)).find((p) => p.split("/").some((part) => part.startsWith("."))) }
}

/**
 * Subcommands that never read the work tree's files (they work on objects, refs and configuration): every other one
 * may (diff, grep, status, blame, checkout -p, update-index --again...), so under deny_hidden it is refused while a
 * tracked hidden file has changed there.
 */
const WORK_TREE_BLIND: ReadonlySet<string> = new Set([
  "log", "show", "rev-parse", "cat-file", "ls-tree", "for-each-ref", "show-ref", "describe", "shortlog", "merge-base",
  "name-rev", "rev-list", "count-objects", "var", "config", "remote", "fetch", "push", "clone", "init", "archive",
  "format-patch", "bundle", "notes", "reflog", "gc", "prune", "repack", "pack-refs", "fsck", "update-ref",
  "symbolic-ref", "write-tree", "commit-tree", "worktree", "ls-remote", "help", "version", "check-ref-format",
  "verify-pack", "get-tar-commit-id", "tag", "branch", "cherry", "range-diff", "whatchanged", "diff-tree",
  "check-mailmap", "maintenance", "ls-files", "check-ignore", "check-attr", "hash-object", "show-branch"
])

/** The folder a git directory is kept in: above its last `.git` (`main/.git/worktrees/x` is main's), or itself (bare). */
const keeperOf = (gitDir: string): string => {
  const parts = gitDir.split(path.sep)
  const at = parts.lastIndexOf(".git")
  return at <= 0 ? gitDir : parts.slice(0, at).join(path.sep) || path.sep
}

/**
 * Where git may find the repository a local path names, from each of `bases`: the path (trailing slashes dropped, as
 * git drops them), and the path with `.git` appended, which git tries when the path itself is no repository, or
 * `.bundle` too for a clone's source (`<path>/.git` is inside the path, judged with it). Those that exist; git fails
 * on the others. A gitfile (`gitdir: <dir>`, which git follows) brings the repository it names.
 */
const repositoryCandidates = (bases: ReadonlyArray<string>, url: string, clone: boolean): ReadonlyArray<string> => {
  const written = decodeFileUrl(url).replace(/(.)\/+$/, "$1")
  const suffixes = clone ? ["", ".git", ".bundle"] : ["", ".git"]
  const found = [...new Set(bases.flatMap((base) => suffixes.map((suffix) => physical(base, `${written}${suffix}`))))].filter(exists)
  return [...new Set(found.flatMap((p) => {
    const named = isFile(p) ? gitDirOf(p) : undefined
    return typeof named === "string" ? [p, named] : [p]
  }))]
}

/**
 * Checks a command line against the rule, and the paths in it against the fs rules: paths it reads against
 * `fs.read` (directories allowed), paths it writes (git's outputs) against `fs.write`. A missing rule: no
 * argument may name such a path.
 */
export const checkCommand = (
  baseDir: string,
  rule: ShellRule,
  read: FsRule | undefined,
  write: FsRule | undefined,
  command: string,
  args: ReadonlyArray<string>
): CommandDecision => {
  if (command === "") return deny("no command")
  if ([command, ...args].some((a) => a.includes("\u0000"))) return deny("an argument contains a NUL byte")
  if (/\s/.test(command)) return deny(`"${command}" is not an executable name: pass the arguments in args (argv form, never a shell)`)
  let executable: string
  let name: string
  if (command.includes("/")) {
    if (!path.isAbsolute(command) || !rule.executables.includes(command)) {
      return deny(`${command} is path-qualified; only executables listed by path in the policy may be given by path`)
    }
    if (!isExecutableFile(command)) return deny(`${command} is not an executable file`)
    executable = command
    name = path.basename(command)
  } else {
    if (!rule.executables.includes(command)) return deny(`${command} is not an allowed executable (${rule.executables.join(", ") || "none"})`)
    const found = FIXED_PATH.map((dir) => path.join(dir, command)).find(isExecutableFile)
    if (found === undefined) return deny(`${command} is not found on the fixed PATH (${FIXED_PATH.join(":")})`)
    executable = found
    name = command
  }
  // git's rules follow git under another name (a link to it listed by path, say).
  if (path.basename(realDir(executable)) === "git") name = "git"
  for (const arg of [command, ...args]) {
    const token = deniedToken(rule.denied_tokens, arg)
    if (token !== undefined) return deny(`the argument ${JSON.stringify(arg)} is a denied token (${token})`)
  }
  if (rule.containment !== "none") {
    // Contained, the sandbox decides what the process sees: the arguments are not second-guessed. Those that name an
    // entry fs.read allows are recorded (the report's files read); others reach nothing the policy does not show.
    const named = pathArguments(baseDir, args, new Set())
    const reads = "refused" in named || read === undefined
      ? []
      : named.map((p) => physical(baseDir, p)).filter((p) => exists(p) && checkRead(baseDir, read, p, { directories: true }).ok)
    return { ok: true, executable, name, args, reads: [...new Set(reads)], writes: [], ceiling: undefined }
  }
  const plan: GitPlan | { readonly refused: string } = name === "git"
    ? gitPlan(baseDir, args)
    : { cwd: baseDir, reads: [], writes: [], skip: new Set(), gitDir: undefined, workTree: undefined, readOnly: true, subcommand: undefined, usesRemotes: false, others: [], fromTop: [], separateGitDir: undefined }
  if ("refused" in plan) return deny(plan.refused)
  const { cwd } = plan
  const writes = [...plan.writes]
  let ceiling: string | undefined
  // git reads configuration files for the checks below in an empty directory, with no repository around it.
  const reader = { git: executable, env: (home: string) => environment("git", path.dirname(home), home) }
  const remotes: Array<string> = []
  if (name === "git") {
    // git works on the repository it finds from its directory upwards: that directory must be readable, and the
    // search stops at the top of the readable area (GIT_CEILING_DIRECTORIES), so git never reads a repository
    // around the workspace (the policy's own folder, say) and the files in it.
    if (read === undefined) return deny("git reads the repository it works in, and fs.read is not allowed")
    const here = checkRead(baseDir, read, cwd, { directories: true })
    if (!here.ok) return deny(`git would work in ${path.relative(baseDir, cwd) || "the base directory"}: ${here.reason} (give -C a directory within fs.read's paths)`)
    const top = readableTop(baseDir, read, cwd)
    ceiling = path.dirname(top)
    // The repository git will find (or the one --git-dir names): inside that area, with nothing in its configuration
    // that runs a program or reads other files; its local remotes are read (fetch) or written (push); a command that
    // writes the repository (commit, checkout, clean...) writes its work tree, which must be within fs.write.
    const repository = judgeRepository(baseDir, top, cwd, plan.gitDir, plan.workTree, reader)
    if (!repository.ok) return deny(repository.reason)
    // git works in the populated submodules of the work tree too (status, diff run `git status` in each, with that
    // repository's configuration and filters): each is judged as the repository git works in is.
    // The checks that list the work tree point git at exactly the repository judged; one that cannot run refuses.
    const tree: WorkTree | undefined = repository.root !== undefined && repository.gitDir !== undefined && repository.root !== repository.gitDir
      ? { gitDir: repository.gitDir, root: repository.root }
      : undefined
    const unlisted = `git could not list the work tree (${repository.root === undefined ? "" : path.relative(baseDir, repository.root) || "."}) to check it, in 5 s or at all: refused`
    // Submodules of submodules too, to a depth of 8.
    const judgeSubmodules = (within: WorkTree, depth: number): string | undefined => {
      const subs = gitlinks(executable, within, ceiling)
      if (subs.failed) return unlisted
      for (const sub of subs.found) {
        const judged = judgeRepository(baseDir, top, sub, undefined, undefined, reader)
        const shownSub = path.relative(baseDir, sub)
        if (!judged.ok) return `the submodule at ${shownSub}: ${judged.reason}`
        if (judged.gitDir === undefined || judged.root === undefined || !inside(sub, judged.root)) return `the submodule at ${shownSub} has no repository git can tell`
        const writableSub = writableGitDir(baseDir, write, judged)
        if (writableSub !== undefined) return `the submodule at ${shownSub}: fs.write may write in its git directory (${path.relative(baseDir, writableSub) || "."}), and git runs commands from files there`
        if (depth >= 8) return `the submodule at ${shownSub} nests submodules more than 8 deep`
        const nested = judgeSubmodules({ gitDir: judged.gitDir, root: judged.root }, depth + 1)
        if (nested !== undefined) return nested
      }
      return undefined
    }
    if (tree !== undefined) {
      const refused = judgeSubmodules(tree, 1)
      if (refused !== undefined) return deny(refused)
    }
    // The other repositories it reaches. The configured remotes its arguments name, or, when they name none (`git
    // fetch`, `--all`, fetch's arguments all paths or values), every configured remote that is a local path and every branch's remote given as a
    // path (submodules' URLs matter to `submodule` only); and each argument that names no configured remote, taken
    // as the path git would take it for. git resolves those from where it runs (the work tree's top, or the git
    // directory), not from -C's directory: both are judged. A path in a home directory is refused: git expands `~`.
    const targets: Array<{ readonly label: string; readonly url: string; readonly bases: ReadonlyArray<string>; readonly clone: boolean }> = []
    const fromTop = [...new Set([repository.root ?? cwd, cwd])]
    const names = plan.others.filter((o) => o.fromTop && repository.remoteNames.has(o.value)).map((o) => o.value)
    // A push to a path, or archive --remote with one, reaches that path only; fetch's arguments could all be values.
    const everyRemote = names.length === 0 && !plan.others.some((o) => o.fromTop && o.exact)
    for (const r of repository.remotes) {
      const reached = plan.usesRemotes && (
        r.kind === "submodule" ? plan.subcommand === "submodule" : everyRemote || (r.kind === "remote" && names.includes(r.remote ?? ""))
      )
      if (reached) targets.push({ label: `${r.key} is ${r.url}`, url: r.url, bases: fromTop, clone: false })
    }
    for (const o of plan.others) {
      if (o.fromTop && repository.remoteNames.has(o.value)) continue
      if (isLocalUrl(o.value)) targets.push({ label: `the argument ${JSON.stringify(o.value)}`, url: o.value, bases: o.fromTop ? fromTop : [cwd], clone: o.clone })
    }
    for (const target of targets) {
      if (target.url.startsWith("~")) return deny(`git: ${target.label}, a path in a home directory (git expands ~)`)
      for (const candidate of repositoryCandidates(target.bases, target.url, target.clone)) {
        const decision = checkRead(baseDir, read, candidate, { directories: true })
        if (!decision.ok) return deny(`git: ${target.label}: ${decision.reason}`)
        remotes.push(candidate)
        // A push writes the repository it reaches.
        if (plan.subcommand === "push") writes.push(candidate)
      }
    }
    // Where git keeps the repository, when it is not within the work tree (--git-dir, a gitfile, a linked worktree):
    // read like the work tree (hidden folders included, past the `.git` git keeps it in), and written by a command
    // that writes, as the work tree is. With no repository, apply (a patch tool then) writes its directory.
    const homes = [...new Set([repository.gitDir, repository.common])].flatMap((d) =>
      d === undefined || (repository.root !== undefined && inside(repository.root, d)) ? [] : [keeperOf(d)]
    )
    for (const home of homes) {
      const decision = checkRead(baseDir, read, home, { directories: true })
      if (!decision.ok) return deny(`git: the repository is kept in ${path.relative(baseDir, home) || "."}: ${decision.reason}`)
    }
    // A git directory fs.write could write into (a bare repository, or --separate-git-dir, within fs.write's paths)
    // is refused: git runs commands from the state files it keeps there (a rebase's todo list, `exec` lines).
    // Pushing to one is fine (the repository git works in is this one).
    if (plan.separateGitDir !== undefined && writableGitDir(baseDir, write, { gitDir: plan.separateGitDir, common: undefined }) !== undefined) {
      return deny(`git ${plan.subcommand} --separate-git-dir puts the repository where fs.write may write (${path.relative(baseDir, plan.separateGitDir) || "."}), and git runs commands from files there: choose a folder outside fs.write's paths`)
    }
    const writable = writableGitDir(baseDir, write, repository)
    if (writable !== undefined) {
      return deny(`git: fs.write may write in the repository's git directory (${path.relative(baseDir, writable) || "."}), and git runs commands from files there: keep bare repositories and separate git directories out of fs.write's paths`)
    }
    if (!plan.readOnly && plan.subcommand !== "clone" && plan.subcommand !== "init") writes.push(...(repository.root === undefined ? (plan.subcommand === "apply" ? [cwd] : []) : [repository.root, ...homes]))
    // format-patch writes a file per commit in its directory, by a name it makes up: a link there would take it elsewhere.
    if (plan.subcommand === "format-patch") {
      for (const dir of plan.writes.filter((w) => isDirectory(w))) {
        const link = fs.readdirSync(dir, { withFileTypes: true }).find((e) => e.isSymbolicLink())
        if (link !== undefined) return deny(`git format-patch writes its patches in ${path.relative(baseDir, dir) || "."}, where ${link.name} is a link: give -o a directory without links`)
      }
    }
    // git's own discovery has rules not copied here (a commondir file, HEAD's validity): the repository it reports
    // must be the one judged above.
    const git = discovered(executable, cwd, ceiling, plan)
    const judged = { gitDir: repository.gitDir, common: repository.common }
    if (git.gitDir !== judged.gitDir || git.common !== judged.common) {
      const shown = (p: string | undefined) => (p === undefined ? "none" : path.relative(baseDir, p) || ".")
      return deny(`git would work in the repository at ${shown(git.gitDir)} (objects and refs in ${shown(git.common)}), not the one judged (${shown(judged.gitDir)}): fix or remove the folder that misleads it`)
    }
    // rm, mv and grep follow a link in a tracked path's folders (git checks that elsewhere): none may have one.
    if (["rm", "mv", "grep"].includes(plan.subcommand ?? "") && tree !== undefined) {
      const listed = linkedEntry(executable, tree, ceiling)
      if (listed.failed) return deny(unlisted)
      const linked = listed.found
      if (linked !== undefined) return deny(`git ${plan.subcommand}: ${linked} is a link in the work tree that tracked files are below; git ${plan.subcommand} would follow it`)
    }
    // Files some options name that git opens from the work tree's top: judged from there too.
    for (const { value, write: isWrite } of plan.fromTop) {
      if (repository.root === undefined || repository.root === cwd || path.isAbsolute(value)) continue
      if (isWrite) {
        writes.push(physicalEntry(repository.root, value))
        continue
      }
      const absolute = physical(repository.root, value)
      const decision = exists(absolute) ? checkRead(baseDir, read, absolute) : judgeMissing(baseDir, read, absolute)
      if (!decision.ok) return deny(`git ${plan.subcommand} reads ${value} from the work tree's top: ${decision.reason}`)
    }
    // Hidden files, under deny_hidden: git reads the folders it is given with --no-index, and grep --untracked reads
    // the files it does not track, hidden ones included. A glob or pathspec magic (`*`, `:(glob)`) can match them.
    if (read.deny_hidden) {
      const long = (option: string, least: number) => args.some((a) => longName(a) !== undefined && longName(a)!.length >= least && option.startsWith(longName(a)!))
      const shortHas = (letters: string) => args.some((a, i) => !plan.skip.has(i) && /^-[^-]/.test(a) && [...letters].some((l) => a.slice(1).includes(l)))
      if (plan.subcommand === "grep" && long("untracked", 3)) return deny("git grep --untracked reads untracked files, hidden ones included, and fs.read denies hidden files")
      const named = inArgumentsOf(cwd, args, plan.skip)
      const globs = args.some((a, i) => !plan.skip.has(i) && !a.startsWith("-") && /[*?[]|^:/.test(a)) || long("pathspec-from-file", 3)
      const folder = named.some((p) => isDirectory(physical(cwd, p))) || (plan.subcommand === "grep" && (named.length === 0 || globs))
      if (args.includes("--no-index") && folder) {
        return deny("git --no-index on a folder (or with a glob) reads every file in it, hidden ones included, and fs.read denies hidden files: name the files")
      }
      // add, commit -a and stash copy files into the repository, where git show prints them: unless they name
      // files only, a hidden file changed or untracked (`.env`) would go along.
      const filesOnly = named.length > 0 && !globs && named.every((p) => isFile(physical(cwd, p)))
      // add takes untracked files too; stash only with -u or -a; commit -a (or with a pathspec) changed tracked ones.
      const stashUntracked = long("include-untracked", 3) || long("all", 2) || shortHas("ua")
      const copies = plan.subcommand === "add" || (plan.subcommand === "stash" && !plan.readOnly) ||
        (plan.subcommand === "commit" && (long("all", 2) || shortHas("a") || named.length > 0 || globs))
      // Commands that read the work tree's files read a tracked hidden file's changed content (the index can name every
      // path: --work-tree, update-index --cacheinfo).
      const readsWorkTree = !WORK_TREE_BLIND.has(plan.subcommand ?? "")
      if (readsWorkTree && !args.includes("--no-index") && tree !== undefined) {
        const listed = hiddenChange(executable, tree, ceiling, false)
        if (listed.failed) return deny(unlisted)
        const hidden = listed.found
        if (hidden !== undefined) return deny(`git ${plan.subcommand} would read ${hidden}, a hidden file changed in the work tree, which fs.read denies (deny_hidden)`)
      }
      if (copies && !filesOnly && tree !== undefined) {
        // add -f and stash -a take ignored files too.
        const ignored = (plan.subcommand === "add" && (long("force", 2) || shortHas("f"))) || (plan.subcommand === "stash" && (long("all", 2) || shortHas("a")))
        const listed = hiddenChange(executable, tree, ceiling, plan.subcommand === "add" || (plan.subcommand === "stash" && stashUntracked), ignored)
        if (listed.failed) return deny(unlisted)
        const hidden = listed.found
        if (hidden !== undefined) {
          return deny(`git ${plan.subcommand} would take ${hidden} into the repository, a hidden file fs.read denies (deny_hidden): name the files to add`)
        }
      }
    }
  }
  const reads: Array<string> = []
  const inArguments = pathArguments(cwd, args, plan.skip)
  if ("refused" in inArguments) return deny(inArguments.refused)
  const named = [...plan.reads.map((p) => ({ shown: path.relative(baseDir, p) || ".", absolute: p })), ...inArguments.map((p) => ({ shown: p, absolute: physical(cwd, p) }))]
  for (const { absolute, shown: p } of named) {
    if (read === undefined) return deny(`the argument ${JSON.stringify(p)} names a path, and fs.read is not allowed`)
    if (p.startsWith("~")) return deny(`the argument ${JSON.stringify(p)} names a path in a home directory`)
    if (writes.includes(absolute)) continue
    // A path that does not exist yet (an output, a new branch) is judged by where it would be.
    // A command may name a directory (ls, git -C); a device or a FIFO stays refused.
    const decision = exists(absolute) ? checkRead(baseDir, read, absolute, { directories: true }) : judgeMissing(baseDir, read, absolute)
    if (!decision.ok) return deny(`the argument ${JSON.stringify(p)}: ${decision.reason}`)
    if (exists(absolute)) reads.push(absolute)
  }
  if (name === "git" && read !== undefined && (plan.usesRemotes || plan.subcommand === "clone")) {
    // A clone, a fetch or a push starts git's transport programs (upload-pack, receive-pack) in the other repository,
    // and they read its configuration: a local one is judged as the repository git works in is.
    for (const dir of new Set([...remotes, ...reads, ...writes].filter(isRepository))) {
      const other = judgeRepository(baseDir, readableTop(baseDir, read, dir), dir, undefined, undefined, reader)
      if (!other.ok) return deny(other.reason)
      // receive-pack runs the pushed-to repository's hooks, and git drops the hooksPath it was given before starting
      // it in a local repository: a push to one with a hook (anything in hooks/ but git's samples) is refused.
      const hooks = other.common === undefined ? undefined : path.join(other.common, "hooks")
      const hook = plan.subcommand === "push" && hooks !== undefined && isDirectory(hooks)
        ? fs.readdirSync(hooks).find((name) => !name.endsWith(".sample"))
        : undefined
      if (hook !== undefined) return deny(`git push would run the hook ${path.relative(baseDir, path.join(hooks!, hook))} of the repository it pushes to: refused`)
    }
  }
  const doing = plan.subcommand === undefined ? "git" : `git ${plan.subcommand}`
  for (const absolute of writes) {
    const shown = path.relative(baseDir, absolute) || "."
    if (write === undefined) return deny(`${doing} writes ${shown}, and fs.write is not allowed`)
    const decision = judgeWrite(baseDir, write, absolute)
    if (!decision.ok) return deny(`${doing} writes ${shown}: ${decision.reason}`)
  }
  return { ok: true, executable, name, args, reads, writes, ceiling }
}

/** The top of the readable area a directory is in: its highest ancestor within the base directory that fs.read allows. */
const readableTop = (baseDir: string, read: FsRule, dir: string): string => {
  const allowed = matcherOf(baseDir, read.paths)
  let top = dir
  while (path.dirname(top) !== top && inside(baseDir, path.dirname(top)) && allowed(path.dirname(top))) top = path.dirname(top)
  return top
}

/**
 * The denied token an argument is or smuggles, or undefined: the whole argument; either half of `--opt=value`; an
 * abbreviation of a denied long option (`--forc` is `--force` to any getopt_long program that has no other option
 * starting so); a denied short option inside a cluster (`-rf` holds `-f`).
 */
const deniedToken = (tokens: ReadonlyArray<string>, arg: string): string | undefined => {
  const eq = arg.startsWith("-") ? arg.indexOf("=") : -1
  const option = arg.startsWith("-") ? (eq > 0 ? arg.slice(0, eq) : arg) : undefined
  const parts = eq > 0 ? [arg, option, arg.slice(eq + 1)] : [arg]
  return tokens.find((t) =>
    parts.includes(t) ||
    (option !== undefined && t.startsWith("--") && option.startsWith("--") && option.length > 2 && t.startsWith(option)) ||
    (option !== undefined && /^-[^-]$/.test(t) && /^-[^-]/.test(option) && option.slice(1).includes(t[1]!))
  )
}

/** A path argument that does not exist: its real directory joined with its name must be allowed. */
const judgeMissing = (baseDir: string, rule: FsRule, absolute: string): { readonly ok: true } | { readonly ok: false; readonly reason: string } => {
  const target = path.join(realDir(path.dirname(absolute)), path.basename(absolute))
  const rel = path.relative(baseDir, target)
  if (rule.deny_hidden && rel.split(path.sep).some((part) => part.startsWith(".") && part !== "." && part !== "..")) return { ok: false, reason: `${rel} is hidden` }
  if (!matcherOf(baseDir, rule.paths)(target)) return { ok: false, reason: `${rel} is outside the allowed paths (${rule.paths.join(", ") || "none"})` }
  return { ok: true }
}

/** A path a command writes: not a link, and (where it would be, its directory's links resolved) within fs.write. */
const judgeWrite = (baseDir: string, rule: FsRule, absolute: string): { readonly ok: true } | { readonly ok: false; readonly reason: string } => {
  try {
    if (fs.lstatSync(absolute).isSymbolicLink()) return { ok: false, reason: "it is a link; a write never goes through a link" }
  } catch {
    // does not exist yet
  }
  const verdict = judgeMissing(baseDir, rule, absolute)
  return verdict.ok ? verdict : { ok: false, reason: verdict.reason.replace("allowed paths", "fs.write paths") }
}

export interface RunResult {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
}

export type RunOutcome =
  | { readonly _tag: "ok"; readonly result: RunResult }
  | { readonly _tag: "error"; readonly reason: string; readonly partial: RunResult }

/**
 * The children's environment: nothing of the host's but a fixed PATH and locale, and `home`, an empty directory of
 * the run's own (no dotfile of the host is read, none is left for the next run); git reads no system or global
 * config, runs no hook.
 */
const environment = (name: string, ceiling: string | undefined, home: string): NodeJS.ProcessEnv => ({
  PATH: FIXED_PATH.join(":"),
  LANG: "C.UTF-8",
  HOME: home,
  ...(name === "git"
    ? {
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      // Commands that only read (status, diff) do not refresh the index either.
      GIT_OPTIONAL_LOCKS: "0",
      ...(ceiling === undefined ? {} : { GIT_CEILING_DIRECTORIES: ceiling }),
      // Local repositories only: no transport reaches the network (http.get is the way out, under its rule).
      GIT_ALLOW_PROTOCOL: "file",
      // No editor, no pager: nothing interactive, nothing the repository's configuration could name.
      GIT_EDITOR: "false",
      GIT_SEQUENCE_EDITOR: "false",
      GIT_PAGER: "cat",
      // gc and maintenance run in the foreground: a detached one (setsid) would outlive the timeout's group kill.
      // Nothing recurses into submodules (fetch's default is on-demand): their repositories and remotes go unjudged.
      // Signatures are never checked (archive's export-subst can ask for %G): gpg is no program on the policy.
      // git never looks into submodules for changes (status, checkout, stash apply's status): nothing judged their
      // repositories when a command adds them (only the porcelain honours it; plumbing is judged before it runs).
      GIT_CONFIG_COUNT: "13",
      GIT_CONFIG_KEY_0: "core.hooksPath",
      GIT_CONFIG_VALUE_0: "/dev/null",
      GIT_CONFIG_KEY_1: "protocol.ext.allow",
      GIT_CONFIG_VALUE_1: "never",
      GIT_CONFIG_KEY_2: "core.fsmonitor",
      GIT_CONFIG_VALUE_2: "false",
      GIT_CONFIG_KEY_3: "gc.autoDetach",
      GIT_CONFIG_VALUE_3: "false",
      GIT_CONFIG_KEY_4: "maintenance.autoDetach",
      GIT_CONFIG_VALUE_4: "false",
      GIT_CONFIG_KEY_5: "fetch.recurseSubmodules",
      GIT_CONFIG_VALUE_5: "false",
      GIT_CONFIG_KEY_6: "submodule.recurse",
      GIT_CONFIG_VALUE_6: "false",
      GIT_CONFIG_KEY_7: "push.recurseSubmodules",
      GIT_CONFIG_VALUE_7: "no",
      GIT_CONFIG_KEY_8: "gpg.program",
      GIT_CONFIG_VALUE_8: NO_PROGRAM,
      GIT_CONFIG_KEY_9: "gpg.x509.program",
      GIT_CONFIG_VALUE_9: NO_PROGRAM,
      GIT_CONFIG_KEY_10: "gpg.ssh.program",
      GIT_CONFIG_VALUE_10: NO_PROGRAM,
      GIT_CONFIG_KEY_11: "diff.ignoreSubmodules",
      GIT_CONFIG_VALUE_11: "all",
      GIT_CONFIG_KEY_12: "status.submoduleSummary",
      GIT_CONFIG_VALUE_12: "false"
    }
    : {})
})

/** The fs rules a contained command's sandbox is built from. */
export interface Visible {
  readonly read: FsRule | undefined
  readonly write: FsRule | undefined
}

/**
 * Runs a checked command, inside bubblewrap unless the rule says `containment: none`; the timeout, the output cap and
 * `signal` (the call interrupted) kill its whole process group (and with it the sandbox's PID namespace).
 */
export const run = (
  baseDir: string,
  rule: ShellRule,
  decision: Extract<CommandDecision, { ok: true }>,
  signal?: AbortSignal,
  visible: Visible = { read: undefined, write: undefined }
): Promise<RunOutcome> =>
  new Promise((resolve) => {
    const empty: RunResult = { exitCode: null, signal: null, stdout: "", stderr: "" }
    let file = decision.executable
    let argv: ReadonlyArray<string> = decision.args
    let home: string
    let cleanup: () => void
    if (rule.containment === "none") {
      // A home of the run's own, removed when the run ends (or when the command cannot start).
      try {
        home = fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-home-"))
      } catch (e) {
        return resolve({ _tag: "error", reason: `cannot make a home for ${decision.executable} in ${os.tmpdir()}: ${e instanceof Error ? e.message : String(e)}`, partial: empty })
      }
      const made = home
      cleanup = () => fs.rmSync(made, { recursive: true, force: true })
    } else {
      const tools = availability()
      if (!tools.ok) return resolve({ _tag: "error", reason: tools.reason, partial: empty })
      try {
        const contained = containedCommand(tools, baseDir, rule, visible.read, visible.write, decision.executable, decision.args)
        file = contained.file
        argv = contained.args
        cleanup = contained.cleanup
      } catch (e) {
        return resolve({ _tag: "error", reason: e instanceof Error ? e.message : String(e), partial: empty })
      }
      home = SANDBOX_HOME
    }
    const removeHome = cleanup
    let child: ChildProcessByStdio<null, Readable, Readable>
    try {
      child = spawn(file, [...argv], {
        cwd: baseDir,
        env: environment(decision.name, decision.ceiling, home),
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        shell: false,
        windowsHide: true
      })
    } catch (e) {
      removeHome()
      return resolve({ _tag: "error", reason: `cannot start ${decision.executable}: ${e instanceof Error ? e.message : String(e)}`, partial: empty })
    }
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    let size = 0
    let killed: string | undefined
    const killGroup = (why: string) => {
      if (killed !== undefined) return
      killed = why
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {
        child.kill("SIGKILL")
      }
    }
    const collect = (into: Array<Buffer>) => (chunk: Buffer) => {
      size += chunk.length
      if (size > rule.max_output_bytes) {
        const room = chunk.length - (size - rule.max_output_bytes)
        if (room > 0) into.push(chunk.subarray(0, room))
        killGroup(`the output is over max_output_bytes (${rule.max_output_bytes}); the process group was killed`)
        return
      }
      into.push(chunk)
    }
    child.stdout.on("data", collect(out))
    child.stderr.on("data", collect(err))
    const timer = setTimeout(() => killGroup(`timed out after ${rule.timeout_ms} ms (timeout_ms); the process group was killed`), rule.timeout_ms)
    const onAbort = () => killGroup("interrupted; the process group was killed")
    if (signal?.aborted === true) onAbort()
    signal?.addEventListener("abort", onAbort, { once: true })
    const partial = (code: number | null, signal: NodeJS.Signals | null): RunResult => ({
      exitCode: code,
      signal,
      stdout: Buffer.concat(out).toString("utf8"),
      stderr: Buffer.concat(err).toString("utf8")
    })
    child.on("error", (e) => {
      clearTimeout(timer)
      signal?.removeEventListener("abort", onAbort)
      removeHome()
      resolve({ _tag: "error", reason: `cannot start ${decision.executable}: ${e.message}`, partial: partial(null, null) })
    })
    child.on("close", (code, exitSignal) => {
      clearTimeout(timer)
      signal?.removeEventListener("abort", onAbort)
      // Whatever the group left behind goes too (a grandchild holding the pipes is what `close` waited for).
      if (killed === undefined && child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL")
        } catch {
          // the group is gone
        }
      }
      removeHome()
      resolve(killed === undefined ? { _tag: "ok", result: partial(code, exitSignal) } : { _tag: "error", reason: killed, partial: partial(code, exitSignal) })
    })
  })
