// shell.run policy cases: the executable (by name on a fixed PATH, or a listed path), argument smuggling (denied
// tokens as whole arguments and --opt=value, git options that run programs or load configuration, with their
// abbreviations, ext:: URLs, config writes, hooks), paths in arguments under the fs.read rule; and real runs: argv
// only, a minimal environment, stdin from /dev/null, the timeout and the output cap killing the process group.
import { describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { type Policy, Sandbox } from "@artana/sandbox"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { context, tempFolder, uncontained } from "./fixtures.js"


const base = tempFolder("sh")
const outside = tempFolder("sh-out")
fs.mkdirSync(path.join(base, "workspace/repo"), { recursive: true })
fs.writeFileSync(path.join(base, "workspace/notes.txt"), "notes")
fs.writeFileSync(path.join(base, "workspace/.env"), "SECRET=1")
fs.writeFileSync(path.join(base, "secret.txt"), "secret")
fs.symlinkSync(path.join(outside), path.join(base, "workspace/out-link"))
fs.symlinkSync(path.join(outside, "missing"), path.join(base, "dangling-top"))
fs.symlinkSync(path.join(base, "secret.txt"), path.join(base, "top-link"))
fs.mkdirSync(path.join(base, "workspace/out"), { recursive: true })
fs.mkdirSync(path.join(base, "workspace/gitfile/sub"), { recursive: true })
fs.writeFileSync(path.join(base, "workspace/gitfile/.git"), `gitdir: ${outside}\n`)
fs.mkdirSync(path.join(base, "workspace/gitlink"), { recursive: true })
fs.symlinkSync(outside, path.join(base, "workspace/gitlink/.git"))

const shell = (over: Partial<Policy.ShellRule> = {}): Policy.ShellRule => ({
  allow: true,
  executables: ["ls", "cat", "echo", "git", "sh", "env", "sleep", "yes", "/bin/true"],
  denied_tokens: ["rm", "--force", "sudo", "-f"],
  timeout_ms: 2000,
  max_output_bytes: 4096,
  ...uncontained,
  ...over
})
const policy = (over: Partial<Policy.ShellRule> = {}): Policy.Policy => ({
  baseDir: base,
  document: {
    default: "deny",
    tools: {
      "shell.run": shell(over),
      "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1024 }
    }
  }
})
const decide = (command: string, args: ReadonlyArray<string> = [], p = policy()) => Sandbox.decide(p, "shell.run", { command, args })

describe("shell.run decisions", () => {
  it.each([
    ["an allowed executable", "ls", ["-la"], true, "ls is an allowed executable (/"],
    ["echo with words", "echo", ["hello", "world"], true, "echo"],
    ["cat of a workspace file", "cat", ["workspace/notes.txt"], true, "cat"],
    ["a listed absolute path", "/bin/true", [], true, "/bin/true"],
    ["an executable not listed", "python3", ["-c", "print(1)"], false, "python3 is not an allowed executable"],
    ["a shell line in the command", "ls -la", [], false, "argv form, never a shell"],
    ["a command with a semicolon", "ls;id", [], false, "not an allowed executable"],
    ["a path-qualified executable not listed", "/usr/bin/ls", [], false, "path-qualified"],
    ["a relative path to an executable", "./ls", [], false, "path-qualified"],
    ["traversal to an executable", "../../bin/sh", [], false, "path-qualified"],
    ["a denied token as a whole argument", "ls", ["--force"], false, "denied token (--force)"],
    ["a denied token as --opt=value", "ls", ["--force=yes"], false, "denied token (--force)"],
    ["a denied short token", "ls", ["-f"], false, "denied token (-f)"],
    ["a denied token as the command", "sudo", ["ls"], false, "not an allowed executable"],
    ["a denied word as an argument", "echo", ["rm"], false, "denied token (rm)"],
    ["a NUL byte in an argument", "echo", ["a\u0000b"], false, "NUL"],
    ["cat of a file outside the workspace", "cat", ["secret.txt"], false, "outside the allowed paths"],
    ["cat by traversal", "cat", ["workspace/../secret.txt"], false, "outside the allowed paths"],
    ["cat of an absolute path", "cat", ["/etc/passwd"], false, "outside the allowed paths"],
    ["cat of a hidden file", "cat", ["workspace/.env"], false, "hidden"],
    ["cat through a link out of the workspace", "cat", ["workspace/out-link/x"], false, "outside the allowed paths"],
    ["a path in --opt=value", "ls", ["--directory=/etc"], false, "outside the allowed paths"],
    ["a home-directory path", "ls", ["~/.ssh"], false, "home directory"],
    // After the subcommand -c is the subcommand's (log -c: combined diffs; switch -c: create): not configuration.
    ["a denied token as the value of --opt=value", "echo", ["--label=sudo"], false, "denied token (sudo)"],
    ["a denied token in a -o=value form", "echo", ["-x=rm"], false, "denied token (rm)"],
    ["a dangling link named without a slash", "cat", ["dangling-top"], false, "dangling link"],
    ["a link named without a slash, to outside", "cat", ["top-link"], false, "outside the allowed paths"]
  ])("%s: %s %s", (_what, command, args, ok, reason) => {
    const decision = decide(command, args)
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })

  it("without fs.read, no argument may name a path", () => {
    const p: Policy.Policy = { baseDir: base, document: { default: "deny", tools: { "shell.run": shell() } } }
    expect(decide("cat", ["workspace/notes.txt"], p)).toMatchObject({ ok: false, reason: expect.stringContaining("fs.read is not allowed") })
    expect(decide("echo", ["hello"], p).ok).toBe(true)
  })
})

const run = async (command: string, args: ReadonlyArray<string>, over: Partial<Policy.ShellRule> = {}, tools: Policy.Document["tools"] = {}) => {
  const p = policy(over)
  const tool = Sandbox.tools({ ...p, document: { ...p.document, tools: { ...p.document.tools, ...tools } } }).find((t) => t.name === "shell.run")!
  const outcome = await Effect.runPromise(Effect.either(tool.invoke({ command, args }, context)))
  return Either.isRight(outcome)
    ? { ok: true as const, value: outcome.right as { readonly exitCode: number | null; readonly stdout: string; readonly stderr: string } }
    : { ok: false as const, tag: outcome.left._tag, message: outcome.left.message }
}

describe("shell.run, run for real", () => {
  it("arguments are argv: shell syntax is passed through as text", async () => {
    expect(await run("echo", ["$(id)", "`whoami`", "a;b", "|", "&&"])).toMatchObject({ ok: true, value: { exitCode: 0, stdout: "$(id) `whoami` a;b | &&\n" } })
  })

  it("a home that cannot be made is a tool error, not a crash", async () => {
    const saved = process.env.TMPDIR
    process.env.TMPDIR = path.join(outside, "no-such-dir")
    try {
      // Uncontained, the home is a folder of the host's temp folder; contained, it is in the sandbox's private /tmp.
      expect(await run("echo", ["x"], { containment: "none" })).toMatchObject({ ok: false, tag: "ToolError", message: expect.stringContaining("cannot make a home for ") })
      expect(await run("echo", ["x"], { containment: "bubblewrap" })).toMatchObject({ ok: true, value: { stdout: "x\n" } })
    } finally {
      if (saved === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = saved
    }
  })

  it("the child gets a minimal environment, whatever the host's", async () => {
    process.env.ARTANA_SECRET_FOR_TEST = "leaked"
    try {
      const result = await run("env", [], { containment: "bubblewrap" })
      expect(result.ok).toBe(true)
      if (result.ok) {
        const names = result.value.stdout.trim().split("\n").map((l) => l.split("=")[0]).sort()
        // PWD is bubblewrap's (it sets it to the working directory it enters).
        expect(names).toEqual(["HOME", "LANG", "PATH", "PWD"])
        expect(result.value.stdout).toContain(`PWD=${base}\n`)
        expect(result.value.stdout).toContain("PATH=/usr/local/bin:/usr/bin:/bin")
        expect(result.value.stdout).not.toContain("leaked")
      }
    } finally {
      delete process.env.ARTANA_SECRET_FOR_TEST
    }
  })

  it("stdin is /dev/null: a command reading it ends at once", async () => {
    expect(await run("cat", [])).toMatchObject({ ok: true, value: { exitCode: 0, stdout: "" } })
  })

  it("the timeout kills the whole process group, grandchildren included", async () => {
    // The grandchild (a background subshell) would write the marker two seconds in, in the working directory.
    const marker = path.join(base, "grandchild-alive")
    const started = Date.now()
    const result = await run("sh", ["-c", "(sleep 2; echo alive > grandchild-alive) & sleep 5"], { timeout_ms: 500 })
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining("timed out after 500 ms") })
    expect(Date.now() - started).toBeLessThan(2500)
    await new Promise((r) => setTimeout(r, 3000))
    expect(fs.existsSync(marker)).toBe(false)
  }, 10_000)

  it("the output cap kills the process group", async () => {
    const result = await run("yes", ["y"], { max_output_bytes: 1000 })
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining("over max_output_bytes (1000)") })
  })

  it("a refused command never runs", async () => {
    const marker = path.join(outside, "should-not-exist")
    expect(await run("sh", ["-c", "touch \"$0\"", marker, "--force"])).toMatchObject({ ok: false, tag: "PolicyDenied", message: expect.stringContaining("denied token (--force)") })
    expect(fs.existsSync(marker)).toBe(false)
  })

  it("git runs without system or global configuration; a repository's hooks run inside the sandbox, and reach nothing outside", async () => {
    const repo = path.join(base, "workspace/out/hooked")
    const writable = { "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1024 } }
    const contained = { containment: "bubblewrap" } as const
    expect((await run("git", ["-C", "workspace/out", "init", "-q", "hooked"], contained, writable)).ok).toBe(true)
    const marker = path.join(outside, "hook-ran")
    const secret = path.join(outside, "hook-secret.txt")
    fs.writeFileSync(secret, "HOOK-SECRET-CONTENT")
    // The repository came with a hook (written from outside the sandbox: inside, hooks/ is read-only).
    fs.writeFileSync(path.join(repo, ".git/hooks/pre-commit"), `#!/bin/sh\necho hook-ran-inside\ncat ${secret}\ntouch ${marker}\n`, { mode: 0o755 })
    fs.writeFileSync(path.join(repo, "x.txt"), "x")
    expect((await run("git", ["-C", "workspace/out/hooked", "add", "x.txt"], contained, writable)).ok).toBe(true)
    const committed = await run("git", ["-C", "workspace/out/hooked", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first"], contained, writable)
    // git sends a hook's output to stderr: the hook ran, and its cat found nothing.
    expect(committed).toMatchObject({ ok: true, value: { stderr: expect.stringContaining("hook-ran-inside") } })
    expect(committed.ok && committed.value.stderr).toContain("No such file or directory")
    expect(committed.ok && committed.value.stdout + committed.value.stderr).not.toContain("HOOK-SECRET-CONTENT")
    expect(fs.existsSync(marker)).toBe(false)
    // gc and maintenance never detach from the process group the timeout kills; no system or global file is read.
    for (const key of ["gc.autoDetach", "maintenance.autoDetach"]) {
      expect(await run("git", ["-C", "workspace/out/hooked", "config", "--get", key], contained, writable)).toMatchObject({ ok: true, value: { stdout: "false\n" } })
    }
    expect(await run("git", ["-C", "workspace/out/hooked", "config", "--show-origin", "--list"], contained, writable)).toMatchObject({ ok: true, value: { stdout: expect.not.stringContaining("/etc/gitconfig") } })
  })

  it("git clones a local repository into fs.write's paths; a remote in the repository's configuration cannot take it to the network", async () => {
    const writable: Partial<Policy.ShellRule> = { containment: "bubblewrap" }
    const p: Policy.Policy = {
      baseDir: base,
      document: { default: "deny", tools: { ...policy(writable).document.tools, "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1024 } } }
    }
    const tool = Sandbox.tools(p).find((t) => t.name === "shell.run")!
    const call = async (args: ReadonlyArray<string>) => {
      const outcome = await Effect.runPromise(Effect.either(tool.invoke({ command: "git", args }, context)))
      return Either.isRight(outcome) ? (outcome.right as { readonly exitCode: number | null; readonly stderr: string }) : { exitCode: null, stderr: outcome.left.message }
    }
    const source = path.join(base, "workspace/origin-repo")
    execFileSync("git", ["init", "-q", source])
    fs.writeFileSync(path.join(source, "README"), "hello")
    execFileSync("git", ["-C", source, "add", "README"])
    execFileSync("git", ["-C", source, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first"])
    expect(await call(["-C", "workspace", "clone", "-q", "origin-repo", "out/clone"])).toMatchObject({ exitCode: 0 })
    expect(fs.readFileSync(path.join(base, "workspace/out/clone/README"), "utf8")).toBe("hello")
    // A remote the repository names over http, on a listener of this host: the sandbox has no network.
    let accepted = 0
    const server = net.createServer((socket) => {
      accepted++
      socket.destroy()
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as net.AddressInfo).port
    try {
      execFileSync("git", ["-C", path.join(base, "workspace/out/clone"), "remote", "add", "web", `http://127.0.0.1:${port}/r.git`])
      const fetched = await call(["-C", "workspace/out/clone", "fetch", "web"])
      expect(fetched.exitCode).not.toBe(0)
      expect(accepted).toBe(0)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    // No editor: a commit without a message fails at once instead of waiting for one.
    const started = Date.now()
    const editing = await call(["-C", "workspace/out/clone", "commit", "--allow-empty"])
    expect(editing.exitCode).not.toBe(0)
    expect(Date.now() - started).toBeLessThan(1500)
  })

  it("interrupting the call kills the process group", async () => {
    const tool = Sandbox.tools(policy({ timeout_ms: 10_000 })).find((t) => t.name === "shell.run")!
    const marker = path.join(base, "interrupted-alive")
    const started = Date.now()
    const exit = await Effect.runPromiseExit(Effect.timeout(tool.invoke({ command: "sh", args: ["-c", "sleep 1; echo alive > interrupted-alive"] }, context), "200 millis"))
    expect(exit._tag).toBe("Failure")
    expect(Date.now() - started).toBeLessThan(1000)
    await new Promise((r) => setTimeout(r, 1500))
    expect(fs.existsSync(marker)).toBe(false)
  })

  it("git never finds a repository around the workspace: the base directory's own history stays out of reach", async () => {
    // The policy's folder is a repository holding a secret; a workspace folder that is not a repository of its own.
    const around = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-around-")))
    try {
      fs.mkdirSync(path.join(around, "workspace/plain"), { recursive: true })
      fs.writeFileSync(path.join(around, "secret.txt"), "the secret")
      execFileSync("git", ["init", "-q", around])
      execFileSync("git", ["-C", around, "add", "secret.txt"])
      execFileSync("git", ["-C", around, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "secret"])
      const p: Policy.Policy = { ...policy({ containment: "bubblewrap" }), baseDir: around }
      const tool = Sandbox.tools(p).find((t) => t.name === "shell.run")!
      const outcome = await Effect.runPromise(Effect.either(tool.invoke({ command: "git", args: ["-C", "workspace/plain", "show", "HEAD:secret.txt"] }, context)))
      expect(Either.isRight(outcome)).toBe(true)
      const result = Either.getOrThrow(outcome) as { readonly exitCode: number | null; readonly stdout: string; readonly stderr: string }
      expect(result.exitCode).not.toBe(0)
      expect(result.stdout).not.toContain("the secret")
      expect(result.stderr).toContain("not a git repository")
    } finally {
      fs.rmSync(around, { recursive: true, force: true })
    }
  })
})
