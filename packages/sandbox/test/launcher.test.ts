// shell.run's long-lived sandboxes (one per policy, a launcher inside receiving each call): what they promise beyond
// containment itself. Consecutive calls never see each other's processes or files; the launcher cannot be read or
// written by a command; a killed launcher is replaced; a timeout kills everything the call started; the sandboxes die
// with their owner and stop when the scope holding their policy closes. The host's processes are read with `ps`, and
// this file's sandboxes are told from others by the base folder their bwrap binds.
import { describe, expect, it } from "vitest"
import { Effect, Either, Layer } from "effect"
import { ToolRegistry } from "@artana/core"
import { type Policy, Sandbox } from "@artana/sandbox"
import { execFileSync, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { contained, context, tempFolder } from "./fixtures.js"

const base = tempFolder("launcher")
fs.mkdirSync(path.join(base, "workspace/out"), { recursive: true })

const policy = (over: Partial<Policy.ShellRule> = {}, baseDir = base): Policy.Policy => ({
  baseDir,
  document: {
    default: "deny",
    tools: {
      "shell.run": { allow: true, executables: ["sh", "true", "cat"], denied_tokens: [], timeout_ms: 20_000, max_output_bytes: 1_048_576, ...contained, ...over },
      "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1_048_576 },
      "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1_048_576 }
    }
  }
})

interface Ran {
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
}
const asRan = (u: unknown): Ran => {
  if (u === null || typeof u !== "object" || !("stdout" in u) || !("stderr" in u) || !("exitCode" in u)) throw new Error("not a run")
  const { exitCode, stdout, stderr } = u
  if (typeof stdout !== "string" || typeof stderr !== "string") throw new Error("not a run")
  return { exitCode: typeof exitCode === "number" ? exitCode : null, stdout, stderr }
}
const shellOf = (p: Policy.Policy) => Sandbox.tools(p).find((t) => t.name === "shell.run")!
const run = async (p: Policy.Policy, command: string, args: ReadonlyArray<string>): Promise<Either.Either<Ran, string>> => {
  const outcome = await Effect.runPromise(Effect.either(shellOf(p).invoke({ command, args }, context)))
  return Either.isRight(outcome) ? Either.right(asRan(outcome.right)) : Either.left(outcome.left.message)
}
const sh = async (script: string, p: Policy.Policy = policy()): Promise<Ran> => {
  const result = await run(p, "sh", ["-c", script])
  if (Either.isLeft(result)) throw new Error(result.left)
  return result.right
}

/** The host's processes: pid and command line. */
const processes = (): ReadonlyArray<{ readonly pid: number; readonly args: string }> =>
  execFileSync("ps", ["-e", "-o", "pid=,args="], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 }).split("\n").flatMap((line) => {
    const found = /^\s*(\d+)\s+(.*)$/.exec(line)
    return found === null ? [] : [{ pid: Number(found[1]), args: found[2]! }]
  })
/** The outer bwrap processes of the sandboxes bound to `folder` (one per sandbox: the launcher, its PID 1, is its child). */
const sandboxesOf = (folder: string): ReadonlyArray<number> => {
  const all = processes().filter((p) => /^\S*bwrap /.test(p.args) && p.args.includes(` --chdir ${folder} `))
  const pids = new Set(all.map((p) => p.pid))
  const parents = new Map(all.map((p) => [p.pid, Number(execFileSync("ps", ["-o", "ppid=", "-p", String(p.pid)], { encoding: "utf8" }).trim() || 0)]))
  return all.filter((p) => !pids.has(parents.get(p.pid) ?? 0)).map((p) => p.pid).sort()
}
const running = (mark: string) => processes().some((p) => p.args.trim() === `sleep ${mark}`)
const until = async (what: () => boolean) => {
  for (let i = 0; i < 200 && !what(); i++) await new Promise((resolve) => setTimeout(resolve, 100))
  return what()
}

