// shell.run: argv only, never a shell. The executable is an allowed name looked up on a fixed PATH, or an allowed
// absolute path as written; denied tokens match whole arguments and `--opt=value` forms. What the process can reach is
// the OS sandbox's to hold (contain.ts): contained, the arguments are not second-guessed, and those naming entries
// fs.read allows are recorded for the report. Uncontained (`containment: none`), arguments that name paths fall under
// the fs.read rule, the only file rule such a command has. The child gets a minimal environment, stdin from /dev/null,
// the base directory as cwd, and is killed with its whole process group on the timeout or the output cap.
import { type ChildProcessByStdio, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Readable } from "node:stream"
import { Json } from "@artana/core"
import type { FsRule, ShellRule } from "../Policy.js"
import { availability, MAX_ENTRIES, SANDBOX_HOME, sandboxSpec } from "./contain.js"
import { exists, real } from "./files.js"
import { checkRead, matcherOf, physical } from "./fsGuard.js"
import { afterCall, type GitGuard } from "./gitGuard.js"
import { type RunOutcome, type RunResult, runContained } from "./launcher.js"

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
const pathArguments = (cwd: string, args: ReadonlyArray<string>): ReadonlyArray<string> | { readonly refused: string } => {
  const out: Array<string> = []
  // After a bare `--`, every argument is an operand, whatever it starts with (`diff -- --x/../../.env`).
  const operands = args.indexOf("--")
  for (const [i, arg] of args.entries()) {
    if (i === operands) continue
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


/**
 * Checks a command line against the rule: the executable, NUL bytes, denied tokens. Contained, that is all (the
 * sandbox holds what the process reaches); the arguments that name entries fs.read allows are recorded. Uncontained,
 * every argument that names a path must be within fs.read (directories allowed); without fs.read, none may.
 */
export const checkCommand = (
  baseDir: string,
  rule: ShellRule,
  read: FsRule | undefined,
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
  // git's environment (no host configuration, nothing interactive) follows git under another name.
  if (path.basename(real(executable) ?? executable) === "git") name = "git"
  for (const arg of [command, ...args]) {
    const token = deniedToken(rule.denied_tokens, arg)
    if (token !== undefined) return deny(`the argument ${JSON.stringify(arg)} is a denied token (${token})`)
  }
  const named = pathArguments(baseDir, args)
  if (rule.containment !== "none") {
    const reads = "refused" in named || read === undefined
      ? []
      : named.map((p) => physical(baseDir, p)).filter((p) => exists(p) && checkRead(baseDir, read, p, { directories: true }).ok)
    return { ok: true, executable, name, args, reads: [...new Set(reads)] }
  }
  if ("refused" in named) return deny(named.refused)
  const reads: Array<string> = []
  for (const p of named) {
    if (read === undefined) return deny(`the argument ${JSON.stringify(p)} names a path, and fs.read is not allowed`)
    if (p.startsWith("~")) return deny(`the argument ${JSON.stringify(p)} names a path in a home directory`)
    const absolute = physical(baseDir, p)
    // A path that does not exist yet (an output) is judged by where it would be. A command may name a directory (ls);
    // a device or a FIFO stays refused.
    const decision = exists(absolute) ? checkRead(baseDir, read, absolute, { directories: true }) : judgeMissing(baseDir, read, absolute)
    if (!decision.ok) return deny(`the argument ${JSON.stringify(p)}: ${decision.reason}`)
    if (exists(absolute)) reads.push(absolute)
  }
  return { ok: true, executable, name, args, reads }
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
  const dir = path.dirname(absolute)
  const target = path.join(real(dir) ?? dir, path.basename(absolute))
  const rel = path.relative(baseDir, target)
  if (rule.deny_hidden && rel.split(path.sep).some((part) => part.startsWith(".") && part !== "." && part !== "..")) return { ok: false, reason: `${rel} is hidden` }
  if (!matcherOf(baseDir, rule.paths)(target)) return { ok: false, reason: `${rel} is outside the allowed paths (${rule.paths.join(", ") || "none"})` }
  return { ok: true }
}

export type { RunOutcome, RunResult }

/**
 * The children's environment: nothing of the host's but a fixed PATH and locale, and `home`, an empty directory of
 * the call's own (no dotfile of the host is read, none is left for the next call). For git: no system or global
 * configuration, nothing interactive (no prompt, editor or pager), no repository found above the base directory, and
 * gc and maintenance in the foreground (a detached one would outlive the process group the timeout kills). Hooks,
 * filters and the repository's configuration run as git runs them: inside the sandbox.
 */
const environment = (name: string, baseDir: string, home: string): NodeJS.ProcessEnv => ({
  ...baseEnvironment(home),
  ...commandEnvironment(name, baseDir)
})

/** What every command gets: a fixed PATH and locale, and its home. */
const baseEnvironment = (home: string): Record<string, string> => ({ PATH: FIXED_PATH.join(":"), LANG: "C.UTF-8", HOME: home })

/** What a command adds to it: git's variables for git. */
const commandEnvironment = (name: string, baseDir: string): Record<string, string> => (
  name === "git"
    ? {
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      GIT_CEILING_DIRECTORIES: path.dirname(baseDir),
      GIT_EDITOR: "false",
      GIT_SEQUENCE_EDITOR: "false",
      GIT_PAGER: "cat",
      GIT_CONFIG_COUNT: "2",
      GIT_CONFIG_KEY_0: "gc.autoDetach",
      GIT_CONFIG_VALUE_0: "false",
      GIT_CONFIG_KEY_1: "maintenance.autoDetach",
      GIT_CONFIG_VALUE_1: "false"
    }
    : {}
)

/** The fs rules a contained command's sandbox is built from. */
export interface Visible {
  readonly read: FsRule | undefined
  readonly write: FsRule | undefined
}

/**
 * Runs a checked command, inside bubblewrap unless the rule says `containment: none`; the timeout, the output cap and
 * `signal` (the call interrupted) kill its whole process group (contained: its sandbox, and with its PID namespace
 * every process in it).
 */
export const run = (
  baseDir: string,
  rule: ShellRule,
  decision: Extract<CommandDecision, { ok: true }>,
  signal?: AbortSignal,
  visible: Visible = { read: undefined, write: undefined }
): Promise<RunOutcome> => {
  if (rule.containment === "none") return runUncontained(baseDir, rule, decision, signal)
  const empty: RunResult = { exitCode: null, signal: null, stdout: "", stderr: "" }
  const tools = availability()
  if (!tools.ok) return Promise.resolve({ _tag: "error", reason: tools.reason, partial: empty })
  try {
    const spec = sandboxSpec(baseDir, rule, visible.read, visible.write, decision.executable)
    return runContained(tools, {
      policyKey: policyKey(baseDir, rule, visible),
      spec,
      env: baseEnvironment(SANDBOX_HOME),
      extraEnv: commandEnvironment(decision.name, baseDir),
      argv: [decision.executable, ...decision.args],
      rule
    }, signal).then((outcome) => gitChecked(outcome, spec.git))
  } catch (e) {
    return Promise.resolve({ _tag: "error", reason: e instanceof Error ? e.message : String(e), partial: empty })
  }
}

/**
 * A call's outcome once what git on the host would run of the call's writes is undone (gitGuard.ts): a call that left
 * any fails, saying what was removed or moved aside, whatever its own exit.
 */
const gitChecked = (outcome: RunOutcome, guard: GitGuard): RunOutcome => {
  let done: ReadonlyArray<string>
  try {
    done = afterCall(guard, { left: MAX_ENTRIES })
  } catch (e) {
    done = [`they could not be checked (${e instanceof Error ? e.message : String(e)})`]
  }
  if (done.length === 0) return outcome
  const reason = `the command wrote what git on the host would run (a repository's hooks or configuration, as git reads ` +
    `them: hooks/, config, config.worktree, commondir, modules/, worktrees/, or a repository of its own): ${done.join("; ")}. ` +
    `Commands may not change git's configuration in fs.write's folders; a policy that trusts them to allows hidden files there (deny_hidden: false)`
  return outcome._tag === "ok"
    ? { _tag: "error", reason, partial: outcome.result }
    : { _tag: "error", reason: `${outcome.reason}; ${reason}`, partial: outcome.partial }
}

/**
 * What a policy's contained commands share sandboxes by: its base directory and the rules the sandbox is built from,
 * as canonical JSON (the same policy written with its keys in another order is the same policy).
 */
export const policyKey = (baseDir: string, rule: ShellRule, visible: Visible): string => {
  const parsed: unknown = JSON.parse(JSON.stringify([path.resolve(baseDir), rule, visible.read ?? null, visible.write ?? null]))
  return Json.isJson(parsed) ? Json.canonical(parsed) : JSON.stringify(parsed)
}

/** Runs a command of a `containment: none` rule: a plain spawn, with a home of the call's own. */
const runUncontained = (
  baseDir: string,
  rule: ShellRule,
  decision: Extract<CommandDecision, { ok: true }>,
  signal?: AbortSignal
): Promise<RunOutcome> =>
  new Promise((resolve) => {
    const empty: RunResult = { exitCode: null, signal: null, stdout: "", stderr: "" }
    const file = decision.executable
    const argv: ReadonlyArray<string> = decision.args
    let home: string
    // A home of the run's own, removed when the run ends (or when the command cannot start).
    try {
      home = fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-home-"))
    } catch (e) {
      return resolve({ _tag: "error", reason: `cannot make a home for ${decision.executable} in ${os.tmpdir()}: ${e instanceof Error ? e.message : String(e)}`, partial: empty })
    }
    const made = home
    const cleanup = () => fs.rmSync(made, { recursive: true, force: true })
    const removeHome = cleanup
    let child: ChildProcessByStdio<null, Readable, Readable>
    try {
      child = spawn(file, [...argv], {
        cwd: baseDir,
        env: environment(decision.name, baseDir, home),
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
