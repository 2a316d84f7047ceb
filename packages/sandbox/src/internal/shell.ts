// shell.run: argv only, never a shell. The executable is an allowed name looked up on a fixed PATH, or an allowed
// absolute path as written; denied tokens match whole arguments and `--opt=value` forms; git's options that run
// programs or load configuration are refused; arguments that name paths fall under the fs.read rule. The child
// gets a minimal environment, stdin from /dev/null, the base directory as cwd, and is killed with its whole
// process group on the timeout or the output cap.
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { FsRule, ShellRule } from "../Policy.js"
import { checkRead, matcherOf } from "./fsGuard.js"

/** The only PATH the sandbox looks executables up on, and gives its children. */
export const FIXED_PATH = ["/usr/local/bin", "/usr/bin", "/bin"]

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

/** git options that run a program or load configuration, refused with any unique-prefix abbreviation. */
const GIT_LONG_REFUSED = ["upload-pack", "receive-pack", "exec", "exec-path", "config-env", "template", "ssh-command", "config"]
/** git options whose value is a directory, allowed only inside the workspace. */
const GIT_LONG_DIRS = ["git-dir", "work-tree", "namespace"]
/** Global options (before the subcommand) that take the next argument as their value. */
const GIT_GLOBAL_WITH_VALUE = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix", "--list-cmds", "--attr-source"])
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
  ["quiltimport", "runs quilt"]
])
const GIT_CONFIG_READS = new Set(["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--show-origin", "--show-scope", "--name-only", "--null", "-z", "--type", "--default", "--includes", "--no-includes", "--local", "--file", "-f", "--blob", "--worktree"])
const GIT_CONFIG_WRITES = new Set(["--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit", "-e"])

/** The `--name` of an argument (`--upload-pack=x` is `upload-pack`), or undefined for a non-long option. */
const longName = (arg: string): string | undefined => (arg.startsWith("--") && arg.length > 2 ? arg.slice(2).split("=")[0]! : undefined)

/** The value of `--name=value`, or of `--name value` (the next argument). */
const valueOf = (args: ReadonlyArray<string>, i: number): { readonly value: string | undefined; readonly next: boolean } => {
  const arg = args[i]!
  return arg.includes("=") ? { value: arg.slice(arg.indexOf("=") + 1), next: false } : { value: args[i + 1], next: true }
}

/** Whether `name` is `option` or an abbreviation of it git would accept. */
const abbreviates = (name: string, option: string): boolean => name.length > 0 && option.startsWith(name)

const inside = (baseDir: string, target: string): boolean => {
  const rel = path.relative(baseDir, target)
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel))
}

/** A directory's real path (every link resolved), or the path itself when it does not exist. */
const realDir = (dir: string): string => {
  try {
    return fs.realpathSync.native(dir)
  } catch {
    return dir
  }
}

/** What a git command line does, as far as the policy is concerned. */
interface GitPlan {
  /** The directory git works in (`-C` applied), against which its relative paths resolve. */
  readonly cwd: string
  /** Directories it works in (`-C`, `--git-dir`, `--work-tree`), resolved. */
  readonly reads: ReadonlyArray<string>
  /** Paths it writes (`--output`, `format-patch -o`, a clone's or an init's directory), resolved. */
  readonly writes: ReadonlyArray<string>
  /** Arguments that are not paths whatever they look like (option values such as `-m`'s message). */
  readonly skip: ReadonlySet<number>
}

