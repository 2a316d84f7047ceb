// The resource limits of a contained command, set by the one process that runs before bubblewrap: `/bin/sh -c
// '<prologue> && exec "$@"' <cgroup> bwrap ...`. The shell joins the call's pids cgroup, sets the rlimits with its
// `ulimit` builtin (soft and hard: nothing inside can raise them), then becomes bwrap; everything inside inherits both.
// One shell and no `prlimit` is one program start fewer per call (each costs ~1 ms of CPU here).
//
// Joining the cgroup: on cgroup v1 the shell writes "0" to the group's `tasks` (itself, one thread), which the kernel
// does without the global lock whose RCU grace period made a `cgroup.procs` write wait 3 to 20 ms; cgroup v2 has no
// `tasks`, so there the shell writes its pid to `cgroup.procs`.
//
// `ulimit`'s units differ between shells (POSIX: 512-byte blocks for -f; KiB for -v in dash and bash; processes are
// -p in dash, -u in bash): they are measured once, by the probe that checks bwrap can start (`probeLimits`).
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/** The shell that sets the limits and becomes bwrap. */
export const SH = "/bin/sh"

/** What `/bin/sh`'s `ulimit` counts in, as measured here. */
export interface Units {
  /** Bytes per unit of `ulimit -f` (RLIMIT_FSIZE). */
  readonly fileBytes: number
  /** Bytes per unit of `ulimit -v` (RLIMIT_AS). */
  readonly memoryBytes: number
  /** The flag that sets RLIMIT_NPROC, if the shell has one. */
  readonly processes: "-p" | "-u" | undefined
}

/** A call's limits, in bytes, seconds and processes. */
export interface Limits {
  /** RLIMIT_CPU, unless each call sets its own (a long-lived sandbox's launcher must not run out of CPU time). */
  readonly cpuSeconds: number | undefined
  readonly memoryBytes: number
  readonly fileBytes: number
  /** RLIMIT_NPROC, when no pids cgroup holds the number of processes. */
  readonly processes: number | undefined
}

/** A pids cgroup made for one call, and the file the shell writes to join it. */
export interface Cgroup {
  readonly dir: string
  readonly join: "tasks" | "cgroup.procs"
}

/**
 * The shell script that joins `cgroup` (its folder is `$0`), sets `limits` and execs its arguments. Sizes are rounded
 * down to the shell's units: a limit is never looser than the policy's.
 */
export const prologue = (units: Units, limits: Limits, cgroup: Cgroup | undefined): string => {
  if (limits.processes !== undefined && units.processes === undefined) throw new Error(`no pids cgroup could be made for max_processes here, and ${SH}'s ulimit cannot set RLIMIT_NPROC: run where a pids cgroup can be made (root, cgroup v1's pids hierarchy or v2 with pids enabled), or make ${SH} dash or bash`)
  return [
    ...(cgroup === undefined ? [] : [cgroup.join === "tasks" ? "echo 0 > \"$0/tasks\"" : "echo $$ > \"$0/cgroup.procs\""]),
    ...(limits.cpuSeconds === undefined ? [] : [`ulimit -t ${limits.cpuSeconds}`]),
    `ulimit -v ${Math.floor(limits.memoryBytes / units.memoryBytes)}`,
    `ulimit -f ${Math.floor(limits.fileBytes / units.fileBytes)}`,
    "ulimit -c 0",
    ...(limits.processes === undefined ? [] : [`ulimit ${units.processes} ${limits.processes}`]),
    "exec \"$@\""
  ].join(" && ")
}

/** The values the probe sets, chosen so that any unit gives a limit a `cat` runs under. */
const PROBE = { cpu: 7, file: 5, memory: 4_194_304, processes: 100_003 }

/** The limits the probe's shell sets with `flag` for processes (its units are not known yet). */
const probeScript = (flag: "-p" | "-u" | undefined): string =>
  [`ulimit -t ${PROBE.cpu}`, `ulimit -v ${PROBE.memory}`, `ulimit -f ${PROBE.file}`, "ulimit -c 0", ...(flag === undefined ? [] : [`ulimit ${flag} ${PROBE.processes}`]), "exec \"$@\""].join(" && ")

