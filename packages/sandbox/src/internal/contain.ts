// shell.run's containment: every process runs inside bubblewrap (`bwrap`), built from the policy. Inside: a read-only
// minimal system (/usr, the /lib* and /bin links or folders, the /etc pieces executables need), fs.read's paths bound
// read-only, fs.write's paths bound read-write, a private /tmp (the home is in it), no other file of the host, new
// namespaces for everything (PID, network, IPC, UTS, user, cgroup), no capabilities, and the process killed with its
// parent. Resource limits are set by the shell that becomes bwrap (limits.ts) and inherited by everything inside: CPU
// seconds, address space, file size; the number of processes by a `pids` cgroup when one can be created (RLIMIT_NPROC
// does not hold for root), else by RLIMIT_NPROC.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import picomatch from "picomatch"
import type { FsRule, ShellRule } from "../Policy.js"
import type { Containment } from "./decision.js"
import { TOOL_PATH, TooMany, walk, which } from "./files.js"
import { hiddenComponent, matcherOf } from "./fsGuard.js"
import { type GitGuard, guardRepositories, isGitDirectory } from "./gitGuard.js"
import { type Mount, mountsOf } from "./mounts.js"
import { type Cgroup, pidsCgroup, probeLimits, prologue, removeCgroup, rmdirNow, SH, type Units } from "./limits.js"


/** The folders the sandbox's system is made of, bound read-only (or recreated as the links they are). */
const SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
/** The pieces of /etc executables need: the loader's cache, users and groups, name service, time zone, alternatives, certificates. */
const ETC = [
  "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
  "/etc/localtime", "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates"
]
/** The home inside the sandbox: in its private /tmp, empty at each call. */
export const SANDBOX_HOME = "/tmp/home"
/** Where the launcher's shell is copied inside the sandbox, and the fd bwrap copies it from. */
export const LAUNCHER_PATH = "/.artana-launcher"
export const LAUNCHER_FD = 7
/**
 * The launcher's own CPU time (RLIMIT_CPU, set before bwrap), in calls' worth of CPU time: it leaves its sandbox
 * (cleanly, between calls) once it used one call's worth, and the limit stops it should anything keep it busy.
 */
export const LAUNCHER_CPU_CALLS = 2


/** Whether containment can be had here, and with what; probed once per process (a sandbox that cannot start is none). */
export type Availability = { readonly ok: true; readonly bwrap: string; readonly units: Units } | { readonly ok: false; readonly reason: string }

let probed: Availability | undefined

const INSTALL = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or set `containment: none` in shell.run's rule to run commands uncontained (the report then warns)"

/**
 * Whether bubblewrap can contain a process on this machine: a minimal sandbox is started the way every call starts
 * one (the shell setting limits, then bwrap), and the limits are read back inside it, which also measures the units of
 * the shell's `ulimit`.
 */
export const availability = (): Availability => {
  if (probed !== undefined) return probed
  const bwrap = which("bwrap")
  if (process.platform !== "linux") {
    probed = { ok: false, reason: `shell.run runs only inside an OS sandbox, and this platform (${process.platform}) has none that Artana supports (bubblewrap on Linux): set \`containment: none\` in shell.run's rule to run commands uncontained (the report then warns)` }
    return probed
  }
  if (bwrap === undefined) {
    probed = { ok: false, reason: `shell.run runs only inside an OS sandbox, and bwrap is not installed (looked in ${TOOL_PATH.join(":")}): ${INSTALL}` }
    return probed
  }
  let failure = ""
  const units = probeLimits((script) => {
    const tried = spawnSync(SH, ["-c", script, "sh", bwrap, ...namespaces(), "--ro-bind", "/usr", "/usr", ...systemLinks(), "--proc", "/proc", "--", "/usr/bin/cat", "/proc/self/limits"], { stdio: ["ignore", "pipe", "pipe"], timeout: 10_000, encoding: "utf8" })
    if (tried.status === 0) {
      failure = ""
      return tried.stdout
    }
    failure = (tried.stderr ?? "").trim() || tried.error?.message || `exit ${tried.status}`
    return undefined
  })
  probed = units !== undefined
    ? { ok: true, bwrap, units }
    : failure !== ""
      ? { ok: false, reason: `shell.run runs only inside an OS sandbox, and bwrap cannot start one here (${failure}; are user namespaces allowed? sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces): ${INSTALL}` }
      : { ok: false, reason: `shell.run's resource limits are set by ${SH}'s ulimit, and the limits it set did not hold inside the sandbox: make ${SH} a POSIX shell (dash, bash), or set \`containment: none\`` }
  return probed
}

const namespaces = () => ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]

