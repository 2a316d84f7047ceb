// git's command lines under the policy: options and subcommands that run programs, load configuration or reach
// the network are refused (with git's unique-prefix abbreviations), `-C` moves the directory later relative paths
// resolve against, and what git writes (`--output`, `format-patch -o`, a clone's or an init's directory) is named so
// that it falls under fs.write. The environment git runs with (no hooks, no network) is in shell.ts.
import * as path from "node:path"
import { real } from "./files.js"
import { physical, physicalEntry } from "./fsGuard.js"
import { allowedKey } from "./gitConfigKeys.js"

/** git options that run a program or load configuration, refused with any unique-prefix abbreviation. */
const GIT_LONG_REFUSED = ["upload-pack", "receive-pack", "exec", "exec-path", "config-env", "template", "ssh-command", "config"]
/** git options whose value is a directory, allowed only inside the workspace. */
const GIT_LONG_DIRS = ["git-dir", "work-tree", "namespace"]
/** Global options (before the subcommand) that take the next argument as their value. */
const GIT_GLOBAL_WITH_VALUE = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix", "--list-cmds", "--attr-source"])
/** Global options that take no value. */
const GIT_GLOBAL_FLAGS = new Set([
  "-p", "--paginate", "-P", "--no-pager", "--no-replace-objects", "--literal-pathspecs", "--glob-pathspecs",
  "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--version", "-v", "--help", "-h", "--html-path",
  "--man-path", "--info-path", "--exec-path", "--no-lazy-fetch", "--no-advice"
])
/** Subcommands where `-u` is `--upload-pack` (a program to run, even for a local repository). */
const GIT_UPLOAD_PACK_SHORT = new Set(["clone", "fetch", "pull", "ls-remote"])
/** Subcommands that exist to run other programs, serve, or reach the network or credentials. */
const GIT_SUBCOMMANDS_REFUSED: ReadonlyMap<string, string> = new Map([
  ["hook", "runs hooks"],
  ["difftool", "runs a diff tool"],
  ["mergetool", "runs a merge tool"],
  ["filter-branch", "runs shell filters"],
  ["daemon", "serves repositories"],
  ["instaweb", "runs a web server and a browser"],
  ["web--browse", "runs a browser"],
  ["http-backend", "serves repositories"],
  ["shell", "runs commands"],
  ["send-email", "sends mail"],
  ["imap-send", "reaches a mail server"],
  ["credential", "reads credentials"],
  ["credential-cache", "reads credentials"],
  ["credential-store", "reads credentials"],
  ["upload-pack", "is a transport program"],
  ["receive-pack", "is a transport program"],
  ["upload-archive", "is a transport program"],
  ["remote-ext", "runs a program as a transport"],
  ["remote-fd", "is a transport program"],
  ["fsmonitor--daemon", "runs a daemon"],
  ["svn", "runs another version control system"],
  ["p4", "runs another version control system"],
  ["cvsimport", "runs another version control system"],
  ["cvsserver", "serves repositories"],
  ["archimport", "runs another version control system"],
  ["quiltimport", "runs quilt"],
  ["verify-commit", "runs gpg to verify signatures"],
  ["verify-tag", "runs gpg to verify signatures"],
  ["bugreport", "writes a report of the system into the working directory"],
  ["diagnose", "writes an archive of the repository and the system"]
])
/** Options that sign or verify signatures, which runs gpg (or the program `gpg.program` names). */
const GIT_LONG_SIGNING = ["gpg-sign", "show-signature", "verify-signatures", "signed"]
/** Subcommands where `-S` is `--gpg-sign`. */
const GIT_SIGN_SHORT = new Set(["commit", "merge", "rebase", "cherry-pick", "revert", "am", "commit-tree", "pull"])
/** Options that clone or update submodules from the URLs a repository's `.gitmodules` names, which nothing checks. */
const GIT_LONG_SUBMODULES = ["recurse-submodules", "recursive"]
/** Subcommands that reach a repository's remotes. */
const GIT_REMOTE_USERS = new Set(["fetch", "pull", "push", "ls-remote", "remote", "submodule", "maintenance"])
/** Subcommands where those options fetch (`grep --recurse-submodules` only reads what is there). */
const GIT_SUBMODULE_FETCHERS = new Set(["clone", "fetch", "pull", "checkout", "switch", "reset", "read-tree", "restore", "push"])

/**
 * Subcommands that only read the repository (with `GIT_OPTIONAL_LOCKS=0`, not even the index); the paths some of them
 * write (`archive -o`, `format-patch`, `clone`'s and `init`'s directory) are named in `writes`. Any other subcommand
 * writes the repository it works in.
 */
