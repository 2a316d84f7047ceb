// shell.run's long-lived sandboxes. A policy's commands run in a bubblewrap sandbox built from the policy exactly as
// before (contain.ts), started once and kept: inside it, a launcher (a POSIX shell: launcherScript) receives each call
// on its stdin, runs the command in a subshell with the call's limits, and once the command has exited kills every
// other process of the sandbox, checks that nothing of the call is left, and reports the exit status. A call so pays
// for a fork and an exec inside a sandbox that is already set up, not for bwrap's namespaces, mounts, pivot_root and
// teardown.
//
// What calls could share, and why they do not:
// - processes: after each call, `kill -9 -1` (every process of the sandbox's PID namespace but the launcher, its PID 1)
//   and a `( : )` whose wait reaps the orphans, until /proc shows no other; if some survive, the launcher exits.
// - files: /tmp (the home is /tmp/home) and /dev/shm, /dev/mqueue must be as the sandbox started (an empty home,
//   nothing else), and System V IPC objects and unix sockets (fds in flight) none; /dev is read-only. The modes of
//   /tmp and HOME and /tmp's free space, which builtins cannot read, the host checks (pristine.ts), with the change
//   times and free inodes it recorded when the launcher was ready. Anything left:
//   the launcher reports the call, then exits, and the next call gets a new sandbox. Files written in fs.write's
//   paths stay, as they always did.
// - the launcher itself: it runs as the commands' user, so it is a copy of /bin/sh that is execute-only
//   (`--perms 0111 --file`): the kernel marks a process exec'd from a file it cannot read not dumpable, and a command
//   can then neither ptrace it nor open its /proc/PID/mem, fds or environment (without Yama, a parent is otherwise
//   writable by its children). It is the sandbox's PID 1 (`--as-pid-1`: bwrap's own init was dumpable, so a command
//   could write code into it that outlived the reset), which takes no SIGKILL or SIGSTOP from inside.
// - the launcher's state: what a process of the same user may change of it (limits, nice value and policy, CPU and
//   node masks, oom_score_adj, autogroup, coredump_filter) and the keys it sees (/proc/keys) are recorded at its start
//   and compared after each call (`state`); a difference gets the next call a new sandbox.
// - the outputs: stdout and stderr are pipes of the sandbox; a call's output ends at a 128-bit marker the launcher
//   writes after the command and all its processes are gone, which no command can know.
// - limits: memory, file size and core files are set before bwrap and held by everything inside; CPU time per call by
//   the subshell, and the launcher's own (LAUNCHER_CPU_CALLS calls' worth) before bwrap; the pids cgroup (or RLIMIT_NPROC) counts the command's processes and the launcher.
// What is shared: the namespaces themselves (the same hostname, an unused loopback, the same user namespace) and the
// writable paths, all within what the policy already gives every call, the host process's own session keyring if
// it has one (a key added there is seen by the reset, but stays), and the socket options of the stdout and stderr
// sockets (SO_SNDTIMEO, SO_SNDBUF: no file shows them; their file flags are compared).
//
// One call at a time per sandbox: a policy keeps its idle sandboxes (at most IDLE_MAX, and IDLE_TOTAL_MAX for all
// policies: the least recently used go) and starts another when all are busy. A sandbox is replaced when the policy's sandbox would now be built differently (the folders are walked again
// at each call: a hidden file appeared, a finer glob matches a new file), when it died (killed, crashed: the next call
// starts a new one), and after a timeout, an output cap or an interrupted call (the whole sandbox is killed, as one
// call's process group was). Idle sandboxes do not keep the process alive, die with it (--die-with-parent, an exit
// hook), and are stopped when the last scope holding their policy closes (`hold`: Sandbox.layer's finalizer).
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import type { Readable, Writable } from "node:stream"
import type { ShellRule } from "../Policy.js"
import { type Availability, type Contained, LAUNCHER_FD, LAUNCHER_PATH, SANDBOX_HOME, type Spec, startCommand } from "./contain.js"
import { SH } from "./limits.js"
import { differs } from "./mounts.js"
import { type Baseline, launcherPid, pristine, record } from "./pristine.js"

export interface RunResult {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
}

