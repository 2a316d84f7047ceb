// shell.run inside bubblewrap, with real programs that argument rules cannot judge (node -e, python3 -c, sh -c, git's
// hooks): each tries to read a marker outside fs.read's paths, write outside fs.write's, open a planted ~/.ssh/id_rsa,
// connect to a listener on 127.0.0.1, fork without end, fill the disk. Each fails inside the sandbox, and the markers
// prove nothing was read, written or connected. The paths are hex-encoded in the programs: no argument names them.
import { describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { Audit, type Policy, Sandbox } from "@artana/sandbox"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { contained, context, tempFolder } from "./fixtures.js"

const base = tempFolder("contain")
const outside = tempFolder("contain-out")
const fakeHome = tempFolder("contain-home")
fs.mkdirSync(path.join(base, "workspace/out"), { recursive: true })
fs.writeFileSync(path.join(base, "workspace/notes.txt"), "notes\n")
fs.writeFileSync(path.join(base, "workspace/.env"), "SECRET=in-workspace\n")
fs.writeFileSync(path.join(base, "secret.txt"), "SECRET=next-to-policy\n")
fs.writeFileSync(path.join(outside, "marker.txt"), "SECRET=outside\n")
fs.mkdirSync(path.join(fakeHome, ".ssh"))
fs.writeFileSync(path.join(fakeHome, ".ssh/id_rsa"), "-----BEGIN FAKE KEY-----\n")

const hasPython = fs.existsSync("/usr/bin/python3")

const rule = (over: Partial<Policy.ShellRule> = {}): Policy.ShellRule => ({
  allow: true,
  executables: ["node", "python3", "sh", "git", "cat", "true"],
  denied_tokens: [],
  timeout_ms: 20_000,
  max_output_bytes: 1_048_576,
  ...contained,
  ...over
})
const policy = (over: Partial<Policy.ShellRule> = {}): Policy.Policy => ({
  baseDir: base,
  document: {
    default: "deny",
    tools: {
      "shell.run": rule(over),
      "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1_048_576 },
      "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1_048_576 }
    }
  }
})

interface Ran {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
}

const run = async (command: string, args: ReadonlyArray<string>, over: Partial<Policy.ShellRule> = {}): Promise<Either.Either<Ran, string>> => {
  const tool = Sandbox.tools(policy(over)).find((t) => t.name === "shell.run")!
  const outcome = await Effect.runPromise(Effect.either(tool.invoke({ command, args }, context)))
  return Either.isRight(outcome)
    ? Either.right(Schema_ran(outcome.right))
    : Either.left(`${outcome.left._tag}: ${outcome.left.message}`)
}
const Schema_ran = (u: unknown): Ran => {
  if (u === null || typeof u !== "object" || !("stdout" in u) || !("stderr" in u) || !("exitCode" in u) || !("signal" in u)) throw new Error("not a run")
  const { exitCode, signal, stdout, stderr } = u
  if (typeof stdout !== "string" || typeof stderr !== "string") throw new Error("not a run")
  return { exitCode: typeof exitCode === "number" ? exitCode : null, signal: typeof signal === "string" ? signal : null, stdout, stderr }
}
const ran = async (command: string, args: ReadonlyArray<string>, over: Partial<Policy.ShellRule> = {}): Promise<Ran> => {
  const result = await run(command, args, over)
  if (Either.isLeft(result)) throw new Error(result.left)
  return result.right
}

const hex = (s: string) => Buffer.from(s).toString("hex")

/** A listener on 127.0.0.1 that counts the connections it accepts. */
const listener = async (): Promise<{ readonly port: number; readonly accepted: () => number; readonly close: () => Promise<void> }> => {
  let accepted = 0
  const server = net.createServer((socket) => {
    accepted++
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no port")
  return { port: address.port, accepted: () => accepted, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

const targets = {
  outsideMarker: path.join(outside, "marker.txt"),
  besidePolicy: path.join(base, "secret.txt"),
  sshKey: path.join(fakeHome, ".ssh/id_rsa"),
  hidden: path.join(base, "workspace/.env"),
  writeOutside: path.join(outside, "written.txt"),
  writeReadOnly: path.join(base, "workspace/written.txt"),
  writeBesidePolicy: path.join(base, "written.txt")
}

const nothingWritten = () => {
  expect(fs.existsSync(targets.writeOutside)).toBe(false)
  expect(fs.existsSync(targets.writeReadOnly)).toBe(false)
  expect(fs.existsSync(targets.writeBesidePolicy)).toBe(false)
}

const NODE_PROBE = `
const fs = require("fs"), net = require("net");
const h = (x) => Buffer.from(x, "hex").toString();
const [reads, writes, port] = [JSON.parse(h(process.argv[1])), JSON.parse(h(process.argv[2])), Number(process.argv[3])];
const out = {};
for (const p of reads) { try { out[p] = "READ " + fs.readFileSync(p, "utf8"); } catch (e) { out[p] = e.code; } }
for (const p of writes) { try { fs.writeFileSync(p, "x"); out[p] = "WROTE"; } catch (e) { out[p] = e.code; } }
const s = net.connect(port, "127.0.0.1");
s.on("connect", () => { out.net = "CONNECTED"; console.log(JSON.stringify(out)); process.exit(0); });
s.on("error", (e) => { out.net = e.code; console.log(JSON.stringify(out)); process.exit(0); });
`

const PYTHON_PROBE = `
import json, socket, sys
h = lambda x: bytes.fromhex(x).decode()
reads, writes, port = json.loads(h(sys.argv[1])), json.loads(h(sys.argv[2])), int(sys.argv[3])
out = {}
for p in reads:
    try:
        out[p] = "READ " + open(p).read()
    except OSError as e:
        out[p] = type(e).__name__
for p in writes:
    try:
        open(p, "w").write("x"); out[p] = "WROTE"
    except OSError as e:
        out[p] = type(e).__name__
try:
    socket.create_connection(("127.0.0.1", port), timeout=5); out["net"] = "CONNECTED"
except OSError as e:
    out["net"] = type(e).__name__
print(json.dumps(out))
`

describe("shell.run is contained: what a program tries, the sandbox refuses", () => {
  const reads = [targets.outsideMarker, targets.besidePolicy, targets.sshKey, targets.hidden]
  const writes = [targets.writeOutside, targets.writeReadOnly, targets.writeBesidePolicy]

  it("node -e reads no marker, writes nowhere outside fs.write, opens no ~/.ssh/id_rsa, connects to nothing", async () => {
    const server = await listener()
    try {
      const result = await ran("node", ["-e", NODE_PROBE, hex(JSON.stringify(reads)), hex(JSON.stringify(writes)), String(server.port)])
      expect(result.exitCode).toBe(0)
      const out: Record<string, string> = JSON.parse(result.stdout)
      for (const p of reads) expect(out[p]).not.toMatch(/^READ SECRET|^READ -----BEGIN/)
      for (const p of [targets.outsideMarker, targets.besidePolicy, targets.sshKey]) expect(out[p]).toBe("ENOENT")
      // The hidden file is masked (by /dev/null on a nodev mount: it cannot be opened).
      expect(out[targets.hidden]).toBe("EACCES")
      for (const p of writes) expect(["ENOENT", "EROFS", "EACCES"]).toContain(out[p])
      expect(out.net).toMatch(/^(ECONNREFUSED|ENETUNREACH|EADDRNOTAVAIL)$/)
      expect(server.accepted()).toBe(0)
      nothingWritten()
    } finally {
      await server.close()
    }
  }, 60_000)

  it(hasPython ? "python3 -c: the same" : "python3 -c: the same (python3 is at /usr/bin/python3 on this machine, or this case runs node's probe)", async () => {
    const server = await listener()
    try {
      const result = hasPython
        ? await ran("python3", ["-c", PYTHON_PROBE, hex(JSON.stringify(reads)), hex(JSON.stringify(writes)), String(server.port)])
        : await ran("node", ["-e", NODE_PROBE, hex(JSON.stringify(reads)), hex(JSON.stringify(writes)), String(server.port)])
      expect(result.exitCode).toBe(0)
      const out: Record<string, string> = JSON.parse(result.stdout)
      for (const p of reads) expect(out[p]).not.toMatch(/^READ SECRET|^READ -----BEGIN/)
      for (const p of writes) expect(out[p]).not.toBe("WROTE")
      expect(out.net).not.toBe("CONNECTED")
      expect(server.accepted()).toBe(0)
      nothingWritten()
    } finally {
      await server.close()
    }
  }, 60_000)

  it("sh -c: cat, redirections and the host's home see nothing outside the policy; the workspace is there", async () => {
    // `$1`...: the paths come as hex and are decoded inside (no argument names them).
    const script = "for h in \"$@\"; do p=$(printf \"$(echo \"$h\" | sed 's/../\\\\x&/g')\"); cat \"$p\" 2>&1; echo x > \"$p.w\" 2>&1; done; cat workspace/notes.txt; echo ok > workspace/out/fine.txt; ls -A ~"
    const result = await ran("sh", ["-c", script, "sh", ...[...reads, targets.writeOutside.replace(/\.txt$/, ""), "/root", "/etc/shadow"].map(hex)])
    expect(result.stdout).not.toContain("SECRET")
    expect(result.stdout).not.toContain("BEGIN FAKE KEY")
    expect(result.stdout).toContain("notes\n")
    expect(fs.readFileSync(path.join(base, "workspace/out/fine.txt"), "utf8")).toBe("ok\n")
    expect(fs.existsSync(`${targets.writeOutside.replace(/\.txt$/, "")}.w`)).toBe(false)
    expect(fs.readdirSync(outside).filter((name) => name.endsWith(".w"))).toEqual([])
    nothingWritten()
  }, 60_000)

  it("a fork bomb is held to max_processes and ends; the next call runs", async () => {
    const counted = await ran("sh", ["-c", "n=0; i=0; while [ $i -lt 100 ]; do if sleep 30 & then n=$((n+1)); fi; i=$((i+1)); done 2>/dev/null; echo $n"], { max_processes: 20, timeout_ms: 20_000 })
    expect(Number(counted.stdout.trim())).toBeLessThan(20)
    // A bomb in the foreground ends when its forks fail or at the timeout; one in the background dies with the
    // sandbox's PID namespace when the shell exits. Either way the call ends and nothing of it is left.
    for (const script of ["b() { b | b; }; b", "b() { b | b & }; b"]) {
      const bomb = await run("sh", ["-c", script], { max_processes: 32, timeout_ms: 3_000 })
      if (Either.isLeft(bomb)) expect(bomb.left).toContain("timed out")
    }
    const left = execFileSync("ps", ["-e", "-o", "args="], { encoding: "utf8" })
    expect(left).not.toContain("b() { b | b")
    expect(await ran("true", [])).toMatchObject({ exitCode: 0 })
  }, 60_000)

  it("filling the disk stops at max_file_bytes, in the workspace and in the private /tmp", async () => {
    const big = await ran("sh", ["-c", "cat /dev/zero > workspace/out/big; echo $?; cat /dev/zero > /tmp/big; echo $?"], { max_file_bytes: 1_048_576 })
    expect(fs.statSync(path.join(base, "workspace/out/big")).size).toBeLessThanOrEqual(1_048_576)
    const [workspace, tmp] = big.stdout.trim().split("\n").map(Number)
    expect(workspace).not.toBe(0)
    expect(tmp).not.toBe(0)
    fs.rmSync(path.join(base, "workspace/out/big"))
  }, 60_000)

  it("memory is held to max_memory_bytes", async () => {
    const result = await ran("node", ["-e", "try { const b = Buffer.alloc(2 * 1024 ** 3); console.log(b.length) } catch (e) { console.log(e.code || e.message) }"], { max_memory_bytes: 1_073_741_824 })
    expect(result.stdout).not.toContain(String(2 * 1024 ** 3))
  }, 60_000)

  it("a new PID namespace: the command sees only its own processes and cannot signal the host's", async () => {
    // Its pid 1 is the launcher (no init of bwrap's: launcher.test.ts shows it closed to commands), and besides it only
    // the command's own processes are there: the shell, ls and grep.
    const result = await ran("sh", ["-c", `head -c 100 /proc/1/cmdline | tr '\\0\\n' '  '; echo; ls /proc | grep -c '^[0-9][0-9]*$'; kill -0 ${process.pid} 2>/dev/null && echo SIGNALLED; exit 0`])
    const [init, count] = result.stdout.trim().split("\n")
    expect(init).toMatch(/^\/\.artana-launcher -c /)
    expect(Number(count)).toBeLessThan(5)
    expect(result.stdout).not.toContain("SIGNALLED")
  }, 60_000)

  it("a caller killed with SIGKILL takes its sandboxed command with it (--die-with-parent)", async () => {
    const mark = `61.${process.pid}`
    const script = `
      import { Effect } from "effect"
      import { Tenant } from "@artana/core"
      import { Sandbox } from "@artana/sandbox"
      const tool = Sandbox.tools(JSON.parse(process.argv[1])).find((t) => t.name === "shell.run")
      const tenant = Tenant.TenantContext.make({ tenantId: "t", capabilities: [], budgetUsdLimit: 1 })
      const lease = { expiresAt: () => Number.POSITIVE_INFINITY, signal: new AbortController().signal }
      Effect.runPromise(tool.invoke({ command: "sh", args: ["-c", "sleep ${mark}"] }, { runId: "r", tenant, idempotencyKey: "k", stepKey: "tool:0", fence: 1, signal: new AbortController().signal, lease }))
    `
    const sleeping = () => execFileSync("ps", ["-e", "-o", "args="], { encoding: "utf8" }).split("\n").some((line) => line.trim() === `sleep ${mark}`)
    const until = async (what: () => boolean) => {
      for (let i = 0; i < 200 && !what(); i++) await new Promise((resolve) => setTimeout(resolve, 100))
      return what()
    }
    const child = spawn("node", ["--input-type=module", "-e", script, JSON.stringify(policy())], {
      cwd: fileURLToPath(new URL("..", import.meta.url)), stdio: "ignore", env: { PATH: process.env.PATH }
    })
    try {
      expect(await until(sleeping)).toBe(true)
      child.kill("SIGKILL")
      expect(await until(() => !sleeping())).toBe(true)
    } finally {
      child.kill("SIGKILL")
    }
  }, 60_000)

  it("the limits in force inside are the policy's (never looser), soft and hard, and nothing inside can raise them", async () => {
    const result = await ran("sh", ["-c", "cat /proc/self/limits; for f in t v f c; do (ulimit -$f unlimited) 2>/dev/null && echo raised-$f; done; exit 0"], {
      timeout_ms: 4_500, max_memory_bytes: 1_073_741_824, max_file_bytes: 1_000_000
    })
    const limit = (name: string) => {
      const found = new RegExp(`^Max ${name}\\s+(\\S+)\\s+(\\S+)`, "m").exec(result.stdout)
      if (found === null) throw new Error(`no "${name}" in ${result.stdout}`)
      expect(found[2]).toBe(found[1])
      return Number(found[1])
    }
    expect(limit("cpu time")).toBe(5)
    expect(limit("address space")).toBe(1_073_741_824)
    expect(limit("file size")).toBeLessThanOrEqual(1_000_000)
    expect(limit("file size")).toBeGreaterThan(1_000_000 - 1024)
    expect(limit("core file size")).toBe(0)
    expect(result.stdout).not.toContain("raised")
  }, 60_000)

  it("a repository's hooks and configuration are read-only inside, though the repository is within fs.write", async () => {
    const repo = path.join(base, "workspace/out/repo")
    execFileSync("git", ["init", "-q", repo])
    const hook = path.join(repo, ".git/hooks/post-checkout")
    const config = fs.readFileSync(path.join(repo, ".git/config"), "utf8")
    const result = await ran("sh", ["-c", "cd workspace/out/repo && echo 'touch pwned' > .git/hooks/post-checkout; echo $?; echo '[core] fsmonitor = touch pwned' >> .git/config; echo $?; echo x > tracked.txt; echo $?"])
    const codes = result.stdout.trim().split("\n").map(Number)
    expect(codes[0]).not.toBe(0)
    expect(codes[1]).not.toBe(0)
    expect(codes[2]).toBe(0)
    expect(fs.existsSync(hook)).toBe(false)
    expect(fs.readFileSync(path.join(repo, ".git/config"), "utf8")).toBe(config)
  }, 60_000)

  it("a repository's hooks are writable inside when fs.write allows its hidden files (deny_hidden: false)", async () => {
    const repo = path.join(base, "workspace/out/open-repo")
    execFileSync("git", ["init", "-q", repo])
    const open = policy()
    const hidden: Policy.Policy = {
      ...open,
      document: { ...open.document, tools: { ...open.document.tools, "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: false, max_bytes: 1_048_576 } } }
    }
    const tool = Sandbox.tools(hidden).find((t) => t.name === "shell.run")!
    await Effect.runPromise(tool.invoke({ command: "sh", args: ["-c", "echo 'exit 0' > workspace/out/open-repo/.git/hooks/post-checkout"] }, context))
    expect(fs.readFileSync(path.join(repo, ".git/hooks/post-checkout"), "utf8")).toBe("exit 0\n")
    fs.rmSync(repo, { recursive: true, force: true })
  }, 60_000)

  it("the log records how the step was contained; without bwrap's sandbox and without `containment: none`, shell.run is refused", () => {
    const decision = Sandbox.decide(policy(), "shell.run", { command: "true", args: [] })
    expect(decision).toMatchObject({
      ok: true,
      containment: { mechanism: "bubblewrap", readOnly: ["workspace"], readWrite: ["workspace/out"], network: false }
    })
    expect(Sandbox.decide(policy({ containment: "none" }), "shell.run", { command: "true", args: [] })).toMatchObject({
      ok: true,
      reason: expect.stringContaining("UNCONTAINED"),
      containment: { mechanism: "none", network: true }
    })
    expect(Audit.Record.fields.containment).toBeDefined()
  })

  it("http.get's allowed hosts grant shell.run no network: the record and the reason say so, and a command reaches none", async () => {
    const open = policy()
    const withHttp: Policy.Policy = {
      ...open,
      document: {
        ...open.document,
        tools: {
          ...open.document.tools,
          "http.get": { allow: true, domains: ["127.0.0.1", "localhost"], block_private: false, max_bytes: 1_048_576, timeout_ms: 5_000, max_redirects: 0, allow_metadata: false }
        }
      }
    }
    expect(Sandbox.decide(withHttp, "http.get", { url: "http://127.0.0.1/" }).ok).toBe(true)
    const decision = Sandbox.decide(withHttp, "shell.run", { command: "node", args: [] })
    expect(decision).toMatchObject({ ok: true, containment: { mechanism: "bubblewrap", network: false } })
    expect(decision.reason).toContain("no network")
    expect(decision.reason).toContain("http.get's hosts (127.0.0.1, localhost) are for http.get only")
    expect(Sandbox.decide(policy(), "shell.run", { command: "true", args: [] }).reason).toContain("no network")
    const l = await listener()
    try {
      const tool = Sandbox.tools(withHttp).find((t) => t.name === "shell.run")!
      const outcome = await Effect.runPromise(tool.invoke({ command: "node", args: ["-e", NODE_PROBE, hex("[]"), hex("[]"), String(l.port)] }, context))
      expect(JSON.stringify(outcome)).not.toContain("CONNECTED")
      expect(JSON.stringify(outcome)).toContain("net")
      expect(l.accepted()).toBe(0)
    } finally {
      await l.close()
    }
  }, 60_000)

  it("where bwrap cannot be had, shell.run is refused with what to do; `containment: none` runs it uncontained", () => {
    // A mount namespace of its own where /usr/bin/bwrap is an empty, non-executable file (root only: CI and this machine).
    const empty = path.join(outside, "no-bwrap")
    fs.writeFileSync(empty, "", { mode: 0o644 })
    const script = `
      import { Sandbox } from "@artana/sandbox"
      const policy = JSON.parse(process.argv[1])
      const strict = Sandbox.decide(policy, "shell.run", { command: "true", args: [] })
      const loose = Sandbox.decide({ ...policy, document: { ...policy.document, tools: { ...policy.document.tools, "shell.run": { ...policy.document.tools["shell.run"], containment: "none" } } } }, "shell.run", { command: "true", args: [] })
      console.log(JSON.stringify({ strict, loose }))
    `
    const out = execFileSync("unshare", ["--mount", "--propagation", "private", "sh", "-c", 'mount --bind "$0" /usr/bin/bwrap && exec node --input-type=module -e "$1" "$2"', empty, script, JSON.stringify(policy())], { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8", env: { PATH: process.env.PATH } })
    const { strict, loose } = JSON.parse(out)
    expect(strict).toMatchObject({ ok: false, reason: expect.stringContaining("bwrap is not installed") })
    expect(strict.reason).toContain("apt-get install bubblewrap")
    expect(strict.reason).toContain("containment: none")
    expect(loose).toMatchObject({ ok: true, containment: { mechanism: "none" } })
  })
})

describe("git's programs and repositories outside the policy: what the argument rules guarded, the sandbox holds", () => {
  // A repository outside the policy's paths, with a secret committed; and one in the workspace, within fs.write.
  const outsideRepo = path.join(outside, "repo")
  const marker = path.join(outside, "git-ran")
  const gitHost = (...args: ReadonlyArray<string>) => execFileSync("git", [...args], { encoding: "utf8" })
  gitHost("init", "-q", outsideRepo)
  fs.writeFileSync(path.join(outsideRepo, "secret.txt"), "OUTSIDE-REPO-SECRET\n")
  gitHost("-C", outsideRepo, "add", "secret.txt")
  gitHost("-C", outsideRepo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "secret")
  const secretBlob = gitHost("-C", outsideRepo, "rev-parse", "HEAD:secret.txt").trim()
  const repo = path.join(base, "workspace/out/g")
  gitHost("init", "-q", repo)
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n")
  gitHost("-C", repo, "add", "a.txt")
  gitHost("-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
  // What every program below tries: print the outside marker and the secret, and leave a marker outside.
  const evil = `cat ${targets.outsideMarker} ${path.join(outsideRepo, "secret.txt")}; touch ${marker}`
  const at = ["-C", "workspace/out/g"]

  // The third element: git starts the program (its `cat` then finds nothing), or refuses the repository itself.
  it.each<readonly [string, () => ReadonlyArray<string>, "runs" | "refused"]>([
    ["an alias that runs a shell", () => [...at, "-c", `alias.x=!${evil}`, "x"], "runs"],
    ["an ssh command from the command line", () => [...at, "-c", `core.sshCommand=${evil};`, "ls-remote", "ssh://example.com/r.git"], "runs"],
    ["an external diff", () => {
      fs.writeFileSync(path.join(repo, "a.txt"), "changed\n")
      return [...at, "-c", `diff.external=${evil}; true`, "diff", "HEAD"]
    }, "runs"],
    ["an fsmonitor hook", () => [...at, "-c", `core.fsmonitor=${evil}`, "status"], "runs"],
    ["a clean filter from the repository's configuration", () => {
      fs.writeFileSync(path.join(repo, ".gitattributes"), "*.txt filter=x\n")
      gitHost("-C", repo, "config", "filter.x.clean", `sh -c '${evil}; cat'`)
      fs.writeFileSync(path.join(repo, "b.txt"), "b\n")
      return [...at, "add", "b.txt"]
    }, "runs"],
    ["an upload-pack program", () => ["clone", "-q", `--upload-pack=sh -c '${evil}'`, "workspace/out/g", "workspace/out/cloned"], "runs"],
    ["a local remote outside the policy", () => [...at, "fetch", outsideRepo], "refused"],
    ["a clone of a repository outside the policy", () => ["clone", "-q", outsideRepo, "workspace/out/stolen"], "refused"],
    ["--git-dir outside the policy", () => [`--git-dir=${path.join(outsideRepo, ".git")}`, "show", "HEAD:secret.txt"], "refused"],
    ["alternates pointing outside the policy", () => {
      fs.writeFileSync(path.join(repo, ".git/objects/info/alternates"), `${path.join(outsideRepo, ".git/objects")}\n`)
      return [...at, "cat-file", "-p", secretBlob]
    }, "refused"],
    ["a gitfile pointing outside the policy", () => {
      fs.mkdirSync(path.join(base, "workspace/out/gf"), { recursive: true })
      fs.writeFileSync(path.join(base, "workspace/out/gf/.git"), `gitdir: ${path.join(outsideRepo, ".git")}\n`)
      return ["-C", "workspace/out/gf", "show", "HEAD:secret.txt"]
    }, "refused"]
  ])("%s: git runs it inside, and it reaches nothing outside", async (_what, args, outcome) => {
    const result = await ran("git", args())
    if (outcome === "runs") expect(result.stderr).toContain(`${targets.outsideMarker}: No such file or directory`)
    else expect(result.exitCode).not.toBe(0)
    expect(result.stdout + result.stderr).not.toContain("OUTSIDE-REPO-SECRET")
    expect(result.stdout + result.stderr).not.toContain("SECRET=outside")
    expect(fs.existsSync(marker)).toBe(false)
    expect(fs.existsSync(path.join(base, "workspace/out/stolen/secret.txt"))).toBe(false)
    nothingWritten()
  }, 60_000)
})