/** /bin, /lib... as the host has them: a link (merged /usr) is recreated as the same link, a folder bound read-only. */
const systemLinks = (): ReadonlyArray<string> =>
  SYSTEM.filter((p) => p !== "/usr").flatMap((p) => {
    try {
      const stat = fs.lstatSync(p)
      if (stat.isSymbolicLink()) return ["--symlink", fs.readlinkSync(p), p]
      if (stat.isDirectory()) return ["--ro-bind", p, p]
    } catch {
      // not on this system
    }
    return []
  })

const posix = (p: string) => p.split(path.sep).join(path.posix.sep)

/** A glob's static folder (absolute, real where it exists) and whether the glob is that folder's whole tree (or the path itself). */
const rootOf = (baseDir: string, glob: string): { readonly root: string; readonly whole: boolean } => {
  const scanned = picomatch.scan(posix(glob))
  const base = scanned.base === "" ? "." : scanned.base
  const root = path.resolve(baseDir, base)
  const rest = scanned.isGlob ? scanned.glob : ""
  return { root: realOr(root), whole: rest === "" || rest === "**" }
}

const realOr = (p: string): string => {
  try {
    return fs.realpathSync.native(p)
  } catch {
    return p
  }
}

interface Bind {
  readonly source: string
  readonly writable: boolean
}

/**
 * Whether the rule admits `real` (a real path) as fs.read and fs.write would: the rule's globs match it (or, for a
 * folder bound whole, what is in it) and, under `deny_hidden`, it has no hidden component. A glob's folder that a
 * command replaced by a link (within a writable folder) resolves elsewhere, and is not admitted.
 */
const admits = (baseDir: string, rule: FsRule, real: string): boolean => {
  if (rule.deny_hidden && hiddenComponent(path.relative(baseDir, real)) !== undefined) return false
  const matches = matcherOf(baseDir, rule.paths)
  return matches(real) || matches(path.join(real, "x"))
}

/**
 * The policy's paths as binds: each glob's whole folder, or (for a finer glob) the entries that match it now. bwrap
 * follows links in what it binds, so a link is never a bind: a glob's folder only where it really is (`admits`), and
 * of a finer glob's entries only files and folders (a link a command planted there, `out/notes.md -> /etc/shadow`,
 * would bind its target; inside the sandbox, a link in a bound folder resolves within the sandbox's own view).
 */
const bindsOf = (baseDir: string, rule: FsRule | undefined, writable: boolean, limit: { left: number }): ReadonlyArray<Bind> => {
  if (rule === undefined) return []
  const out: Array<Bind> = []
  for (const glob of rule.paths) {
    const { root, whole } = rootOf(baseDir, glob)
    if (!fs.existsSync(root)) continue
    if (whole) {
      if (admits(baseDir, rule, root)) out.push({ source: root, writable })
      continue
    }
    const matches = matcherOf(baseDir, [glob])
    walk(root, limit, (entry, stat) => {
      if (!stat.isDirectory() && !stat.isSymbolicLink() && matches(entry)) out.push({ source: entry, writable })
      return true
    })
  }
  return out
}


/** How many entries the bound folders may hold before a call is refused (they are walked for hidden files at each call). */
export const MAX_ENTRIES = 100_000

/** The containment record of a policy: what every shell step under it sees (the log's and the report's). */
export const recordOf = (baseDir: string, rule: ShellRule, read: FsRule | undefined, write: FsRule | undefined): Containment => {
  if (rule.containment === "none") return { mechanism: "none", readOnly: [], readWrite: [], network: true }
  const shown = (baseDir2: string, glob: string) => {
    const { root, whole } = rootOf(baseDir2, glob)
    const rel = path.relative(baseDir2, root)
    return whole ? (rel === "" ? "." : rel.startsWith("..") || path.isAbsolute(rel) ? root : rel) : glob
  }
  return {
    mechanism: "bubblewrap",
    readOnly: (read?.paths ?? []).map((g) => shown(baseDir, g)),
    readWrite: (write?.paths ?? []).map((g) => shown(baseDir, g)),
    network: false
  }
}

/** The command line that starts a sandbox, and what to undo after it. */
export interface Contained {
  readonly file: string
  readonly args: ReadonlyArray<string>
  /** Removes what the call set up on the host (its pids cgroup), once its processes are gone. */
  readonly cleanup: () => void
  /** Tries that now, without waiting: true when nothing is left to remove. */
  readonly cleanupNow: () => boolean
  /** How the number of processes is held: a pids cgroup or RLIMIT_NPROC. */
  readonly processes: "cgroup" | "rlimit"
}

/**
 * A sandbox as the policy makes it for one executable, before anything is started: bwrap's arguments up to the
 * command, and the limits the shell that becomes bwrap sets. Two specs with the same `key` are the same sandbox.
 */