export type RunOutcome =
  | { readonly _tag: "ok"; readonly result: RunResult }
  | { readonly _tag: "error"; readonly reason: string; readonly partial: RunResult }

/** How many idle sandboxes a policy keeps, and all policies together (the least recently used go first). */
const IDLE_MAX = 2
const IDLE_TOTAL_MAX = 8

/** The arguments each of bwrap's options takes (those the policy's sandbox uses). */
const ARITY: Readonly<Record<string, number>> = {
  "--bind": 2, "--ro-bind": 2, "--ro-bind-try": 2, "--dev-bind": 2, "--symlink": 2, "--file": 2,
  "--tmpfs": 1, "--dir": 1, "--proc": 1, "--dev": 1, "--mqueue": 1, "--remount-ro": 1, "--chdir": 1, "--size": 1,
  "--perms": 1, "--cap-drop": 1
}
const MADE = new Set(["--bind", "--ro-bind", "--ro-bind-try", "--dev-bind", "--symlink", "--file", "--tmpfs", "--dir"])

/** What bwrap puts in the sandbox's /tmp (binds, folders, links): the launcher does not look inside them. */
export const madeUnderTmp = (bwrap: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (let i = 0; i < bwrap.length; i++) {
    const arity = ARITY[bwrap[i]!] ?? 0
    const target = bwrap[i + arity]
    if (MADE.has(bwrap[i]!) && target !== undefined && target.startsWith("/tmp/")) out.push(target)
    i += arity
  }
  return out
}

/** Where bwrap mounts something under /tmp (a bind, a tmpfs, a file): what is below is not /tmp's tmpfs. */
const MOUNTS = new Set(["--bind", "--ro-bind", "--ro-bind-try", "--dev-bind", "--file", "--tmpfs"])

/**
 * The folders bwrap made on /tmp's own tmpfs (its `--dir`s, and the parents it made for its mounts), whose change time
 * pristine.ts compares: neither a mount nor anything under one (a bound host folder changes with the host).
 */
export const foldersOnTmp = (bwrap: ReadonlyArray<string>): ReadonlyArray<string> => {
  const mounts: Array<string> = []
  const made = new Set<string>()
  for (let i = 0; i < bwrap.length; i++) {
    const arity = ARITY[bwrap[i]!] ?? 0
    const target = bwrap[i + arity]
    if (MADE.has(bwrap[i]!) && target !== undefined && target.startsWith("/tmp/")) {
      if (MOUNTS.has(bwrap[i]!)) mounts.push(target)
      if (bwrap[i] === "--dir") made.add(target)
      for (let at = target.lastIndexOf("/"); at > "/tmp".length; at = target.lastIndexOf("/", at - 1)) made.add(target.slice(0, at))
    }
    i += arity
  }
  return [...made].filter((f) => f !== SANDBOX_HOME && !mounts.some((m) => f === m || f.startsWith(`${m}/`))).sort()
}

/** Clock ticks per second in /proc/PID/stat's CPU times (USER_HZ: 100 on every Linux architecture Node runs on). */
const USER_HZ = 100

/**
 * The launcher: a loop of shell builtins. At its start it lists what bwrap made in /tmp (`made`: its binds are not
 * looked into). It reads a call (a line count, that many lines of script, the call's token), runs the script (the
 * command in a subshell), resets the sandbox, and writes the token at the end of stdout (fd 3) and stderr (fd 4) and
 * `token status reset` on fd 5. A reset that finds something left exits the launcher after the report. fd 6 is the
 * host's /dev/null, the commands' stdin. `state` reads what a command could change of the launcher (its lines of
 * /proc/keys without their usage count and expiry, which change by themselves; the file flags of its fds, which a
 * command shares on its stdout and stderr: O_NONBLOCK there would cut the next call's output). `mark` writes the token,
 * again while the write fails (a full pipe that a command made non-blocking, the sandbox then replaced).
 */