describe("shell.run's long-lived sandbox", () => {
  it("runs consecutive calls in the same sandbox, and the second sees nothing the first left: no process, no file in /tmp, HOME or /dev/shm", async () => {
    const mark = `71.${process.pid}`
    await sh("true")
    const before = sandboxesOf(base)
    expect(before.length).toBeGreaterThan(0)
    // A clean call leaves the sandbox for the next one.
    await sh("true")
    expect(sandboxesOf(base)).toEqual(before)
    const first = await sh(`sleep ${mark} & setsid sleep ${mark} & echo x > /tmp/left; echo y > "$HOME/left"; echo z > /dev/shm/left; echo started`)
    expect(first.stdout).toBe("started\n")
    const second = await sh("ls -A /tmp \"$HOME\" /dev/shm; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
    expect(second.stdout).not.toContain("left")
    expect(second.stdout).not.toContain(mark)
    expect(await until(() => !running(mark))).toBe(true)
  }, 60_000)

  it("where fs.read binds the host's /dev/null (no device inside), what a call left is still killed and its sandbox kept", async () => {
    const own = tempFolder("launcher-devnull")
    fs.mkdirSync(path.join(own, "workspace/out"), { recursive: true })
    const p = policy({}, own)
    const devNull: Policy.Policy = { ...p, document: { ...p.document, tools: { ...p.document.tools, "fs.read": { allow: true, paths: ["workspace/**", "/dev/null"], deny_hidden: true, max_bytes: 1_048_576 } } } }
    const mark = `73.${process.pid}`
    await sh("true", devNull)
    const before = sandboxesOf(own)
    await sh(`setsid -f sleep ${mark}; echo started`, devNull)
    const after = await sh("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done", devNull)
    expect(after.stdout).not.toContain(mark)
    expect(sandboxesOf(own)).toEqual(before)
  }, 60_000)

  it("a call that leaves nothing behind keeps its sandbox; one that leaves a file gets the next call a new one", async () => {
    await sh("true")
    const kept = sandboxesOf(base)
    await sh("echo x > /tmp/left")
    await sh("true")
    const after = sandboxesOf(base)
    expect(after.length).toBeGreaterThan(0)
    expect(after.some((pid) => kept.includes(pid))).toBe(false)
  }, 60_000)

  it("the launcher's memory, fds and environment are closed to the commands it runs (it is not dumpable)", async () => {
    // (Its fd numbers can be listed: the folder belongs to root when a process is not dumpable, and the sandbox's user
    // is root mapped; opening them cannot.)
    const result = await sh([
      "cat /proc/$PPID/maps && echo READ-MAPS",
      "cat /proc/$PPID/environ && echo READ-ENVIRON",
      "readlink /proc/$PPID/fd/0 && echo READ-FD",
      "(exec 3</proc/$PPID/fd/0) && echo OPENED-CALLS",
      "(exec 3>/proc/$PPID/fd/5) && echo OPENED-REPORTS",
      "(exec 3>/proc/$PPID/mem) && echo OPENED-MEM",
      "echo parent=$PPID"
    ].join("; "))
    expect(result.stdout).toBe("parent=1\n")
    expect(result.stderr).toContain("Permission denied")
  }, 60_000)

  it("a killed launcher is replaced: the next call runs in a new sandbox", async () => {
    await sh("true")
    const [idle] = sandboxesOf(base)
    expect(idle).toBeDefined()
    process.kill(idle!, "SIGKILL")
    expect(await until(() => !sandboxesOf(base).includes(idle!))).toBe(true)
    expect(await sh("echo again")).toMatchObject({ exitCode: 0, stdout: "again\n" })
    // A command cannot kill or stop its launcher: it is the sandbox's PID 1, which takes no SIGKILL or SIGSTOP from inside.
    const [current] = sandboxesOf(base)
    expect(await sh("kill -9 $PPID; kill -STOP $PPID; echo survived")).toMatchObject({ exitCode: 0, stdout: "survived\n" })
    expect(await sh("echo after")).toMatchObject({ exitCode: 0, stdout: "after\n" })
    expect(sandboxesOf(base)).toEqual([current])
  }, 60_000)

  it("the timeout kills everything the call started, in its own group or not, and the next call runs", async () => {
    const mark = `72.${process.pid}`
    const p = policy({ timeout_ms: 1_500 })
    const result = await run(p, "sh", ["-c", `setsid sleep ${mark} & (trap '' TERM HUP; sleep ${mark}) & sleep ${mark}`])
    expect(Either.isLeft(result) ? result.left : "").toContain("timed out after 1500 ms")
    expect(await until(() => !running(mark))).toBe(true)
    expect(await sh("echo next", p)).toMatchObject({ exitCode: 0, stdout: "next\n" })
  }, 60_000)

  it("closing the scope that holds the policy (Sandbox.layer) stops its sandboxes: no process is left behind", async () => {
    const own = tempFolder("launcher-scope")
    fs.mkdirSync(path.join(own, "workspace/out"), { recursive: true })
    const p = policy({}, own)
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context_ = yield* Layer.build(Sandbox.layer(p))
      const registry = yield* Effect.provide(ToolRegistry.ToolRegistry, Layer.succeedContext(context_))
      const result = yield* registry.get("shell.run")!.invoke({ command: "sh", args: ["-c", "echo held"] }, context)
      expect(sandboxesOf(own).length).toBeGreaterThan(0)
      return asRan(result).stdout
    })))
    expect(out).toBe("held\n")
    expect(await until(() => sandboxesOf(own).length === 0)).toBe(true)
  }, 60_000)

  it("a process with many policies keeps at most eight idle sandboxes, the most recently used", async () => {
    const folders = Array.from({ length: 10 }, (_, i) => {
      const own = tempFolder(`launcher-many-${i}`)
      fs.mkdirSync(path.join(own, "workspace/out"), { recursive: true })
      return own
    })
    for (const own of folders) expect(await sh("true", policy({}, own))).toMatchObject({ exitCode: 0 })
    expect(await until(() => folders.flatMap(sandboxesOf).length <= 8)).toBe(true)
    expect(sandboxesOf(folders[9]!).length).toBe(1)
  }, 120_000)

  it("a caller that exits stops its idle sandbox and removes the sandbox's pids cgroup", async () => {
    const own = tempFolder("launcher-exit")
    fs.mkdirSync(path.join(own, "workspace/out"), { recursive: true })
    const script = `
      import { Effect } from "effect"
      import { Tenant } from "@artana/core"
      import { Sandbox } from "@artana/sandbox"
      import * as readline from "node:readline"
      const tool = Sandbox.tools(JSON.parse(process.argv[1])).find((t) => t.name === "shell.run")
      const tenant = Tenant.TenantContext.make({ tenantId: "t", capabilities: [], budgetUsdLimit: 1 })
      const lease = { expiresAt: () => Number.POSITIVE_INFINITY, signal: new AbortController().signal }
      await Effect.runPromise(tool.invoke({ command: "true", args: [] }, { runId: "r", tenant, idempotencyKey: "k", stepKey: "tool:0", fence: 1, signal: new AbortController().signal, lease }))
      console.log("called")
      readline.createInterface({ input: process.stdin }).once("line", () => process.exit(0))
    `
    const child = spawn("node", ["--input-type=module", "-e", script, JSON.stringify(policy({}, own))], {
      cwd: fileURLToPath(new URL("..", import.meta.url)), stdio: ["pipe", "pipe", "inherit"], env: { PATH: process.env.PATH }
    })
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d: Buffer) => d.toString().includes("called") && resolve())
        child.on("exit", () => reject(new Error("the caller ended before its call")))
      })
      const [sandbox] = sandboxesOf(own)
      expect(sandbox).toBeDefined()
      const line = fs.readFileSync(`/proc/${sandbox}/cgroup`, "utf8").split("\n").find((l) => /:pids:|^0::/.test(l))
      const cgroup = line === undefined ? undefined : path.join(line.startsWith("0::") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/pids", line.slice(line.lastIndexOf(":") + 1))
      const exited = new Promise((resolve) => child.once("exit", resolve))
      child.stdin.end("exit\n")
      await exited
      expect(sandboxesOf(own)).toEqual([])
      if (cgroup !== undefined && cgroup.includes("artana-sandbox-")) expect(fs.existsSync(cgroup)).toBe(false)
    } finally {
      child.kill("SIGKILL")
    }
  }, 90_000)

  it("a caller killed with SIGKILL takes its idle sandbox with it", async () => {
    const own = tempFolder("launcher-owner")
    fs.mkdirSync(path.join(own, "workspace/out"), { recursive: true })
    const script = `
      import { Effect } from "effect"
      import { Tenant } from "@artana/core"
      import { Sandbox } from "@artana/sandbox"
      const tool = Sandbox.tools(JSON.parse(process.argv[1])).find((t) => t.name === "shell.run")
      const tenant = Tenant.TenantContext.make({ tenantId: "t", capabilities: [], budgetUsdLimit: 1 })
      const lease = { expiresAt: () => Number.POSITIVE_INFINITY, signal: new AbortController().signal }
      await Effect.runPromise(tool.invoke({ command: "true", args: [] }, { runId: "r", tenant, idempotencyKey: "k", stepKey: "tool:0", fence: 1, signal: new AbortController().signal, lease }))
      console.log("called")
      setInterval(() => {}, 1000)
    `
    const child = spawn("node", ["--input-type=module", "-e", script, JSON.stringify(policy({}, own))], {
      cwd: fileURLToPath(new URL("..", import.meta.url)), stdio: ["ignore", "pipe", "inherit"], env: { PATH: process.env.PATH }
    })
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d: Buffer) => d.toString().includes("called") && resolve())
        child.on("exit", () => reject(new Error("the caller ended before its call")))
      })
      expect(sandboxesOf(own).length).toBeGreaterThan(0)
      child.kill("SIGKILL")
      expect(await until(() => sandboxesOf(own).length === 0)).toBe(true)
    } finally {
      child.kill("SIGKILL")
    }
  }, 90_000)

  it("PID 1 is the launcher, closed to commands: its memory cannot be opened, ptrace cannot attach, and the next call's output is its own", async () => {
    const attack = await sh([
      "head -c 17 /proc/1/cmdline; echo",
      "(exec 3<>/proc/1/mem) && echo OPENED-MEM",
      "(exec 3</proc/1/environ) && echo OPENED-ENVIRON",
      "python3 -c 'import ctypes, sys; sys.exit(0 if ctypes.CDLL(None).ptrace(16, 1, 0, 0) == 0 else 1)' && echo ATTACHED",
      "kill -9 1; kill -STOP 1",
      "sleep 100 &",
      "echo parent=$PPID",
      // The launcher has a CPU-time limit of its own: two calls' worth (timeout_ms 20 s).
      "grep 'Max cpu time' /proc/1/limits | tr -s ' '"
    ].join("\n"))
    expect(attack.stdout).toBe("/.artana-launcher\nparent=1\nMax cpu time 40 40 seconds \n")
    expect(await sh("sleep 1; echo real output")).toMatchObject({ exitCode: 0, stdout: "real output\n" })
  }, 60_000)

  it("what a command changes of its launcher (limits, priority, CPU mask, OOM score, autogroup) is not what the next call runs with", async () => {
    const state = "ulimit -f; ulimit -n; nice; grep Cpus_allowed_list /proc/self/status; cat /proc/self/oom_score_adj; read -r g n v < /proc/self/autogroup; echo $n $v; head -c 9999 /dev/zero > workspace/out/big; echo wrote $?"
    const baseline = await sh(state)
    expect(baseline.stdout).toContain("wrote 0\n")
    for (const attack of [
      "prlimit --pid $PPID --fsize=2048:2048",
      "renice -n 19 -p $PPID",
      "taskset -p 1 $PPID",
      "echo 1000 > /proc/$PPID/oom_score_adj",
      "echo 19 > /proc/$PPID/autogroup",
      // (last: on a launcher that does not see it, every later call fails)
      "prlimit --pid $PPID --nofile=12:12"
    ]) {
      await sh(`${attack} >/dev/null`)
      expect.soft({ attack, ...(await sh(state)) }).toEqual({ attack, ...baseline })
    }
    fs.rmSync(path.join(base, "workspace/out/big"))
  }, 120_000)

  it("what a call leaves that no file in /tmp shows (a key in the keyring, a deleted file kept by an fd in flight, the modes of /tmp and HOME) is not what the next call sees", async () => {
    const keyctl = (code: string) => `python3 -c "import ctypes, platform; add_key, keyctl = {'x86_64': (248, 250), 'aarch64': (217, 219)}[platform.machine()]; libc = ctypes.CDLL(None); ${code}"`
    const state = [
      // keyctl(KEYCTL_SEARCH, the user keyring, "user", "artana-key"): whether the key is there to read.
      keyctl("print('key', libc.syscall(keyctl, 10, -4, b'user', b'artana-key', 0) > 0)"),
      "stat -c %a /tmp \"$HOME\"",
      "df -k --output=used /tmp | tail -1"
    ].join("; ")
    const baseline = await sh(state)
    expect(baseline.stdout).toMatch(/^key False\n1777\n755\n\s*0\n$/)
    for (const attack of [
      keyctl("libc.syscall(add_key, b'user', b'artana-key', b'secret', 6, -4)"),
      // A 4 MiB file in /tmp, deleted, its fd sent with both ends of a socketpair into the socketpair: nothing names it.
      "python3 -c \"import os, socket; a, b = socket.socketpair(); f = os.open('/tmp/held', os.O_CREAT | os.O_WRONLY); os.write(f, b'x' * 4194304); os.unlink('/tmp/held'); socket.send_fds(a, [b'x'], [f, a.fileno(), b.fileno()])\"",
      "chmod 0750 \"$HOME\"",
      "chmod 1773 /tmp"
    ]) {
      await sh(attack)
      expect.soft({ attack, ...(await sh(state)) }).toEqual({ attack, ...baseline })
    }
  }, 120_000)

  it("a lock a call takes on its stdin (/dev/null) ends with the call: neither the host nor the next call finds /dev/null locked", async () => {
    const lock = (fd: string) => `python3 -c "import fcntl, sys; fcntl.flock(${fd}, fcntl.LOCK_EX | fcntl.LOCK_NB); print('locked')"`
    expect(await sh(lock("0"))).toMatchObject({ exitCode: 0, stdout: "locked\n" })
    expect(spawnSync("flock", ["-n", "/dev/null", "true"]).status).toBe(0)
    expect(await sh(lock("open('/dev/null')"))).toMatchObject({ exitCode: 0, stdout: "locked\n" })
  }, 60_000)

  it("file flags a call sets on its stdout and stderr (O_NONBLOCK, O_ASYNC) are not what the next call writes with", async () => {
    const flags = "python3 -c \"import fcntl, os; print([fcntl.fcntl(fd, fcntl.F_GETFL) & (os.O_NONBLOCK | 0o20000) for fd in (0, 1, 2)])\""
    const baseline = await sh(flags)
    expect(baseline.stdout).toBe("[0, 0, 0]\n")
    for (const fd of [1, 2]) {
      await sh(`python3 -c "import fcntl, os; fcntl.fcntl(${fd}, fcntl.F_SETFL, fcntl.fcntl(${fd}, fcntl.F_GETFL) | os.O_NONBLOCK | 0o20000)"`)
      expect.soft({ fd, ...(await sh(flags)) }).toEqual({ fd, ...baseline })
    }
    // A big output after them is whole.
    const big = await sh("head -c 900000 /dev/zero | tr '\\0' x")
    expect({ exitCode: big.exitCode, length: big.stdout.length, stderr: big.stderr }).toEqual({ exitCode: 0, length: 900_000, stderr: "" })
  }, 60_000)

  it("what a call changes of /tmp, HOME and /dev/shm that lists no file (times, extended attributes, a default ACL, modes, inodes) is not what the next call sees", async () => {
    const xattrs = "python3 -c \"import os; print([os.listxattr(p) for p in ('/tmp', os.environ['HOME'], '/dev/shm')])\""
    const state = `stat -c %Y /tmp "$HOME" | grep -c 1234567890; stat -c %a /tmp "$HOME" /dev/shm; ${xattrs}; df --output=iused /tmp /dev/shm | tail -2; touch "$HOME/new" && stat -c %a "$HOME/new"; rm -f "$HOME/new"`
    const baseline = await sh(state)
    expect(baseline).toMatchObject({ stderr: "", stdout: expect.stringMatching(/^0\n1777\n755\n1777\n\[\[\], \[\], \[\]\]\n\s*\d+\n\s*\d+\n644\n$/) })
    for (const attack of [
      "touch -d @1234567890 /tmp \"$HOME\"",
      "python3 -c \"import os; [os.setxattr(p, 'user.channel', b'1') for p in ('/tmp', os.environ['HOME'], '/dev/shm')]\"",
      // Extended attributes use inodes of the tmpfs, not blocks: 64 of 64 KiB on HOME.
      "python3 -c \"import os; [os.setxattr(os.environ['HOME'], 'user.x%d' % i, b'x' * 65000) for i in range(64)]; [os.removexattr(os.environ['HOME'], 'user.x%d' % i) for i in range(64)]\"",
      // A default ACL on HOME (u::--- g::--- o::---): HOME's mode stays 0755, the next call's new files would be mode 0.
      "python3 -c \"import os, struct; os.setxattr(os.environ['HOME'], 'system.posix_acl_default', struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, 0, 0xffffffff) for t in (1, 4, 32)))\"",
      "chmod 0 /dev/shm"
    ]) {
      expect.soft({ attack, ...(await sh(attack)) }).toMatchObject({ attack, exitCode: 0, stderr: "" })
      expect.soft({ attack, ...(await sh(state)) }).toEqual({ attack, ...baseline })
    }
  }, 120_000)

  it("an I/O class a call gives its launcher (ionice) is not what the next call runs with", async () => {
    const baseline = await sh("ionice -p $$")
    expect(baseline).toMatchObject({ exitCode: 0, stdout: "none: prio 0\n" })
    expect(await sh("ionice -c 3 -p $PPID && echo set")).toMatchObject({ exitCode: 0, stdout: "set\n" })
    expect(await sh("ionice -p $$")).toEqual(baseline)
  }, 60_000)

  it("an fd the host process inherited without close-on-exec does not reach the commands", async () => {
    const own = tempFolder("launcher-fds")
    fs.mkdirSync(path.join(own, "workspace/out"), { recursive: true })
    const secret = path.join(own, "secret")
    fs.writeFileSync(secret, "host secret\n")
    const script = `
      import { Effect } from "effect"
      import { Tenant } from "@artana/core"
      import { Sandbox } from "@artana/sandbox"
      import * as fs from "node:fs"
      const tool = Sandbox.tools(JSON.parse(process.argv[1])).find((t) => t.name === "shell.run")
      const tenant = Tenant.TenantContext.make({ tenantId: "t", capabilities: [], budgetUsdLimit: 1 })
      const lease = { expiresAt: () => Number.POSITIVE_INFINITY, signal: new AbortController().signal }
      const held = fs.readlinkSync("/proc/self/fd/40") + " " + fs.readFileSync("/proc/self/fdinfo/40", "utf8").split("\\n")[1]
      const result = await Effect.runPromise(tool.invoke({ command: "sh", args: ["-c", "cat /proc/self/fd/40 2>&-; for f in /proc/self/fd/*; do echo \${f##*/}; done | sort -n | tr '\\\\n' ' '"] }, { runId: "r", tenant, idempotencyKey: "k", stepKey: "tool:0", fence: 1, signal: new AbortController().signal, lease }))
      console.log(JSON.stringify({ held, stdout: result.stdout }))
    `
    // The caller's fd 40 is the secret file, without close-on-exec (as a harness's fd would be; Node marks low fds).
    const child = spawnSync("bash", ["-c", "exec 40<\"$0\" && exec node --input-type=module -e \"$1\" \"$2\"", secret, script, JSON.stringify(policy({}, own))], {
      cwd: fileURLToPath(new URL("..", import.meta.url)), stdio: ["ignore", "pipe", "inherit"], env: { PATH: process.env.PATH }, encoding: "utf8", timeout: 60_000
    })
    // The command's own: stdin, stdout, stderr, the launcher's output fds 3 and 4 (its stdout and stderr again), and 5: the
    // folder the shell lists.
    expect(JSON.parse(child.stdout)).toEqual({ held: `${secret} flags:\t0100000`, stdout: "0 1 2 3 4 5 " })
  }, 90_000)
})