export interface Spec {
  readonly bwrap: ReadonlyArray<string>
  readonly limits: { readonly cpuSeconds: number; readonly memoryBytes: number; readonly fileBytes: number; readonly maxProcesses: number }
  readonly cwd: string
  readonly key: string
  /** The repositories of the writable folders: what guards them, to check after each call (gitGuard.ts). */
  readonly git: GitGuard
  /** The policy's mounts, checked in the sandbox before its first call (mounts.ts). */
  readonly mounts: ReadonlyArray<Mount>
}

/**
 * The bwrap arguments for a checked command: the system, the policy's paths (hidden entries masked where the rule
 * denies them, repositories' hooks and configuration read-only unless fs.write allows hidden files there), a private
 * /tmp and home, the working directory. Computed from the files as they are now (the bound folders are walked).
 * Throws `Error` with a reason when the bound folders hold too many entries.
 */
export const sandboxSpec = (
  baseDir: string,
  rule: ShellRule,
  read: FsRule | undefined,
  write: FsRule | undefined,
  executable: string
): Spec => {
  const limit = { left: MAX_ENTRIES }
  const cwd = realOr(baseDir)
  let binds: Array<Bind>
  const masks: Array<Array<string>> = []
  let git: GitGuard
  try {
    binds = [...bindsOf(cwd, read, false, limit), ...bindsOf(cwd, write, true, limit)]
    // A folder both readable and writable is bound once, read-write; parents before children.
    const writable = new Set(binds.filter((b) => b.writable).map((b) => b.source))
    binds = [...new Map(binds.map((b) => [b.source, { source: b.source, writable: writable.has(b.source) }])).values()]
      .sort((a, b) => a.source.split(path.sep).length - b.source.split(path.sep).length || a.source.localeCompare(b.source))
    const writeMatches = write === undefined ? () => false : matcherOf(cwd, write.paths)
    const repos: Array<string> = []
    const masked = new Set<string>()
    // Whether a path is writable in the sandbox: the innermost bind holding it is (a read-only folder inside a
    // read-write one stays read-only, its repositories too: they need no guard, and binding them would undo that).
    const writableAt = (p: string) => binds.filter((b) => p === b.source || p.startsWith(b.source + path.sep))
      .reduce<Bind | undefined>((inner, b) => (inner === undefined || b.source.length > inner.source.length ? b : inner), undefined)?.writable === true
    for (const bind of binds) {
      const hideRule = bind.writable ? write : read
      const hide = hideRule?.deny_hidden ?? true
      const stat = fs.lstatSync(bind.source)
      if (!stat.isDirectory()) continue
      walk(bind.source, limit, (entry, entryStat) => {
        const name = path.basename(entry)
        if (!name.startsWith(".")) {
          // A bare repository in a writable folder is guarded as a `.git` is (git takes it for a repository).
          if (!bind.writable || !entryStat.isDirectory() || !isGitDirectory(entry)) return true
          if (writableAt(entry)) repos.push(entry)
          return false
        }
        if (name === ".git" && (entryStat.isDirectory() || entryStat.isFile() || entryStat.isSymbolicLink())) {
          // git needs its repository; in a writable folder, what git would run of it is guarded (gitGuard.ts).
          if (bind.writable && writableAt(entry)) repos.push(entry)
          return false
        }
        // git's own files in a work tree (.gitignore, .gitattributes, .gitmodules) stay: git reads them to work.
        if (!hide || entryStat.isSymbolicLink() || (name.startsWith(".git") && entryStat.isFile())) return false
        masks.push(entryStat.isDirectory() ? ["--tmpfs", entry, "--remount-ro", entry] : ["--ro-bind", "/dev/null", entry])
        masked.add(entry)
        return false
      })
    }
    const allowed = (p: string) => write !== undefined && !write.deny_hidden && writeMatches(p)
    const roots = binds.filter((b) => b.writable && fs.lstatSync(b.source).isDirectory()).map((b) => b.source)
    git = guardRepositories(repos, roots, masked, allowed, limit)
    masks.push(...git.masks.map((m) => [...m]))
  } catch (e) {
    if (e instanceof TooMany) throw new Error(`the folders shell.run's sandbox binds hold more than ${MAX_ENTRIES} entries: narrow fs.read's and fs.write's paths`)
    throw e
  }
  const inside = (p: string) => binds.some((b) => p === b.source || p.startsWith(b.source + path.sep))
  const underSystem = (p: string) => SYSTEM.some((s) => p === s || p.startsWith(s + path.sep))
  const exe = realOr(executable)
  const policyMounts = [
    // The working directory, when no bind covers it, is an empty read-only folder holding the binds below it.
    ...(inside(cwd) ? [] : ["--tmpfs", cwd]),
    ...binds.flatMap((b) => [b.writable ? "--bind" : "--ro-bind", b.source, b.source]),
    ...masks.flat(),
    ...(inside(cwd) ? [] : ["--remount-ro", cwd])
  ]
  const bwrap = [
    ...namespaces(),
    // The launcher is the sandbox's PID 1 (no init of bwrap's, which a command could ptrace or write to): launcher.ts.
    "--as-pid-1",
    "--ro-bind", "/usr", "/usr",
    ...systemLinks(),
    ...ETC.flatMap((p) => ["--ro-bind-try", p, p]),
    "--proc", "/proc",
    // /dev read-only (nothing a call leaves there can reach the next), with a /dev/shm and a /dev/mqueue of its own.
    "--dev", "/dev",
    "--size", String(rule.max_file_bytes), "--perms", "1777", "--tmpfs", "/dev/shm",
    "--mqueue", "/dev/mqueue",
    "--remount-ro", "/dev",
    "--size", String(rule.max_file_bytes), "--perms", "1777", "--tmpfs", "/tmp",
    "--dir", SANDBOX_HOME,
    ...policyMounts,
    // An executable the policy lists by path outside the system folders is bound read-only where it is.
    ...(underSystem(executable) || inside(exe) ? [] : ["--ro-bind", exe, exe, ...(exe === executable ? [] : ["--ro-bind", exe, executable])]),
    // The launcher that receives the calls (launcher.ts): a copy of the host's /bin/sh made from fd 7, execute-only,
    // so that the kernel marks the launcher not dumpable and no command can read or write its memory or its fds.
    "--perms", "0111", "--file", String(LAUNCHER_FD), LAUNCHER_PATH,
    "--remount-ro", "/",
    "--chdir", cwd
  ]
  const limits = { cpuSeconds: Math.ceil(rule.timeout_ms / 1000), memoryBytes: rule.max_memory_bytes, fileBytes: rule.max_file_bytes, maxProcesses: rule.max_processes }
  return { bwrap, limits, cwd, key: JSON.stringify([bwrap, limits]), git, mounts: mountsOf(policyMounts) }
}