/** Why a git command line is refused, or what it does. */
const gitPlan = (baseDir: string, args: ReadonlyArray<string>): { readonly refused: string } | GitPlan => {
  const refuse = (reason: string) => ({ refused: `git: ${reason}` })
  // Global options first: -C moves the working directory (every later relative path resolves against it).
  let cwd = baseDir
  const reads: Array<string> = []
  const skip = new Set<number>()
  let i = 0
  for (; i < args.length && args[i]!.startsWith("-"); i++) {
    const arg = args[i]!
    if (arg === "-C" || (arg.startsWith("-C") && !arg.startsWith("--"))) {
      const dir = arg === "-C" ? args[i + 1] : arg.slice(2)
      if (dir === undefined || dir === "") return refuse("-C needs a directory")
      const next = path.resolve(cwd, dir)
      if (!inside(baseDir, realDir(next))) return refuse(`-C ${dir} is outside the workspace`)
      cwd = realDir(next)
      reads.push(next)
      skip.add(i)
      if (arg === "-C") skip.add(++i)
      continue
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
      if (letters.includes("c")) return refuse(`${arg} (-c sets configuration, which can make git run programs) is refused`)
      if (subcommand !== undefined && j > subIndex) {
        if (letters.includes("u") && GIT_UPLOAD_PACK_SHORT.has(subcommand)) return refuse(`${subcommand} ${arg} (-u is --upload-pack, which runs a program) is refused`)
        if (letters.includes("x") && subcommand === "rebase") return refuse(`rebase ${arg} (-x is --exec, which runs a command) is refused`)
        if (letters.includes("O") && subcommand === "grep") return refuse(`grep ${arg} (-O opens a pager program) is refused`)
        if (/[wim]/.test(letters) && subcommand === "help") return refuse(`help ${arg} runs a browser, info or man`)
      }
      continue
    }
    const name = longName(arg)
    if (name === undefined) continue
    const refused = GIT_LONG_REFUSED.find((option) => abbreviates(name, option))
    if (refused !== undefined) {
      return refuse(`--${name} (${refused === name ? "" : `an abbreviation of --${refused}, `}which can run a program or load configuration) is refused`)
    }
    if (subcommand === "grep" && abbreviates(name, "open-files-in-pager")) return refuse(`grep --${name} (opens a pager program) is refused`)
    if (subcommand === "help" && ["web", "info", "man"].some((o) => abbreviates(name, o))) return refuse(`help --${name} runs a browser, info or man`)
    const dirOption = GIT_LONG_DIRS.find((option) => abbreviates(name, option))
    if (dirOption !== undefined) {
      const { next, value } = valueOf(args, j)
      if (value === undefined || !inside(baseDir, realDir(path.resolve(cwd, value)))) return refuse(`--${dirOption} ${value ?? ""} is outside the workspace`)
      // A namespace is a name; the git and work directories are read (the git directory is hidden, as `.git` is).
      if (dirOption !== "namespace") reads.push(path.resolve(cwd, value))
      skip.add(j)
      if (next) skip.add(++j)
    }
  }

  if (subcommand !== undefined) {
    const why = GIT_SUBCOMMANDS_REFUSED.get(subcommand)
    if (why !== undefined) return refuse(`${subcommand} ${why}; it is refused`)
    const positional = rest.filter((a) => !a.startsWith("-"))
    if (subcommand === "bisect" && positional[0] === "run") return refuse("bisect run runs a command; it is refused")
    if (subcommand === "submodule" && positional.includes("foreach")) return refuse("submodule foreach runs a command; it is refused")
    if (subcommand === "config") {
      if (rest.some((a) => GIT_CONFIG_WRITES.has(a))) return refuse("config: writes are refused")
      const reads = rest.some((a) => GIT_CONFIG_READS.has(a.split("=")[0]!) && a !== "--local" && a !== "--file" && a !== "-f")
      if (!reads && positional.length !== 1) return refuse("config: only reads are allowed (--get, --list, or a single key); writes are refused")
    }
  }

  // Where it writes, and which arguments are values that only look like paths.
  const writes: Array<string> = []
  for (let j = subIndex + 1; subIndex !== -1 && j < args.length; j++) {
    const arg = args[j]!
    if (arg === "--") break
    const name = longName(arg)
    if (name !== undefined && name.length >= 2 && "output-directory".startsWith(name)) {
      // --output=<file> (diff, log, show...), --output-directory=<dir> (format-patch), and their abbreviations.
      const { next, value } = valueOf(args, j)
      if (value !== undefined) writes.push(path.resolve(cwd, value))
      skip.add(next ? ++j : j)
    } else if (subcommand === "format-patch" && arg === "-o" && args[j + 1] !== undefined) {
      writes.push(path.resolve(cwd, args[j + 1]!))
      skip.add(++j)
    } else if ((arg === "-m" || arg === "--message") && args[j + 1] !== undefined) {
      // A message is text, whatever it looks like.
      skip.add(++j)
    } else if (arg.startsWith("--message=") || (arg.startsWith("-m") && arg.length > 2 && !arg.startsWith("--"))) {
      skip.add(j)
    }
  }
  const positional = rest.map((a, k) => ({ a, k: k + subIndex + 1 })).filter(({ a, k }) => !a.startsWith("-") && !skip.has(k))
  if (subcommand === "init" && positional.length > 0) writes.push(path.resolve(cwd, positional[positional.length - 1]!.a))
  if (subcommand === "clone") {
    const [source, target] = positional
    if (target !== undefined) writes.push(path.resolve(cwd, target.a))
    else if (source !== undefined) writes.push(path.resolve(cwd, path.basename(source.a.replace(/\/+$/, "")).replace(/\.git$/, "")))
  }
  for (const { a } of positional) {
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(a)) continue
    if (!a.toLowerCase().startsWith("file://")) return refuse(`${a}: shell.run reaches no network (git may use local repositories only; http.get fetches within the policy)`)
    // Its path falls under fs.read like any other; an escaped one could mean another path to git than to us.
    if (a.includes("%")) return refuse(`${a}: a file URL with %-escapes is refused`)
  }
  return { cwd, reads, writes, skip }
}