const limitOf = (limits: string, name: string): number | undefined => {
  const found = new RegExp(`^Max ${name}\\s+(\\S+)\\s+(\\S+)`, "m").exec(limits)
  return found === null || found[1] !== found[2] ? undefined : Number(found[1])
}

/**
 * Measures `ulimit`'s units: `run(script)` runs `/bin/sh -c script` around a sandboxed `cat /proc/self/limits` and
 * returns its output, or undefined when it failed. Undefined when the limits do not hold inside (or cannot be read).
 */
export const probeLimits = (run: (script: string) => string | undefined): Units | undefined => {
  for (const flag of ["-p", "-u", undefined] as const) {
    const limits = run(probeScript(flag))
    if (limits === undefined) continue
    const file = limitOf(limits, "file size")
    const memory = limitOf(limits, "address space")
    if (limitOf(limits, "cpu time") !== PROBE.cpu || limitOf(limits, "core file size") !== 0) return undefined
    if (file === undefined || memory === undefined || file % PROBE.file !== 0 || memory % PROBE.memory !== 0) return undefined
    if (flag !== undefined && limitOf(limits, "processes") !== PROBE.processes) continue
    return { fileBytes: file / PROBE.file, memoryBytes: memory / PROBE.memory, processes: flag }
  }
  return undefined
}

/** The pids cgroup folders that can hold a child's processes: cgroup v1's pids hierarchy, or v2's with pids enabled. */
const PIDS_ROOTS = ["/sys/fs/cgroup/pids", "/sys/fs/cgroup"]

/** How old an empty call cgroup must be before another process removes it (one left by a caller that was killed). */
export const STALE_MS = 10 * 60_000
let swept = false

/**
 * Removes the empty call cgroups under `root` that callers killed before they could remove theirs left behind (older
 * than STALE_MS): once per process, at its first call. A cgroup with processes cannot be removed (EBUSY), and a new
 * one is never older than the moment its shell joins it.
 */
const sweep = (root: string): void => {
  if (swept) return
  swept = true
  let names: Array<string>
  try {
    names = fs.readdirSync(root)
  } catch {
    return
  }
  const now = Date.now()
  for (const name of names) {
    if (!name.startsWith("artana-sandbox-")) continue
    const dir = path.join(root, name)
    try {
      if (now - fs.statSync(dir).mtimeMs >= STALE_MS) fs.rmdirSync(dir)
    } catch {
      // in use (EBUSY), gone, or not this user's to remove
    }
  }
}

/** A pids cgroup of `max` processes for one call, when the host lets this process make one. */
export const pidsCgroup = (max: number): Cgroup | undefined => {
  for (const root of PIDS_ROOTS) {
    const v1 = fs.existsSync(path.join(root, "tasks"))
    if (!v1 && !fs.existsSync(path.join(root, "cgroup.procs"))) continue
    if (!v1) {
      let controllers = ""
      try {
        controllers = fs.readFileSync(path.join(root, "cgroup.subtree_control"), "utf8")
      } catch {
        continue
      }
      if (!controllers.split(/\s+/).includes("pids")) continue
    }
    sweep(root)
    const dir = path.join(root, `artana-sandbox-${randomUUID()}`)
    try {
      fs.mkdirSync(dir)
      fs.writeFileSync(path.join(dir, "pids.max"), String(max))
      return { dir, join: v1 ? "tasks" : "cgroup.procs" }
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

/** Removes an empty cgroup now: true when it is gone (or was), false while processes remain in it. */
export const rmdirNow = (dir: string): boolean => {
  try {
    fs.rmdirSync(dir)
    return true
  } catch (e) {
    return e instanceof Error && "code" in e && e.code === "ENOENT"
  }
}

/** Removes a call's cgroup once its processes are gone (they die with the sandbox's PID namespace). */
export const removeCgroup = (dir: string, tries = 50): void => {
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
