// shell.run's containment: every process runs inside bubblewrap (`bwrap`), built from the policy. Inside: a read-only
// minimal system (/usr, the /lib* and /bin links or folders, the /etc pieces executables need), fs.read's paths bound
// read-only, fs.write's paths bound read-write, a private /tmp (the home is in it), no other file of the host, new
// namespaces for everything (PID, network, IPC, UTS, user, cgroup), no capabilities, and the process killed with its
// parent. Resource limits are set by `prlimit` (util-linux) on the bwrap process and inherited by everything inside:
// CPU seconds, address space, file size; the number of processes by a `pids` cgroup when one can be created (RLIMIT_NPROC
// does not hold for root), else by RLIMIT_NPROC.
import { spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import picomatch from "picomatch"
import type { FsRule, ShellRule } from "../Policy.js"
import type { Containment } from "./decision.js"
import { matcherOf } from "./fsGuard.js"


/** The folders the sandbox's system is made of, bound read-only (or recreated as the links they are). */
const SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
/** The pieces of /etc executables need: the loader's cache, users and groups, name service, time zone, alternatives, certificates. */
const ETC = [
  "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
  "/etc/localtime", "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates"
]
/** The home inside the sandbox: in its private /tmp, empty at each call. */
export const SANDBOX_HOME = "/tmp/home"

/** Where the tools of containment are looked up: never the caller's PATH. */
const TOOL_PATH = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"]
const which = (name: string): string | undefined => TOOL_PATH.map((d) => path.join(d, name)).find((p) => {
  try {
    fs.accessSync(p, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
})

/** Whether containment can be had here, and with what; probed once per process (a sandbox that cannot start is none). */
export type Availability = { readonly ok: true; readonly bwrap: string; readonly prlimit: string } | { readonly ok: false; readonly reason: string }

let probed: Availability | undefined

const INSTALL = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or set `containment: none` in shell.run's rule to run commands uncontained (the report then warns)"

/** Whether bubblewrap (and prlimit) can contain a process on this machine. */
export const availability = (): Availability => {
  if (probed !== undefined) return probed
  const bwrap = which("bwrap")
  const prlimit = which("prlimit")
  if (process.platform !== "linux") {
    probed = { ok: false, reason: `shell.run runs only inside an OS sandbox, and this platform (${process.platform}) has none that Artana supports (bubblewrap on Linux): set \`containment: none\` in shell.run's rule to run commands uncontained (the report then warns)` }
  } else if (bwrap === undefined) {
    probed = { ok: false, reason: `shell.run runs only inside an OS sandbox, and bwrap is not installed (looked in ${TOOL_PATH.join(":")}): ${INSTALL}` }
  } else if (prlimit === undefined) {
    probed = { ok: false, reason: `shell.run's resource limits are set with prlimit, which is not installed (util-linux): install util-linux, or set \`containment: none\`` }
  } else {
    const tried = spawnSync(bwrap, [...namespaces(), "--ro-bind", "/usr", "/usr", ...systemLinks(), "--", "/usr/bin/true"], { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000, encoding: "utf8" })
    probed = tried.status === 0
      ? { ok: true, bwrap, prlimit }
      : { ok: false, reason: `shell.run runs only inside an OS sandbox, and bwrap cannot start one here (${(tried.stderr ?? "").trim() || tried.error?.message || `exit ${tried.status}`}; are user namespaces allowed? sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces): ${INSTALL}` }
  }
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

/** The policy's paths as binds: each glob's whole folder, or (for a finer glob) the entries that match it now. */
const bindsOf = (baseDir: string, rule: FsRule | undefined, writable: boolean, limit: { left: number }): ReadonlyArray<Bind> => {
  if (rule === undefined) return []
  const out: Array<Bind> = []
  for (const glob of rule.paths) {
    const { root, whole } = rootOf(baseDir, glob)
    if (!fs.existsSync(root)) continue
    if (whole) {
      out.push({ source: root, writable })
      continue
    }
    const matches = matcherOf(baseDir, [glob])
    walk(root, limit, (entry, stat) => {
      if (!stat.isDirectory() && matches(entry)) out.push({ source: entry, writable })
      return true
    })
  }
  return out
}

/** Visits the entries below `root` (links not followed); `visit` returning false skips a folder's contents. */
const walk = (root: string, limit: { left: number }, visit: (entry: string, stat: fs.Stats) => boolean): void => {
  let entries: Array<string>
  try {
    entries = fs.readdirSync(root)
  } catch {
    return
  }
  for (const name of entries) {
    if (--limit.left < 0) throw new TooMany()
    const entry = path.join(root, name)
    let stat: fs.Stats
    try {
      stat = fs.lstatSync(entry)
    } catch {
      continue
    }
    if (visit(entry, stat) && stat.isDirectory()) walk(entry, limit, visit)
  }
}

class TooMany extends Error {}

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

/** The command line that runs `executable` contained, and what to undo after it. */
export interface Contained {
  readonly file: string
  readonly args: ReadonlyArray<string>
  /** Removes what the call set up on the host (its pids cgroup). */
  readonly cleanup: () => void
  /** How the number of processes is held: a pids cgroup or RLIMIT_NPROC. */
  readonly processes: "cgroup" | "rlimit"
}

/** The pids cgroup folders that can hold a child's processes: cgroup v1's pids hierarchy, or v2's with pids enabled. */
const PIDS_ROOTS = ["/sys/fs/cgroup/pids", "/sys/fs/cgroup"]

const pidsCgroup = (max: number): string | undefined => {
  for (const root of PIDS_ROOTS) {
    if (!fs.existsSync(path.join(root, "pids.max")) && !fs.existsSync(path.join(root, "cgroup.procs"))) continue
    if (root === "/sys/fs/cgroup") {
      let controllers = ""
      try {
        controllers = fs.readFileSync(path.join(root, "cgroup.subtree_control"), "utf8")
      } catch {
        continue
      }
      if (!controllers.split(/\s+/).includes("pids")) continue
    }
    const dir = path.join(root, `artana-sandbox-${randomUUID()}`)
    try {
      fs.mkdirSync(dir)
      fs.writeFileSync(path.join(dir, "pids.max"), String(max))
      return dir
    } catch {
      try {
        fs.rmdirSync(dir)
      } catch {
        // never made
      }
    }
  }
  return undefined
}

/** Cgroups whose removal waits for their last processes to go; removed at the latest when this process exits. */
const pending = new Set<string>()
let exitHook = false

const rmdirNow = (dir: string): boolean => {
  try {
    fs.rmdirSync(dir)
    return true
  } catch (e) {
    return e instanceof Error && "code" in e && e.code === "ENOENT"
  }
}

/** Removes a call's cgroup once its processes are gone (they die with the sandbox's PID namespace). */
const removeCgroup = (dir: string, tries = 50): void => {
  if (rmdirNow(dir)) {
    pending.delete(dir)
    return
  }
  pending.add(dir)
  if (!exitHook) {
    exitHook = true
    process.once("exit", () => {
      for (const left of pending) rmdirNow(left)
    })
  }
  if (tries > 0) setTimeout(() => removeCgroup(dir, tries - 1), 20).unref()
}

/**
 * The bwrap command line for a checked command: the system, the policy's paths (hidden entries masked where the rule
 * denies them, repositories' hooks and configuration read-only unless fs.write allows hidden files there), a private
 * /tmp and home, the resource limits. Throws `Error` with a reason when the bound folders hold too many entries.
 */
export const containedCommand = (
  tools: Extract<Availability, { ok: true }>,
  baseDir: string,
  rule: ShellRule,
  read: FsRule | undefined,
  write: FsRule | undefined,
  executable: string,
  args: ReadonlyArray<string>
): Contained => {
  const limit = { left: MAX_ENTRIES }
  const cwd = realOr(baseDir)
  let binds: Array<Bind>
  const masks: Array<Array<string>> = []
  try {
    binds = [...bindsOf(cwd, read, false, limit), ...bindsOf(cwd, write, true, limit)]
    // A folder both readable and writable is bound once, read-write; parents before children.
    const writable = new Set(binds.filter((b) => b.writable).map((b) => b.source))
    binds = [...new Map(binds.map((b) => [b.source, { source: b.source, writable: writable.has(b.source) }])).values()]
      .sort((a, b) => a.source.split(path.sep).length - b.source.split(path.sep).length || a.source.localeCompare(b.source))
    const writeMatches = write === undefined ? () => false : matcherOf(cwd, write.paths)
    for (const bind of binds) {
      const hideRule = bind.writable ? write : read
      const hide = hideRule?.deny_hidden ?? true
      const stat = fs.lstatSync(bind.source)
      if (!stat.isDirectory()) continue
      walk(bind.source, limit, (entry, entryStat) => {
        const name = path.basename(entry)
        if (!name.startsWith(".")) return true
        if (name === ".git" && entryStat.isDirectory()) {
          // git needs its repository; its hooks and configuration stay read-only unless fs.write allows them.
          if (bind.writable) {
            for (const part of ["hooks", "config"]) {
              const p = path.join(entry, part)
              if (fs.existsSync(p) && !(write !== undefined && !write.deny_hidden && writeMatches(p))) masks.push(["--ro-bind", p, p])
            }
          }
          return false
        }
        // git's own files in a work tree (.gitignore, .gitattributes, .gitmodules) stay: git reads them to work.
        if (!hide || entryStat.isSymbolicLink() || (name.startsWith(".git") && entryStat.isFile())) return false
        masks.push(entryStat.isDirectory() ? ["--tmpfs", entry, "--remount-ro", entry] : ["--ro-bind", "/dev/null", entry])
        return false
      })
    }
  } catch (e) {
    if (e instanceof TooMany) throw new Error(`the folders shell.run's sandbox binds hold more than ${MAX_ENTRIES} entries: narrow fs.read's and fs.write's paths`)
    throw e
  }
  const inside = (p: string) => binds.some((b) => p === b.source || p.startsWith(b.source + path.sep))
  const underSystem = (p: string) => SYSTEM.some((s) => p === s || p.startsWith(s + path.sep))
  const exe = realOr(executable)
  const bwrap = [
    ...namespaces(),
    "--ro-bind", "/usr", "/usr",
    ...systemLinks(),
    ...ETC.flatMap((p) => ["--ro-bind-try", p, p]),
    "--proc", "/proc",
    "--dev", "/dev",
    "--size", String(rule.max_file_bytes), "--perms", "1777", "--tmpfs", "/tmp",
    "--dir", SANDBOX_HOME,
    // The working directory, when no bind covers it, is an empty read-only folder holding the binds below it.
    ...(inside(cwd) ? [] : ["--tmpfs", cwd]),
    ...binds.flatMap((b) => [b.writable ? "--bind" : "--ro-bind", b.source, b.source]),
    ...masks.flat(),
    ...(inside(cwd) ? [] : ["--remount-ro", cwd]),
    // An executable the policy lists by path outside the system folders is bound read-only where it is.
    ...(underSystem(executable) || inside(exe) ? [] : ["--ro-bind", exe, exe, ...(exe === executable ? [] : ["--ro-bind", exe, executable])]),
    "--remount-ro", "/",
    "--chdir", cwd,
    "--", executable, ...args
  ]
  const cgroup = pidsCgroup(rule.max_processes)
  const prlimit = [
    `--cpu=${Math.ceil(rule.timeout_ms / 1000)}`,
    `--as=${rule.max_memory_bytes}`,
    `--fsize=${rule.max_file_bytes}`,
    `--core=0`,
    ...(cgroup === undefined ? [`--nproc=${rule.max_processes}`] : [])
  ]
  if (cgroup === undefined) {
    return { file: tools.prlimit, args: [...prlimit, "--", tools.bwrap, ...bwrap], cleanup: () => {}, processes: "rlimit" }
  }
  // The shell joins the cgroup, then becomes prlimit, which becomes bwrap: every process inside is counted.
  return {
    file: "/bin/sh",
    args: ["-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", cgroup, tools.prlimit, ...prlimit, "--", tools.bwrap, ...bwrap],
    cleanup: () => removeCgroup(cgroup),
    processes: "cgroup"
  }
}