const launcherScript = (made: ReadonlyArray<string>, cpuSeconds: number): string => `
exec ${LAUNCHER_FD}<&-
trap '' HUP INT QUIT PIPE TERM USR1 USR2 ALRM TSTP TTIN TTOU
made=${quote(["", SANDBOX_HOME, ...made, ""].join("\n"))}
empty() { for f; do if [ -e "$f" ] || [ -L "$f" ]; then return 1; fi; done; return 0; }
alone() { for p in /proc/[0-9]*; do case "$p" in /proc/1|/proc/$$) ;; *) return 1;; esac; done; return 0; }
walk() {
  local f
  for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    if [ ! -e "$f" ] && [ ! -L "$f" ]; then continue; fi
    w="$w$f
"
    case "$made" in *"
$f
"*) continue;; esac
    if [ -d "$f" ] && [ ! -L "$f" ]; then walk "$f"; fi
  done
}
w=; walk /tmp; tmp0="$w"
lines() { sv=; [ -r "$1" ] || return 0; while IFS= read -r sl; do sv="$sv$sl
"; done < "$1"; }
state() {
  lines /proc/self/limits; st="$sv"
  read -r sl < /proc/self/stat; set -- \${sl##*) }
  st="$st \${16} \${17} \${38} \${39}"; cpu=$((\${12} + \${13}))
  while IFS= read -r sl; do case "$sl" in Cpus_allowed*|Mems_allowed*) st="$st $sl";; esac; done < /proc/self/status
  for f in oom_score_adj autogroup coredump_filter; do lines /proc/self/$f; st="$st $sv"; done
  [ ! -r /proc/keys ] || while read -r sl sk su su sr; do st="$st
$sl $sk $sr"; done < /proc/keys
  for f in 0 3 4 5 6; do while read -r sl sk; do [ "$sl" != flags: ] || st="$st $f:$sk"; done < /proc/self/fdinfo/$f; done
}
state; st0="$st"
echo ready >&5
reset() {
  k=0
  until alone; do
    k=$((k+1)); [ "$k" -le 2000 ] || return 1
    kill -9 -1 2>&-
    ( : ) 0<&- 3>&- 4>&- 5>&- 6<&-
    [ "$k" -le 50 ] || sleep 0.001 0<&- 3>&- 4>&- 5>&- 6<&-
  done
  [ -d ${SANDBOX_HOME} ] && [ ! -L ${SANDBOX_HOME} ] && [ -r ${SANDBOX_HOME} ] && [ -w ${SANDBOX_HOME} ] && [ -x ${SANDBOX_HOME} ] || return 2
  [ -d /tmp ] && [ ! -L /tmp ] && [ -w /tmp ] && [ -k /tmp ] || return 2
  w=; walk /tmp; [ "$w" = "$tmp0" ] || return 2
  empty ${SANDBOX_HOME}/* ${SANDBOX_HOME}/.[!.]* ${SANDBOX_HOME}/..?* || return 2
  empty /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?* /dev/mqueue/* /dev/mqueue/.[!.]* /dev/mqueue/..?* || return 3
  for f in sysvipc/shm sysvipc/sem sysvipc/msg net/unix; do x=; { read -r h; read -r x; } < /proc/$f; [ -z "$x" ] || return 4; done
  state; [ "$st" = "$st0" ] || return 5
  [ "$cpu" -le ${cpuSeconds * USER_HZ} ] || return 6
  return 0
}
mark() {
  k=0
  until printf %s "$t" 2>&- >&$1; do
    k=$((k+1)); [ "$k" -le 1000 ] || return 1
    sleep 0.01 0<&- 3>&- 4>&- 5>&- 6<&-
  done
}
while IFS= read -r n; do
  s=; i=0
  while [ "$i" -lt "$n" ]; do IFS= read -r l || exit 0; s="$s$l
"; i=$((i+1)); done
  IFS= read -r t || exit 0
  eval "$s"
  c=$?
  kill -9 -1 2>&-
  reset; r=$?
  mark 3; mark 4; echo "$t $c $r" >&5
  [ "$r" = 0 ] || exit 0
done
`