const GIT_READ_ONLY = new Set([
  "status", "log", "show", "diff", "grep", "blame", "annotate", "ls-files", "ls-tree", "ls-remote", "rev-parse",
  "rev-list", "cat-file", "describe", "shortlog", "whatchanged", "name-rev", "for-each-ref", "show-ref", "show-branch",
  "merge-base", "count-objects", "var", "version", "help", "check-ignore", "check-attr", "check-ref-format",
  "check-mailmap", "diff-tree", "diff-files", "diff-index", "cherry", "range-diff", "verify-pack", "config", "clone",
  "init", "archive", "format-patch", "get-tar-commit-id"
])
/**
 * The subcommands git may run at all (deny by default, as the rest of the policy): those that read, and those that
 * write only the repository they work in (which then falls under fs.write). Anything else (a plumbing command that
 * writes files it is given, such as `checkout-index --prefix` or `fast-export --export-marks`, or an external
 * `git-<name>` program on the PATH such as `git lfs`) is refused.
 */
const GIT_ALLOWED = new Set([
  ...GIT_READ_ONLY,
  "add", "commit", "checkout", "switch", "restore", "reset", "rm", "mv", "merge", "rebase", "cherry-pick", "revert",
  "fetch", "pull", "push", "apply", "am", "clean", "stash", "tag", "branch", "notes", "reflog", "remote", "gc",
  "prune", "repack", "pack-refs", "fsck", "submodule", "worktree", "bundle", "maintenance", "bisect", "update-ref",
  "symbolic-ref", "hash-object", "write-tree", "commit-tree", "read-tree", "update-index", "sparse-checkout"
])
/** Options that let a command write outside the work tree. */
const GIT_LONG_UNSAFE = ["unsafe-paths"]
/** Options that make branch and tag list (their other words are then patterns), and options that make them write. */
const LISTS = new Set(["list", "contains", "no-contains", "merged", "no-merged", "points-at", "show-current"])
const BRANCH_WRITES = new Set(["delete", "move", "copy", "force", "set-upstream-to", "unset-upstream", "edit-description", "track", "no-track", "create-reflog", "recurse-submodules"])
const TAG_WRITES = new Set(["delete", "annotate", "sign", "local-user", "force", "message", "file", "edit", "create-reflog", "cleanup", "trailer"])
/** Subcommands that read or write by their first word (`stash list` reads, `stash` writes). */
const GIT_READ_ONLY_ACTIONS: ReadonlyMap<string, ReadonlySet<string | undefined>> = new Map([
  ["remote", new Set([undefined, "show", "get-url"])],
  ["stash", new Set(["list", "show"])],
  ["worktree", new Set(["list"])],
  ["notes", new Set([undefined, "list", "show"])],
  ["reflog", new Set([undefined, "show", "exists"])],
  ["bundle", new Set(["verify", "list-heads"])],
  ["submodule", new Set([undefined, "status", "summary"])]
])

/**
 * Whether a subcommand line only reads the repository. branch and tag read when they list: asked to (`-l`,
 * `--contains`...), or given no name, and never with an option that writes (`-d`, `-m`, `-a`...). The others that read
 * or write by their action (`stash list`, `notes add`) are judged by their first word: the action, when it comes
 * first (`notes --ref=x show` too); an option first, with words after it, could have taken one of them for its
 * value (`stash -m list` pushes a stash named "list"), so it writes.
 */
const readsOnly = (subcommand: string | undefined, rest: ReadonlyArray<string>, positional: ReadonlyArray<string>): boolean => {
  // config sets a key with two operands (checked above), and reads otherwise.
  if (subcommand === "config") return positional.length !== 2 || rest.some((a) => GIT_CONFIG_READ_ACTIONS.has(a))
  if (subcommand === undefined || GIT_READ_ONLY.has(subcommand)) return true
  if (subcommand === "branch" || subcommand === "tag") {
    const longs = rest.flatMap((a) => (longName(a) === undefined ? [] : [longName(a)!]))
    const shorts = rest.filter((a) => /^-[^-]/.test(a)).map((a) => a.slice(1)).join("")
    const writes = subcommand === "branch" ? BRANCH_WRITES : TAG_WRITES
    if (longs.some((name) => [...writes].some((w) => name.length >= 3 && w.startsWith(name)))) return false
    if (/[dDmMcCfut]/.test(subcommand === "branch" ? shorts : "") || /[dasufmFe]/.test(subcommand === "tag" ? shorts : "")) return false
    const lists = longs.some((name) => [...LISTS].some((l) => name.length >= 3 && l.startsWith(name))) || /[ln]/.test(shorts)
    return lists || positional.length === 0
  }
  const actions = GIT_READ_ONLY_ACTIONS.get(subcommand)
  if (actions === undefined) return false
  let k = 0
  // notes takes its --ref before the action.
  while (subcommand === "notes" && k < rest.length && (rest[k] === "--ref" || rest[k]!.startsWith("--ref="))) k += rest[k] === "--ref" ? 2 : 1
  const first = rest[k]
  if (first === undefined || first === "--") return actions.has(undefined)
  if (!first.startsWith("-")) return actions.has(first)
  return positional.length === 0 && actions.has(undefined)
}
/** config's read actions, and the options that only shape a read (exact: config's abbreviations reach its writes). */
const GIT_CONFIG_READ_ACTIONS = new Set(["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"])
const GIT_CONFIG_READ_MODIFIERS = new Set(["--show-origin", "--show-scope", "--name-only", "--null", "-z", "--no-includes", "--local", "--worktree", "--type", "--default", "--file", "-f", "--blob"])