/** Arguments that name paths: with a slash, starting with `~` or `.`, or the name of an existing entry of `cwd`. */
const pathArguments = (cwd: string, args: ReadonlyArray<string>, skip: ReadonlySet<number>): ReadonlyArray<string> => {
  const out: Array<string> = []
  args.forEach((arg, i) => {
    if (skip.has(i)) return
    const value = arg.startsWith("-") ? (arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : undefined) : arg
    if (value === undefined || value === "") return
    if (/^file:\/\//i.test(value)) return void out.push(decodeFileUrl(value))
    if (value.includes("://")) return
    if (value.includes("/") || value.startsWith("~") || value.startsWith(".") || exists(path.join(cwd, value))) out.push(value)
  })
  return out
}

/** The path of a `file://` URL, as git reads it (git does not percent-decode either). */
const decodeFileUrl = (url: string): string => url.replace(/^file:\/\/(localhost)?/i, "") || "/"

const exists = (p: string): boolean => {
  try {
    fs.lstatSync(p)
    return true
  } catch {
    return false
  }
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
  for (const arg of [command, ...args]) {
    const token = deniedToken(rule.denied_tokens, arg)
    if (token !== undefined) return deny(`the argument ${JSON.stringify(arg)} is a denied token (${token})`)
  }
  const plan: GitPlan | { readonly refused: string } = name === "git" ? gitPlan(baseDir, args) : { cwd: baseDir, reads: [], writes: [], skip: new Set() }
  if ("refused" in plan) return deny(plan.refused)
  const { cwd, writes } = plan
  const reads: Array<string> = []
  const named = [...plan.reads.map((p) => ({ shown: path.relative(baseDir, p) || ".", absolute: p })), ...pathArguments(cwd, args, plan.skip).map((p) => ({ shown: p, absolute: path.resolve(cwd, p) }))]
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
  for (const absolute of writes) {
    const shown = path.relative(baseDir, absolute) || "."
    if (write === undefined) return deny(`git writes ${shown}, and fs.write is not allowed`)
    const decision = judgeWrite(baseDir, write, absolute)
    if (!decision.ok) return deny(`git writes ${shown}: ${decision.reason}`)
  }
  return { ok: true, executable, name, args, reads, writes }
}

/** The denied token an argument is or smuggles (`--opt=value`: the option or the value), or undefined. */
const deniedToken = (tokens: ReadonlyArray<string>, arg: string): string | undefined => {
  const parts = arg.startsWith("-") && arg.includes("=") ? [arg, arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg]
  return tokens.find((t) => parts.includes(t))
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

/** A home directory of its own for the children: empty, so no dotfile of the host is read. */
let home: string | undefined
const emptyHome = () => (home ??= fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-home-")))

/** The children's environment: nothing of the host's but a fixed PATH and locale; git reads no system or global config, runs no hook. */
const environment = (name: string): NodeJS.ProcessEnv => ({
  PATH: FIXED_PATH.join(":"),
  LANG: "C.UTF-8",
  HOME: emptyHome(),
  ...(name === "git"
    ? {
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      // Local repositories only: no transport reaches the network (http.get is the way out, under its rule).
      GIT_ALLOW_PROTOCOL: "file",
      // No editor, no pager: nothing interactive, nothing the repository's configuration could name.
      GIT_EDITOR: "false",
      GIT_SEQUENCE_EDITOR: "false",
      GIT_PAGER: "cat",
      GIT_CONFIG_COUNT: "3",
      GIT_CONFIG_KEY_0: "core.hooksPath",
      GIT_CONFIG_VALUE_0: "/dev/null",
      GIT_CONFIG_KEY_1: "protocol.ext.allow",
      GIT_CONFIG_VALUE_1: "never",
      GIT_CONFIG_KEY_2: "core.fsmonitor",
      GIT_CONFIG_VALUE_2: "false"
    }
    : {})
})

/** Runs a checked command; the timeout, the output cap and `signal` (the call interrupted) kill its whole process group. */
export const run = (baseDir: string, rule: ShellRule, decision: Extract<CommandDecision, { ok: true }>, signal?: AbortSignal): Promise<RunOutcome> =>
  new Promise((resolve) => {
    const child = spawn(decision.executable, [...decision.args], {
      cwd: baseDir,
      env: environment(decision.name),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      shell: false,
      windowsHide: true
    })
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
      resolve(killed === undefined ? { _tag: "ok", result: partial(code, exitSignal) } : { _tag: "error", reason: killed, partial: partial(code, exitSignal) })
    })
  })
