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
  | { readonly ok: true; readonly executable: string; readonly name: string; readonly args: ReadonlyArray<string>; readonly paths: ReadonlyArray<string> }
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
const GIT_NETWORK = new Set(["clone", "fetch", "pull", "push", "ls-remote", "archive", "submodule", "remote"])
const GIT_CONFIG_READS = new Set(["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--show-origin", "--show-scope", "--name-only", "--null", "-z", "--type", "--default", "--includes", "--no-includes", "--local", "--file", "-f", "--blob", "--worktree"])

/** The `--name` of an argument (`--upload-pack=x` is `upload-pack`), or undefined for a non-long option. */
const longName = (arg: string): string | undefined => (arg.startsWith("--") && arg.length > 2 ? arg.slice(2).split("=")[0]! : undefined)

/** Whether `name` is `option` or an abbreviation of it git would accept. */
const abbreviates = (name: string, option: string): boolean => name.length > 0 && option.startsWith(name)

const inside = (baseDir: string, target: string): boolean => {
  const rel = path.relative(baseDir, target)
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel))
}

/** Why a git command line is refused, or undefined. */
const gitRefusal = (baseDir: string, args: ReadonlyArray<string>): string | undefined => {
  const subcommandIndex = args.findIndex((a, i) => !a.startsWith("-") && !(i > 0 && ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"].includes(args[i - 1]!)))
  const subcommand = subcommandIndex === -1 ? undefined : args[subcommandIndex]
  const realDir = (dir: string): string => {
    const absolute = path.resolve(baseDir, dir)
    try {
      return fs.realpathSync.native(absolute)
    } catch {
      return absolute
    }
  }
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg.includes("ext::") || /^fd::/.test(arg)) return `git: ${arg} uses a transport that runs a program (ext::, fd::)`
    if (/^-[^-]/.test(arg)) {
      // A short option, or a cluster of them (`-qc`): options can be bundled, and a value attached.
      if (arg === "-C" || arg.startsWith("-C")) {
        const dir = arg === "-C" ? args[i + 1] : arg.slice(2)
        if (dir === undefined || !inside(baseDir, realDir(dir))) return `git: -C ${dir ?? ""} is outside the workspace`
        if (arg === "-C") i++
        continue
      }
      if (arg.slice(1).includes("c")) return `git: ${arg} (-c sets configuration, which can make git run programs) is refused`
      if (arg.slice(1).includes("u") && subcommand !== undefined && GIT_NETWORK.has(subcommand)) {
        return `git ${subcommand}: ${arg} (-u is --upload-pack, which runs a program) is refused`
      }
      continue
    }
    const name = longName(arg)
    if (name === undefined) continue
    const refused = GIT_LONG_REFUSED.find((option) => abbreviates(name, option))
    if (refused !== undefined) {
      return `git: --${name} (${refused === name ? "" : `an abbreviation of --${refused}, `}which can run a program or load configuration) is refused`
    }
    const dirOption = GIT_LONG_DIRS.find((option) => abbreviates(name, option))
    if (dirOption !== undefined) {
      const value = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : args[i + 1]
      if (value === undefined || !inside(baseDir, realDir(value))) return `git: --${dirOption} ${value ?? ""} is outside the workspace`
      if (!arg.includes("=")) i++
    }
  }
  if (subcommand === "config") {
    const rest = args.slice(subcommandIndex + 1)
    const reads = rest.some((a) => GIT_CONFIG_READS.has(a.split("=")[0]!) && a !== "--local" && a !== "--file" && a !== "-f")
    const positional = rest.filter((a) => !a.startsWith("-"))
    if (!reads && positional.length !== 1) return "git config: only reads are allowed (--get, --list, or a single key); writes are refused"
    if (rest.some((a) => ["--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit", "-e"].includes(a))) {
      return "git config: writes are refused"
    }
  }
  if (subcommand === "hook") return "git hook: running hooks is refused"
  return undefined
}