/**
 * Why a `git config` line is refused, or undefined: a read (`--get`, `--list`..., with only options that shape it,
 * `--file` and `--blob` with a read only), a single key (`config user.name`), or setting one key of the allowlist in
 * the repository's own configuration (`config user.name "Ada"`: the repository must be within fs.write). Nothing else:
 * git accepts abbreviations of its write actions (`--ad`, `--remove-sec`), and options such as `--type` do not
 * make a line a read.
 */
const configRefusal = (rest: ReadonlyArray<string>, positional: ReadonlyArray<string>): string | undefined => {
  const options = rest.filter((a) => a.startsWith("-"))
  const unknown = options.find((a) => !GIT_CONFIG_READ_ACTIONS.has(a) && !GIT_CONFIG_READ_MODIFIERS.has(a.split("=")[0]!))
  if (unknown !== undefined) return `${unknown} is not one of the read options shell.run allows (${[...GIT_CONFIG_READ_ACTIONS].join(", ")}, with ${[...GIT_CONFIG_READ_MODIFIERS].join(", ")})`
  const reading = options.some((a) => GIT_CONFIG_READ_ACTIONS.has(a))
  if (!reading && options.some((a) => ["--file", "-f", "--blob"].includes(a.split("=")[0]!))) return "--file and --blob are for reads only (--get, --list...)"
  if (reading || positional.length === 1) return undefined
  if (positional.length === 2 && options.every((a) => a === "--local")) {
    const key = canonicalKey(positional[0]!)
    return allowedKey(key) ? undefined : `setting ${positional[0]} is refused: only the keys shell.run lets a repository hold may be set (user.name, user.email, remotes, branches, display settings...)`
  }
  return "only reads (--get, --list, or a single key) and setting one allowed key (config user.name NAME) are allowed"
}

/** A configuration key as git writes it: section and name in lower case, a subsection as written. */
const canonicalKey = (key: string): string => {
  const first = key.indexOf(".")
  const last = key.lastIndexOf(".")
  if (first <= 0 || last === key.length - 1) return key
  return first === last ? key.toLowerCase() : `${key.slice(0, first).toLowerCase()}${key.slice(first, last)}${key.slice(last).toLowerCase()}`
}

/** The `--name` of an argument (`--upload-pack=x` is `upload-pack`), or undefined for a non-long option. */
export const longName = (arg: string): string | undefined => (arg.startsWith("--") && arg.length > 2 ? arg.slice(2).split("=")[0]! : undefined)

/** The value of `--name=value`, or of `--name value` (the next argument). */
const valueOf = (args: ReadonlyArray<string>, i: number): { readonly value: string | undefined; readonly next: boolean } => {
  const arg = args[i]!
  return arg.includes("=") ? { value: arg.slice(arg.indexOf("=") + 1), next: false } : { value: args[i + 1], next: true }
}

/**
 * The options of clone, init and push that take no value. Those commands' repository and directory are read by
 * position, so any other option must carry its value after `=` (`--depth=1`, `--initial-branch=main`): given as the
 * next argument, the value would be taken for the repository or the directory, and the real one go unchecked.
 */
const FLAGS_BY_POSITION: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ["clone", new Set([
    "-q", "--quiet", "-v", "--verbose", "--progress", "--no-progress", "-n", "--no-checkout", "--bare", "--mirror", "-l", "--local",
    "--no-local", "--no-hardlinks", "-s", "--shared", "--single-branch", "--no-single-branch", "--no-tags", "--tags",
    "--shallow-submodules", "--no-shallow-submodules", "--sparse", "--dissociate", "--reject-shallow", "--no-reject-shallow"
  ])],
  ["init", new Set(["-q", "--quiet", "--bare", "--shared"])],
  ["push", new Set([
    "-q", "--quiet", "-v", "--verbose", "--progress", "--no-progress", "--all", "--branches", "--mirror", "--tags", "--follow-tags",
    "--no-follow-tags", "-n", "--dry-run", "--porcelain", "-f", "--force", "-d", "--delete", "--prune", "--no-prune", "-u",
    "--set-upstream", "--thin", "--no-thin", "--atomic", "--no-atomic", "--verify", "--no-verify", "--force-with-lease",
    "--no-force-with-lease", "--force-if-includes", "--no-force-if-includes", "--signed", "--no-signed", "-4", "--ipv4", "-6", "--ipv6"
  ])]
])