/** bash, which closes fds of any number (dash's redirections take one digit). */
const BASH = "/bin/bash"
let bash: boolean | undefined
/**
 * The step between the limits and bwrap that closes every fd above LAUNCHER_FD: what the host process inherited
 * without close-on-exec (a harness's pipe) would otherwise reach every command. It lists /proc/self/fd and closes
 * each (the folder's own fd, closed already, too), then execs bwrap through `env -u SHLVL` (bash would add SHLVL to
 * the sandbox's environment); without bash on the host, nothing is closed (README).
 */
const closeFds = (): ReadonlyArray<string> => {
  bash ??= fs.existsSync(BASH)
  return bash
    ? [BASH, "-c", `for f in /proc/self/fd/*; do n=\${f##*/}; [ "$n" -le ${LAUNCHER_FD} ] || eval "exec $n>&-"; done; exec /usr/bin/env -u SHLVL "$@"`, "bash"]
    : []
}

/**
 * The command line that starts `spec`'s sandbox running `command` (what follows bwrap's `--`): the shell joins a new
 * pids cgroup (every process inside is counted: the command's `max_processes` and the launcher), sets the limits
 * every process inside inherits (memory, file size, no core files; RLIMIT_CPU at LAUNCHER_CPU_CALLS calls' worth, each call setting its own in its subshell), then
 * becomes bwrap.
 */
export const startCommand = (tools: Extract<Availability, { ok: true }>, spec: Spec, command: ReadonlyArray<string>): Contained => {
  const cgroup: Cgroup | undefined = pidsCgroup(spec.limits.maxProcesses + 1)
  const limits = { ...spec.limits, cpuSeconds: LAUNCHER_CPU_CALLS * spec.limits.cpuSeconds, processes: cgroup === undefined ? spec.limits.maxProcesses + 1 : undefined }
  let script: string
  try {
    script = prologue(tools.units, limits, cgroup)
  } catch (e) {
    if (cgroup !== undefined) removeCgroup(cgroup.dir)
    throw e
  }
  return {
    file: SH,
    args: ["-c", script, cgroup?.dir ?? "sh", ...closeFds(), tools.bwrap, ...spec.bwrap, "--", ...command],
    cleanup: cgroup === undefined ? () => {} : () => removeCgroup(cgroup.dir),
    cleanupNow: cgroup === undefined ? () => true : () => rmdirNow(cgroup.dir),
    processes: cgroup === undefined ? "rlimit" : "cgroup"
  }
}