/** A word as the shell reads it back exactly: single-quoted (argv and environment values never hold a NUL). */
const quote = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`

/**
 * The script of a call: in a subshell (the launcher keeps its own state), the CPU time limit and the environment the
 * command adds to the sandbox's (PWD stays as bwrap set it: the working directory), then the command, with stdin from
 * the host's /dev/null (fd 6: a /dev/null bound in by the policy is no device inside), opened anew through
 * /proc/self/fd/6 (a file of the call's own: a lock or flags a command sets on it end with the call), stdout and stderr
 * on fds 3 and 4, and neither the launcher's calls (fd 0) nor its reports (fd 5); its I/O class is reset (ioClass). A
 * command killed by a signal reports 128 + its number, as bwrap itself did.
 */
export const callScript = (cpuSeconds: number, extraEnv: Readonly<Record<string, string>>, argv: ReadonlyArray<string>): string =>
  `( ulimit -t ${cpuSeconds} && ${Object.entries(extraEnv).map(([k, v]) => `export ${k}=${quote(v)} && `).join("")}exec ${ioClass()}${argv.map(quote).join(" ")} </proc/self/fd/6 >&3 2>&4 5>&- 6<&- )`

/** util-linux's ionice, which the sandbox has under its read-only /usr. */
const IONICE = "/usr/bin/ionice"
let ionice: boolean | undefined
/**
 * What resets the command's I/O class, which it would otherwise inherit from the launcher (a command may set the
 * launcher's with `ionice -p 1`, and /proc shows it nowhere): the command is exec'd through `ionice -c 0` (class none,
 * as a new process has), when the host has util-linux's ionice.
 */
const ioClass = (): string => {
  ionice ??= fs.existsSync(IONICE)
  return ionice ? `${IONICE} -c 0 -- ` : ""
}

/** The host's /dev/null, opened once, given to every sandbox as its fd 6. */
let devNull: number | undefined
const devNullFd = (): number => (devNull ??= fs.openSync("/dev/null", "r"))

/** A started sandbox and its launcher. */
interface Launcher {
  readonly key: string
  readonly child: ChildProcess
  readonly contained: Contained
  exited: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined
  /** Whether its pipes are closed too (all it wrote has been read). */
  closed: boolean
  /** When it last finished a call (ms since the epoch). */
  usedAt: number
  /** The launcher's host pid, once read (pristine.ts looks into its sandbox through it). */
  inside: number | undefined
  /** The folders on /tmp's tmpfs that bwrap made (foldersOnTmp), and what they were when the launcher was ready. */
  readonly folders: ReadonlyArray<string>
  baseline: Baseline | undefined
  /** Whether the launcher wrote its ready line (it then waits for its first call). */
  ready: boolean
  /** bwrap's and the launcher's own messages (a bind bwrap could not make), kept for a call whose command never ran. */
  readonly messages: Array<Buffer>
}

const MESSAGES_CAP = 65_536

const pipeAt = (child: ChildProcess, fd: number): Readable | Writable | null => child.stdio[fd] ?? null

/** Whether a launcher keeps the event loop alive: while it runs a call, not while it waits for one. */
const setRef = (child: ChildProcess, ref: boolean): void => {
  if (ref) child.ref()
  else child.unref()
  for (const fd of [0, 2, 3, 4, 5]) {
    const stream = pipeAt(child, fd)
    if (stream !== null && "ref" in stream && typeof stream.ref === "function" && "unref" in stream && typeof stream.unref === "function") {
      if (ref) stream.ref()
      else stream.unref()
    }
  }
}

const everyLauncher = new Set<Launcher>()
let exitHook = false

/** Kills a sandbox: its outer process's group, and with bwrap its PID namespace. */
const stop = (launcher: Launcher): void => {
  const pid = launcher.child.pid
  if (pid === undefined || launcher.exited !== undefined) return
  try {
    process.kill(-pid, "SIGKILL")
  } catch {
    launcher.child.kill("SIGKILL")
  }
}

const spawnLauncher = (contained: Contained, spec: Spec, env: NodeJS.ProcessEnv, shellFd: number): ChildProcess =>
  spawn(contained.file, [...contained.args], {
    cwd: spec.cwd,
    env,
    // fds 3, 4, 5: the commands' stdout and stderr, the launcher's reports; 6: /dev/null; LAUNCHER_FD: /bin/sh.
    stdio: ["pipe", "ignore", "pipe", "pipe", "pipe", "pipe", devNullFd(), ...Array.from({ length: LAUNCHER_FD - 7 }, () => "ignore" as const), shellFd],
    detached: true,
    shell: false,
    windowsHide: true
  })

/** How long a process that ends waits for its sandboxes to go, to remove their cgroups (else the next one's sweep does). */
const EXIT_WAIT_MS = 1_000

/** At exit: kills every sandbox, and removes their cgroups as their processes go, for at most EXIT_WAIT_MS. */
const stopAll = (): void => {
  for (const launcher of everyLauncher) stop(launcher)
  let left = [...everyLauncher]
  const until = Date.now() + EXIT_WAIT_MS
  const pause = new Int32Array(new SharedArrayBuffer(4))
  while (left.length > 0) {
    left = left.filter((launcher) => !launcher.contained.cleanupNow())
    if (left.length === 0 || Date.now() >= until) break
    Atomics.wait(pause, 0, 0, 5)
  }
}

/** Starts `spec`'s sandbox and its launcher. Throws `Error` when its limits cannot be set here. */
const start = (tools: Extract<Availability, { ok: true }>, spec: Spec, env: NodeJS.ProcessEnv): Launcher => {
  const contained = startCommand(tools, spec, [LAUNCHER_PATH, "-c", launcherScript(madeUnderTmp(spec.bwrap), spec.limits.cpuSeconds)])
  // bwrap copies the launcher from this fd to its end: a file of its own for each sandbox (an offset is shared).
  const shellFd = fs.openSync(fs.realpathSync(SH), "r")
  let child: ChildProcess
  try {
    child = spawnLauncher(contained, spec, env, shellFd)
  } finally {
    fs.closeSync(shellFd)
  }
  const launcher: Launcher = { key: spec.key, child, contained, exited: undefined, closed: false, usedAt: Date.now(), inside: undefined, folders: foldersOnTmp(spec.bwrap), baseline: undefined, ready: false, messages: [] }
  everyLauncher.add(launcher)
  if (!exitHook) {
    exitHook = true
    process.once("exit", stopAll)
  }
  let kept = 0
  pipeAt(child, 2)?.on("data", (chunk: Buffer) => {
    if (kept < MESSAGES_CAP) launcher.messages.push(chunk)
    kept += chunk.length
  })
  // A launcher that died wrote its call to a closed pipe: the call reports how it ended.
  pipeAt(child, 0)?.on("error", () => {})
  child.on("error", () => {
    launcher.exited ??= { code: null, signal: null }
  })
  child.on("exit", (code, signal) => {
    launcher.exited = { code, signal }
  })
  child.on("close", () => {
    launcher.closed = true
    everyLauncher.delete(launcher)
    contained.cleanup()
  })
  setRef(child, false)
  return launcher
}

/** Each policy's idle sandboxes, and how many scopes hold the policy. */
interface Slot {
  idle: Array<Launcher>
  holds: number
}
const slots = new Map<string, Slot>()

const slotOf = (policyKey: string): Slot => {
  let slot = slots.get(policyKey)
  if (slot === undefined) {
    slot = { idle: [], holds: 0 }
    slots.set(policyKey, slot)
  }
  return slot
}

/**
 * Holds a policy's sandboxes until the returned release is called (once per hold); when the last hold is released,
 * its idle sandboxes are stopped, and a busy one when its call ends. Calls under a policy nobody holds keep theirs
 * until the process ends.
 */
export const hold = (policyKey: string): (() => void) => {
  const slot = slotOf(policyKey)
  slot.holds++
  let released = false
  return () => {
    if (released) return
    released = true
    slot.holds--
    if (slot.holds > 0) return
    for (const launcher of slot.idle) stop(launcher)
    slot.idle = []
    if (slots.get(policyKey) === slot) slots.delete(policyKey)
  }
}

/** What a call runs and under which rule. */
export interface Call {
  readonly policyKey: string
  readonly spec: Spec
  /** The environment every command of the policy gets (the sandbox's own). */
  readonly env: NodeJS.ProcessEnv
  /** What this command adds to it (git's variables). */
  readonly extraEnv: Readonly<Record<string, string>>
  readonly argv: ReadonlyArray<string>
  readonly rule: ShellRule
}

/**
 * Whether an idle launcher's sandbox still runs: its exit not seen yet, and (it may have been killed since the event
 * loop last ran) its outer process neither a zombie nor gone.
 */
const alive = (launcher: Launcher): boolean => {
  if (launcher.exited !== undefined || launcher.child.pid === undefined) return false
  try {
    const stat = fs.readFileSync(`/proc/${launcher.child.pid}/stat`, "utf8")
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2))
  } catch {
    return false
  }
}

/** The policy's idle sandbox for this spec, or a new one; stale or dead idle ones are stopped. */
const take = (tools: Extract<Availability, { ok: true }>, slot: Slot, call: Call): Launcher => {
  let found: Launcher | undefined
  const kept: Array<Launcher> = []
  for (const launcher of slot.idle) {
    const usable = launcher.key === call.spec.key && alive(launcher)
    if (found === undefined && usable) found = launcher
    else if (usable) kept.push(launcher)
    else stop(launcher)
  }
  slot.idle = kept
  return found ?? start(tools, call.spec, call.env)
}

/**
 * Runs a call in one of the policy's sandboxes (a new one when none is idle, or the idle ones are stale or dead). The
 * timeout, the output cap and `signal` kill the sandbox, and with its PID namespace every process in it.
 */
export const runContained = async (tools: Extract<Availability, { ok: true }>, call: Call, signal?: AbortSignal): Promise<RunOutcome> => {
  const slot = slotOf(call.policyKey)
  let launcher: Launcher
  try {
    launcher = take(tools, slot, call)
  } catch (e) {
    return { _tag: "error", reason: e instanceof Error ? e.message : String(e), partial: { exitCode: null, signal: null, stdout: "", stderr: "" } }
  }
  const outcome = await converse(launcher, call, signal)
  const current = slots.get(call.policyKey)
  if (launcher.exited === undefined && outcome.reusable && untouched(launcher) && current !== undefined && current.idle.length < IDLE_MAX) {
    launcher.usedAt = Date.now()
    current.idle.push(launcher)
    trimIdle()
  } else {
    stop(launcher)
  }
  return outcome.outcome
}

/** Whether what the launcher cannot check itself is as bwrap made it (pristine.ts). */
const untouched = (launcher: Launcher): boolean => {
  const outer = launcher.child.pid
  launcher.inside ??= outer === undefined ? undefined : launcherPid(outer)
  return launcher.inside !== undefined && launcher.baseline !== undefined && pristine(launcher.inside, launcher.folders, launcher.baseline)
}

/** Stops the least recently used idle sandboxes beyond IDLE_TOTAL_MAX (a host with many policies keeps a few). */
const trimIdle = (): void => {
  // Each slot's idle list is in the order its sandboxes were last used: the first of some slot is the oldest.
  let total = [...slots.values()].reduce((n, slot) => n + slot.idle.length, 0)
  while (total > IDLE_TOTAL_MAX) {
    let oldest: Slot | undefined
    for (const slot of slots.values()) {
      const first = slot.idle[0]
      if (first !== undefined && (oldest === undefined || first.usedAt < oldest.idle[0]!.usedAt)) oldest = slot
    }
    const launcher = oldest?.idle.shift()
    if (launcher === undefined) return
    stop(launcher)
    total--
  }
}

/** One output stream of a call: its bytes up to the call's end marker. */
interface Collected {
  buffer: Buffer
  ended: boolean
}

/** Hands the launcher its call and collects the command's output and exit status. */
const converse = (launcher: Launcher, call: Call, signal?: AbortSignal): Promise<{ readonly outcome: RunOutcome; readonly reusable: boolean }> =>
  new Promise((resolve) => {
    const { child } = launcher
    const { rule } = call
    // bwrap's and the launcher's messages from here on (a new sandbox's setup, or this call's end) are this call's.
    const messagesFrom = launcher.messages.length
    const token = randomBytes(16).toString("hex")
    const marker = Buffer.from(token)
    setRef(child, true)
    const out: Collected = { buffer: Buffer.alloc(0), ended: false }
    const err: Collected = { buffer: Buffer.alloc(0), ended: false }
    let status = ""
    let reported: { readonly code: number; readonly clean: boolean } | undefined
    let killed: string | undefined
    const kill = (why: string) => {
      if (killed !== undefined) return
      killed = why
      stop(launcher)
    }
    const size = () => out.buffer.length + err.buffer.length
    const collect = (into: Collected) => (chunk: Buffer) => {
      if (into.ended) return
      const from = Math.max(0, into.buffer.length - marker.length)
      into.buffer = Buffer.concat([into.buffer, chunk])
      const at = into.buffer.indexOf(marker, from)
      if (at !== -1) {
        into.buffer = into.buffer.subarray(0, at)
        into.ended = true
      }
      if (size() > rule.max_output_bytes) {
        const over = size() - rule.max_output_bytes
        into.buffer = into.buffer.subarray(0, Math.max(0, into.buffer.length - over))
        kill(`the output is over max_output_bytes (${rule.max_output_bytes}); the process group was killed`)
      }
      finish()
    }
    const onStatus = (chunk: Buffer) => {
      status += chunk.toString("utf8")
      if (!launcher.ready) {
        if (!status.startsWith("ready\n")) return
        status = status.slice("ready\n".length)
        launcher.ready = true
        send()
      }
      const line = new RegExp(`^${token} (\\d+) (\\d+)\\n`).exec(status)
      if (line !== null) reported = { code: Number(line[1]), clean: line[2] === "0" }
      finish()
    }
    const streams: ReadonlyArray<readonly [number, (chunk: Buffer) => void]> = [[3, collect(out)], [4, collect(err)], [5, onStatus]]
    let done = false
    function finish(): void {
      const complete = reported !== undefined && out.ended && err.ended
      if (done || !(complete || launcher.closed)) return
      done = true
      clearTimeout(timer)
      signal?.removeEventListener("abort", onAbort)
      for (const [fd, listener] of streams) pipeAt(child, fd)?.off("data", listener)
      child.off("close", finish)
      setRef(child, false)
      const stdout = out.buffer.toString("utf8")
      const stderr = err.buffer.toString("utf8")
      const result: RunResult = complete && reported !== undefined
        ? { exitCode: reported.code, signal: null, stdout, stderr }
        : {
          // The command never reported: the sandbox ended first (it could not be set up, or it was killed).
          exitCode: launcher.exited?.code ?? null,
          signal: launcher.exited?.signal ?? null,
          stdout,
          stderr: stderr + Buffer.concat(launcher.messages.slice(messagesFrom)).toString("utf8")
        }
      resolve({
        outcome: killed === undefined ? { _tag: "ok", result } : { _tag: "error", reason: killed, partial: result },
        reusable: killed === undefined && complete && reported !== undefined && reported.clean
      })
    }
    for (const [fd, listener] of streams) pipeAt(child, fd)?.on("data", listener)
    // A sandbox that ends without reporting: once its pipes are closed, all it wrote has been read.
    child.on("close", finish)
    const timer = setTimeout(() => kill(`timed out after ${rule.timeout_ms} ms (timeout_ms); the process group was killed`), rule.timeout_ms)
    const onAbort = () => kill("interrupted; the process group was killed")
    if (signal?.aborted === true) onAbort()
    signal?.addEventListener("abort", onAbort, { once: true })
    if (launcher.closed) return finish()
    if (launcher.ready) send()
    // A new sandbox: its first call is written once the launcher is ready and the host recorded its folders.
    function send(): void {
      if (launcher.baseline === undefined) {
        const outer = child.pid
        launcher.inside ??= outer === undefined ? undefined : launcherPid(outer)
        // A new sandbox runs nothing before its mounts are checked (mounts.ts): a folder swapped for a link while
        // bwrap built it would have bound the link's target.
        const inside = launcher.inside
        const wrong = inside === undefined ? "its launcher could not be found" : differs(inside, call.spec.mounts)
        if (inside === undefined || wrong !== undefined) {
          return kill(`the sandbox was not built as its policy says (${wrong}): a folder it binds changed while it was being built; it was stopped before running anything`)
        }
        launcher.baseline = record(inside, launcher.folders)
      }
      const script = callScript(call.spec.limits.cpuSeconds, call.extraEnv, call.argv)
      const stdin = pipeAt(child, 0)
      if (stdin !== null && "write" in stdin) stdin.write(`${script.split("\n").length}\n${script}\n${token}\n`)
    }
  })