/**
 * Subcommands whose `-m` takes a value (a message; a parent number for cherry-pick and revert). Elsewhere (`log -m`,
 * `show -m`, `diff -m`) it is a flag, and the next argument is a path like any other.
 */
const MESSAGE_TAKERS: ReadonlySet<string> = new Set(["commit", "tag", "merge", "stash", "notes", "commit-tree", "cherry-pick", "revert"])

/** bisect's actions that run nothing (`run` runs a command, `visualize`/`view` a program). */
const BISECT_ACTIONS = new Set(["start", "bad", "good", "new", "old", "skip", "reset", "terms", "log", "replay", "help", "next"])
/** git's own merge strategies: every other name is a `git-merge-<name>` program (a path, even, for the sequencer). */
const MERGE_STRATEGIES = new Set(["ort", "recursive", "resolve", "octopus", "ours", "subtree"])

/**
 * The merge strategies a command line names (`-s X`, `-sX`, `--strategy=X`, `--strat X`; git keeps the last, or
 * tries each), for the subcommands that take one (`-s` is merge's, pull's and rebase's; cherry-pick's and revert's
 * `-s` is signoff). `-X` (a strategy's option) and its value are not strategies.
 */
const mergeStrategies = (subcommand: string | undefined, rest: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (!["merge", "pull", "rebase", "cherry-pick", "revert"].includes(subcommand ?? "")) return []
  const shortS = subcommand === "merge" || subcommand === "pull" || subcommand === "rebase"
  const found: Array<string> = []
  for (let k = 0; k < rest.length; k++) {
    const arg = rest[k]!
    if (arg === "--") break
    if (arg === "-X") {
      k++
      continue
    }
    const name = longName(arg)
    if (name !== undefined && name.length >= 3 && "strategy".startsWith(name)) {
      found.push(arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : rest[++k] ?? "")
    } else if (shortS && /^-[^-]/.test(arg)) {
      // A cluster of short options: a value-taking one (-X, -s) takes the rest of it.
      const letters = arg.slice(1)
      const at = letters.search(/[sX]/)
      if (at === -1 || letters[at] === "X") continue
      const after = letters.slice(at + 1)
      found.push(after !== "" ? after : rest[++k] ?? "")
    }
  }
  return found
}

/**
 * The operands of a subcommand's arguments, with their indexes: those that are no options, and every one after the
 * first `--`, whatever it starts with (`clone -- --x/../repo dst`).
 */
const operandsOf = (rest: ReadonlyArray<string>): ReadonlyArray<{ readonly a: string; readonly k: number }> => {
  const end = rest.indexOf("--")
  return rest.flatMap((a, k) => (k === end ? [] : (end !== -1 && k > end) || !a.startsWith("-") ? [{ a, k }] : []))
}

/** Whether `name` is `option` or an abbreviation of it git would accept. */
const abbreviates = (name: string, option: string): boolean => name.length > 0 && option.startsWith(name)

/** Whether `target` is `baseDir` or below it. */
export const inside = (baseDir: string, target: string): boolean => {
  const rel = path.relative(baseDir, target)
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
}

/** A directory's real path (every link resolved), or the path itself when it does not exist. */
export const realDir = (dir: string): string => real(dir) ?? dir

/** What a git command line does, as far as the policy is concerned. */
export interface GitPlan {
  /** The directory git works in (`-C` applied), against which its relative paths resolve. */
  readonly cwd: string
  /** Directories it works in (`-C`, `--git-dir`, `--work-tree`), resolved. */
  readonly reads: ReadonlyArray<string>
  /** Paths it writes (`--output`, `format-patch -o`, a clone's or an init's directory), resolved. */
  readonly writes: ReadonlyArray<string>
  /** Arguments that are not paths whatever they look like (option values such as `-m`'s message). */
  readonly skip: ReadonlySet<number>
  /** The git directory `--git-dir` names, resolved; git then searches for none. */
  readonly gitDir: string | undefined
  /** The work tree `--work-tree` names, resolved. */
  readonly workTree: string | undefined
  /** Whether the command only reads the repository it works in (`status`, `log`...) or writes it too (`commit`...). */
  readonly readOnly: boolean
  /** The subcommand, for messages. */
  readonly subcommand: string | undefined
  /** Whether it reaches the repository's remotes (fetch, pull, push...), whose local paths then fall under the fs rules. */
  readonly usesRemotes: boolean
  /**
   * Arguments that may name another repository (a configured remote's name, or a path or file URL git reaches), left
   * out of the path arguments: where they are depends on the repository git finds. Every positional of fetch, pull
   * and ls-remote (their options may take separate values, so any of them could be the remote), push's first (its
   * options carry their values after `=`), archive's --remote: found from where git runs (`fromTop`: the work tree's
   * top, or the git directory). A clone's source (where git also tries `<path>.bundle`: `clone`) and its
   * --reference repositories: found from -C's directory. `exact`: the argument is certainly the remote (push's,
   * archive's), so the command reaches no other; any of fetch's could be an option's value instead.
   */
  readonly others: ReadonlyArray<{ readonly value: string; readonly fromTop: boolean; readonly clone: boolean; readonly exact: boolean }>
  /**
   * Files some options name that git opens from the work tree's top, not from -C's directory (`notes add -F`,
   * `commit-tree -F`, `blame --contents`, `-S` and `--ignore-revs-file`, `ls-files -X`: read; `read-tree
   * --index-output`: written): judged from the top too.
   */
  readonly fromTop: ReadonlyArray<{ readonly value: string; readonly write: boolean }>
  /** The git directory `init`/`clone --separate-git-dir` puts the repository in, resolved. */
  readonly separateGitDir: string | undefined
}