/** Arguments that name paths: with a slash, starting with `~` or `.`, or the name of an existing entry of the workspace. */
const pathArguments = (baseDir: string, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const arg of args) {
    const value = arg.startsWith("-") ? (arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : undefined) : arg
    if (value === undefined || value === "" || value.includes("://")) continue
    if (value.includes("/") || value.startsWith("~") || value.startsWith(".") || fs.existsSync(path.join(baseDir, value))) out.push(value)
  }
  return out
}

/**
 * Checks a command line against the rule (and the fs.read rule, for the paths in it). `read` undefined: fs.read is
 * not allowed, so no argument may name a path.
 */
export const checkCommand = (baseDir: string, rule: ShellRule, read: FsRule | undefined, command: string, args: ReadonlyArray<string>): CommandDecision => {
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
    const token = rule.denied_tokens.find((t) => arg === t || (t.startsWith("-") && arg.startsWith(`${t}=`)) || (arg.startsWith("--") && arg.split("=")[0] === t))
    if (token !== undefined) return deny(`the argument ${JSON.stringify(arg)} is a denied token (${token})`)
  }
  if (name === "git") {
    const refusal = gitRefusal(baseDir, args)
    if (refusal !== undefined) return deny(refusal)
  }
  const paths = pathArguments(baseDir, args)
  for (const p of paths) {
    if (read === undefined) return deny(`the argument ${JSON.stringify(p)} names a path, and fs.read is not allowed`)
    if (p.startsWith("~")) return deny(`the argument ${JSON.stringify(p)} names a path in a home directory`)
    const absolute = path.resolve(baseDir, p)
    // A path that does not exist yet (an output, a new branch) is judged by where it would be.
    // A command may name a directory (ls, git -C); a device or a FIFO stays refused.
    const decision = fs.existsSync(absolute) || isLink(absolute) ? checkRead(baseDir, read, p, { directories: true }) : judgeMissing(baseDir, read, absolute, p)
    if (!decision.ok) return deny(`the argument ${JSON.stringify(p)}: ${decision.reason}`)
  }
  return { ok: true, executable, name, args, paths }
}

const isLink = (p: string): boolean => {
  try {
    return fs.lstatSync(p).isSymbolicLink()
  } catch {
    return false
  }
}

/** A path argument that does not exist: its real directory joined with its name must be allowed. */
const judgeMissing = (baseDir: string, read: FsRule, absolute: string, requested: string): { readonly ok: true } | { readonly ok: false; readonly reason: string } => {
  let dir: string
  try {
    dir = fs.realpathSync.native(path.dirname(absolute))
  } catch {
    dir = path.dirname(absolute)
  }
  const target = path.join(dir, path.basename(absolute))
  const rel = path.relative(baseDir, target)
  if (read.deny_hidden && rel.split(path.sep).some((part) => part.startsWith(".") && part !== "..")) return { ok: false, reason: `${requested} is hidden` }
  if (!matcherOf(baseDir, read.paths)(target.split(path.sep).join("/"))) return { ok: false, reason: `${requested} is outside the allowed paths` }
  return { ok: true }
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

/** Runs a checked command; the timeout and the output cap kill its whole process group. */
export const run = (baseDir: string, rule: ShellRule, decision: Extract<CommandDecision, { ok: true }>): Promise<RunOutcome> =>
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
    const partial = (code: number | null, signal: NodeJS.Signals | null): RunResult => ({
      exitCode: code,
      signal,
      stdout: Buffer.concat(out).toString("utf8"),
      stderr: Buffer.concat(err).toString("utf8")
    })
    child.on("error", (e) => {
      clearTimeout(timer)
      resolve({ _tag: "error", reason: `cannot start ${decision.executable}: ${e.message}`, partial: partial(null, null) })
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      // Whatever the group left behind goes too (a grandchild holding the pipes is what `close` waited for).
      if (killed === undefined && child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL")
        } catch {
          // the group is gone
        }
      }
      resolve(killed === undefined ? { _tag: "ok", result: partial(code, signal) } : { _tag: "error", reason: killed, partial: partial(code, signal) })
    })
  })