/** Why a git command line is refused, or what it does. */
export const gitPlan = (baseDir: string, args: ReadonlyArray<string>): { readonly refused: string } | GitPlan => {
  const refuse = (reason: string) => ({ refused: `git: ${reason}` })
  // Global options first: -C moves the working directory (every later relative path resolves against it).
  let cwd = baseDir
  const reads: Array<string> = []
  const skip = new Set<number>()
  let gitDir: string | undefined
  let workTree: string | undefined
  let i = 0
  for (; i < args.length && args[i]!.startsWith("-"); i++) {
    const arg = args[i]!
    if (arg === "-C" || (arg.startsWith("-C") && !arg.startsWith("--"))) {
      const dir = arg === "-C" ? args[i + 1] : arg.slice(2)
      if (dir === undefined || dir === "") return refuse("-C needs a directory")
      const next = physical(cwd, dir)
      if (!inside(baseDir, realDir(next))) return refuse(`-C ${dir} is outside the workspace`)
      cwd = realDir(next)
      reads.push(next)
      skip.add(i)
      if (arg === "-C") skip.add(++i)
      continue
    }
    // --bare makes the working directory the git directory, past every check of where the repository is.
    if (arg === "--bare") return refuse("--bare before the subcommand (the working directory as the git directory) is refused; use --git-dir")
    // Only the global options known here: another could take the next word for its value, and git would run the word
    // after it as the subcommand (`--shallow-file log a/x` runs ./git-a/x).
    const globalName = arg.split("=")[0]!
    if (!GIT_GLOBAL_WITH_VALUE.has(globalName) && !GIT_GLOBAL_FLAGS.has(globalName) && !/^-C./.test(arg) && !/^-c./.test(arg)) {
      return refuse(`the global option ${arg} is not one shell.run knows; it is refused`)
    }
    if (GIT_GLOBAL_WITH_VALUE.has(arg)) skip.add(++i)
  }
  const subIndex = i < args.length ? i : -1
  const subcommand = subIndex === -1 ? undefined : args[subIndex]
  const rest = subIndex === -1 ? [] : args.slice(subIndex + 1)

  for (let j = 0; j < args.length; j++) {
    const arg = args[j]!
    if (arg === "--" && j > subIndex) break
    if (/(^|[^a-z])ext::/i.test(arg) || /^fd::/i.test(arg)) return refuse(`${arg} uses a transport that runs a program (ext::, fd::)`)
    if (/^-[^-]/.test(arg)) {
      // A short option, or a cluster of them (`-qc`): options can be bundled, and a value attached.
      if (j < subIndex && arg.startsWith("-C")) {
        if (arg === "-C") j++
        continue
      }
      const letters = arg.slice(1)
      // -c sets configuration before the subcommand (and for clone); after it, it is the subcommand's (switch -c).
      if (letters.includes("c") && (subIndex === -1 || j < subIndex || subcommand === "clone")) return refuse(`${arg} (-c sets configuration, which can make git run programs) is refused`)
      if (subcommand !== undefined && j > subIndex) {
        if (letters.includes("u") && GIT_UPLOAD_PACK_SHORT.has(subcommand)) return refuse(`${subcommand} ${arg} (-u is --upload-pack, which runs a program) is refused`)
        if (letters.includes("x") && subcommand === "rebase") return refuse(`rebase ${arg} (-x is --exec, which runs a command) is refused`)
        if (letters.includes("O") && subcommand === "grep") return refuse(`grep ${arg} (-O opens a pager program) is refused`)
        if (/[wim]/.test(letters) && subcommand === "help") return refuse(`help ${arg} runs a browser, info or man`)
        if (letters.includes("S") && GIT_SIGN_SHORT.has(subcommand)) return refuse(`${subcommand} ${arg} (-S signs with gpg, which runs a program) is refused`)
        if (/[suv]/.test(letters) && subcommand === "tag") return refuse(`tag ${arg} (-s, -u and -v sign or verify with gpg, which runs a program) is refused`)
      }
      continue
    }
    const name = longName(arg)
    if (name === undefined) continue
    if (name === "help" && (j > subIndex || args.slice(j + 1).some((a) => !a.startsWith("-")))) return refuse("--help runs man (or a browser, or info) on the command's page; it is refused (-h prints the usage)")
    const refused = GIT_LONG_REFUSED.find((option) => abbreviates(name, option))
    if (refused !== undefined) {
      return refuse(`--${name} (${refused === name ? "" : `an abbreviation of --${refused}, `}which can run a program or load configuration) is refused`)
    }
    if (subcommand === "grep" && abbreviates(name, "open-files-in-pager")) return refuse(`grep --${name} (opens a pager program) is refused`)
    if (name.length >= 4 && "submodule".startsWith(name) && arg.includes("=") && arg.slice(arg.indexOf("=") + 1).startsWith("diff")) {
      return refuse(`--${name}=diff runs git diff in the submodules a commit names, repositories nothing judged; it is refused (--submodule=log and short are fine)`)
    }
    if (subcommand === "help" && ["web", "info", "man"].some((o) => abbreviates(name, o))) return refuse(`help --${name} runs a browser, info or man`)
    const signing = GIT_LONG_SIGNING.find((option) => abbreviates(name, option)) ??
      (subcommand === "tag" ? ["sign", "local-user", "verify"].find((option) => abbreviates(name, option)) : undefined)
    if (signing !== undefined) return refuse(`--${name} (signing or verifying with gpg runs a program) is refused`)
    if (/^--(format|pretty)=/.test(arg) && arg.includes("%G")) return refuse(`${arg}: %G placeholders verify signatures with gpg, which runs a program; they are refused`)
    if (GIT_LONG_UNSAFE.some((option) => name.length >= 3 && abbreviates(name, option))) return refuse(`--${name} lets git write outside the work tree; it is refused`)
    const submodules = GIT_SUBMODULE_FETCHERS.has(subcommand ?? "") ? GIT_LONG_SUBMODULES.find((option) => name.length >= 4 && abbreviates(name, option)) : undefined
    if (submodules !== undefined) return refuse(`--${name} clones submodules from the URLs .gitmodules names, which the policy cannot check; it is refused`)
    const dirOption = GIT_LONG_DIRS.find((option) => abbreviates(name, option))
    if (dirOption !== undefined) {
      const { next, value } = valueOf(args, j)
      if (value === undefined || !inside(baseDir, realDir(physical(cwd, value)))) return refuse(`--${dirOption} ${value ?? ""} is outside the workspace`)
      // A namespace is a name; the git and work directories are read (the git directory is hidden, as `.git` is).
      if (dirOption !== "namespace") reads.push(physical(cwd, value))
      if (dirOption === "git-dir") gitDir = physical(cwd, value)
      if (dirOption === "work-tree") workTree = physical(cwd, value)
      skip.add(j)
      if (next) skip.add(++j)
    }
  }

  if (subcommand !== undefined) {
    const why = GIT_SUBCOMMANDS_REFUSED.get(subcommand)
    if (why !== undefined) return refuse(`${subcommand} ${why}; it is refused`)
    const positional = operandsOf(rest).map(({ a }) => a)
    if (!GIT_ALLOWED.has(subcommand)) {
      return refuse(`${subcommand} is not a subcommand shell.run lets git run (those that read, and those that write only their own repository)`)
    }
    if (subcommand === "bisect" && !BISECT_ACTIONS.has(positional[0] ?? "log")) {
      return refuse(`bisect ${positional[0] ?? ""} is refused (run and visualize run programs); allowed: ${[...BISECT_ACTIONS].join(", ")}`)
    }
    const strategy = mergeStrategies(subcommand, rest).find((named) => !MERGE_STRATEGIES.has(named))
    if (strategy !== undefined) {
      return refuse(`${subcommand} --strategy ${strategy}: only git's own strategies (${[...MERGE_STRATEGIES].join(", ")}) are allowed; another is a program git runs`)
    }
    if (subcommand === "help" && positional.length > 0) return refuse("help with a page runs man (or a browser, or info) on it; it is refused (-a and -g list commands and guides)")
    if ((subcommand === "worktree" || subcommand === "bundle") && !readsOnly(subcommand, rest, positional)) {
      return refuse(`${subcommand} ${positional[0] ?? ""} writes outside the repository; only ${subcommand === "worktree" ? "worktree list is" : "bundle verify and list-heads are"} allowed`)
    }
    if (subcommand === "submodule" && positional.includes("foreach")) return refuse("submodule foreach runs a command; it is refused")
    if (subcommand === "submodule" && !readsOnly(subcommand, rest, positional)) {
      return refuse(`submodule ${positional[0] ?? ""} clones or updates submodules from the URLs .gitmodules names, which the policy cannot check; it is refused`)
    }
    if (subcommand === "maintenance" && ["start", "stop", "register", "unregister"].includes(positional[0] ?? "")) {
      return refuse(`maintenance ${positional[0]} schedules background jobs (cron, systemd); it is refused`)
    }
    if (subcommand === "config") {
      const why = configRefusal(rest, positional)
      if (why !== undefined) return refuse(`config: ${why}`)
    }
  }

  // Where it writes, and which arguments are values that only look like paths.
  const writes: Array<string> = []
  let separateGitDir: string | undefined
  const flags = FLAGS_BY_POSITION.get(subcommand ?? "")
  for (let j = subIndex + 1; flags !== undefined && j < args.length; j++) {
    const arg = args[j]!
    if (arg === "--") break
    if (!arg.startsWith("-") || arg === "-") continue
    const name = longName(arg)
    if (!arg.includes("=")) {
      if (!flags.has(arg)) {
        return refuse(`${subcommand} ${arg}: give its value after "=" (${name === undefined ? arg : `--${name}`}=...), or leave it out; shell.run reads ${subcommand}'s repository and directory by position`)
      }
    } else if (name !== undefined && subcommand === "push" && abbreviates(name, "repo")) {
      return refuse("push --repo: name the repository as an argument instead")
    } else if (name !== undefined && name.length >= 3 && abbreviates(name, "separate-git-dir")) {
      separateGitDir = physicalEntry(cwd, valueOf(args, j).value ?? "")
      writes.push(separateGitDir)
    } else if (name !== undefined && name.length >= 3 && abbreviates(name, "bundle-uri")) {
      return refuse(`${subcommand} --bundle-uri: a bundle list can name bundles anywhere; it is refused`)
    }
  }
  for (let j = subIndex + 1; subIndex !== -1 && j < args.length; j++) {
    const arg = args[j]!
    if (arg === "--") break
    const name = longName(arg)
    if (name !== undefined && "output-directory".startsWith(name)) {
      // --output=<file> (diff, log, show...), --output-directory=<dir> (format-patch), and their abbreviations.
      const { next, value } = valueOf(args, j)
      if (value !== undefined) writes.push(physicalEntry(cwd, value))
      skip.add(next ? ++j : j)
    } else if (name !== undefined && ((subcommand === "read-tree" && "index-output".startsWith(name)) || (subcommand === "apply" && "build-fake-ancestor".startsWith(name)))) {
      // read-tree --index-output=<file>, apply --build-fake-ancestor=<file>: an index file written there.
      const { next, value } = valueOf(args, j)
      if (value !== undefined) writes.push(physicalEntry(cwd, value))
      skip.add(next ? ++j : j)
    } else if ((subcommand === "format-patch" || subcommand === "archive") && /^-[^-]*o/.test(arg)) {
      // -o DIR, -oDIR, -qo DIR: the value is what follows the o, or the next argument.
      const glued = arg.slice(arg.indexOf("o") + 1)
      if (glued !== "") {
        writes.push(physicalEntry(cwd, glued))
        skip.add(j)
      } else if (args[j + 1] !== undefined) {
        writes.push(physicalEntry(cwd, args[j + 1]!))
        skip.add(++j)
      }
    } else if (MESSAGE_TAKERS.has(subcommand ?? "") && (arg === "-m" || arg === "--message") && args[j + 1] !== undefined) {
      // A message (or cherry-pick's and revert's parent number) is text, whatever it looks like.
      skip.add(++j)
    } else if (MESSAGE_TAKERS.has(subcommand ?? "") && (arg.startsWith("--message=") || (arg.startsWith("-m") && arg.length > 2 && !arg.startsWith("--")))) {
      skip.add(j)
    }
  }
  const positional = operandsOf(rest).map(({ a, k }) => ({ a, k: k + subIndex + 1 })).filter(({ k }) => !skip.has(k))
  // init without a directory makes the working directory a repository; format-patch without -o writes patches there.
  if (subcommand === "init") writes.push(physicalEntry(cwd, positional.length > 0 ? positional[positional.length - 1]!.a : "."))
  if (subcommand === "format-patch" && writes.length === 0 && !rest.includes("--stdout")) writes.push(cwd)
  // The other repositories it names: judged once the repository git works in (and its remotes' names) are known.
  const others: Array<GitPlan["others"][number]> = []
  const other = (k: number, value: string, fromTop: boolean, exact: boolean, clone = false) => {
    others.push({ value, fromTop, clone, exact })
    skip.add(k)
  }
  if (subcommand === "fetch" || subcommand === "pull" || subcommand === "ls-remote") for (const { a, k } of positional) other(k, a, true, false)
  if (subcommand === "push" && positional[0] !== undefined) other(positional[0].k, positional[0].a, true, true)
  if (subcommand === "clone" && positional[0] !== undefined) other(positional[0].k, positional[0].a, false, true, true)
  for (let j = subIndex + 1; subIndex !== -1 && j < args.length; j++) {
    const arg = args[j]!
    if (arg === "--") break
    const name = longName(arg)
    if (name === undefined) continue
    const reference = subcommand === "clone" && name.length >= 5 && ("reference".startsWith(name) || "reference-if-able".startsWith(name))
    const remote = subcommand === "archive" && name.length >= 3 && "remote".startsWith(name)
    if (!reference && !remote) continue
    const { next, value } = valueOf(args, j)
    if (value !== undefined) other(next ? j + 1 : j, value, remote, true)
    if (next) j++
  }
  if (subcommand === "remote" && positional[0]?.a === "add" && rest.some((a) => a === "-f" || (longName(a) !== undefined && longName(a)!.length >= 2 && "fetch".startsWith(longName(a)!)))) {
    return refuse("remote add --fetch: add the remote, then fetch it (its repository is judged when fetched)")
  }
  if (subcommand === "clone") {
    const [source, target] = positional
    if (target !== undefined) writes.push(physicalEntry(cwd, target.a))
    else if (source !== undefined) writes.push(physicalEntry(cwd, path.basename(source.a.replace(/\/+$/, "")).replace(/\.git$/, "")))
  }
  for (const { a } of positional) {
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(a)) continue
    if (!a.toLowerCase().startsWith("file://")) return refuse(`${a}: shell.run reaches no network (git may use local repositories only; http.get fetches within the policy)`)
    // Its path falls under fs.read like any other; an escaped one could mean another path to git than to us.
    if (a.includes("%")) return refuse(`${a}: a file URL with %-escapes is refused`)
  }
  // rm deletes the paths it names, mv moves them and writes where they go.
  if (subcommand === "rm" || subcommand === "mv") for (const { a } of positional) writes.push(physicalEntry(cwd, a))
  const fromTop: Array<GitPlan["fromTop"][number]> = []
  for (let j = subIndex + 1; subIndex !== -1 && j < args.length; j++) {
    const arg = args[j]!
    if (arg === "--") break
    const name = longName(arg)
    const fileOption = (subcommand === "notes" || subcommand === "commit-tree") && (arg.startsWith("-F") || (name !== undefined && "file".startsWith(name)))
    // blame's --contents, -S (a revisions file) and --ignore-revs-file; ls-files' --exclude-from (-X).
    const blameFile = subcommand === "blame" && (arg.startsWith("-S") || (name !== undefined && name.length >= 3 && ("contents".startsWith(name) || "ignore-revs-file".startsWith(name))))
    const excludeFrom = subcommand === "ls-files" && (arg.startsWith("-X") || (name !== undefined && name.length >= 9 && "exclude-from".startsWith(name)))
    const indexOutput = subcommand === "read-tree" && name !== undefined && "index-output".startsWith(name)
    // grep -f FILE (its patterns), in a cluster too (-vf FILE, -vfFILE).
    if (subcommand === "grep" && /^-[^-]/.test(arg) && arg.includes("f")) {
      const after = arg.slice(arg.indexOf("f") + 1)
      const value = after !== "" ? after : args[j + 1]
      if (value !== undefined) fromTop.push({ value, write: false })
      if (after === "") j++
      continue
    }
    if (!fileOption && !blameFile && !excludeFrom && !indexOutput) continue
    const short = ["-F", "-S", "-X"].find((o) => arg.startsWith(o))
    const glued = short !== undefined && arg.length > 2 ? arg.slice(2) : undefined
    const { next, value } = glued !== undefined ? { next: false, value: glued } : valueOf(args, j)
    if (value !== undefined) fromTop.push({ value, write: indexOutput })
    if (next) j++
  }
  const readOnly = readsOnly(subcommand, rest, rest.filter((a) => !a.startsWith("-")))
  return { cwd, reads, writes, skip, gitDir, workTree, readOnly, subcommand, usesRemotes: GIT_REMOTE_USERS.has(subcommand ?? "") || (subcommand === "archive" && others.length > 0), others, fromTop, separateGitDir }
}

/**
 * Whether git takes a remote (a configured URL, or an argument that names no configured remote) as a local path, as
 * its transport does: not a remote helper's `name::address`, not a URL (`file://` excepted), and not scp-like
 * `host:path` (a colon before any slash). A bare word (`upstream`) is a path.
 */
export const isLocalUrl = (url: string): boolean => {
  if (/^file:\/\//i.test(url)) return true
  if (/^[a-z][a-z0-9+.-]*(::|:\/\/)/i.test(url)) return false
  const colon = url.indexOf(":")
  const slash = url.indexOf("/")
  return colon === -1 || (slash !== -1 && slash < colon)
}
