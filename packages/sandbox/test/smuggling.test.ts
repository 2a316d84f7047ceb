// More policy cases, by what an attacker tries: denied tokens abbreviated or clustered, paths glued to short options,
// git options that run gpg or fetch submodules, path encodings and look-alikes taken literally, special files inside
// the allowed paths, and DNS answers in every IPv6 form that embeds a private or metadata address (checked against
// a local server that would answer, were the call ever made).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { type Policy, Sandbox, Transport } from "@artana/sandbox"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { context, tempFolder, uncontained } from "./fixtures.js"


const base = tempFolder("smuggle")
const w = (p: string) => path.join(base, "workspace", p)
const file = (p: string, content = "x") => {
  fs.mkdirSync(path.dirname(p), { recursive: true })
  fs.writeFileSync(p, content)
}
file(w("notes.txt"), "notes")
file(w("．．/inside.txt"), "a directory named with full-width dots")
file(w("%c0%ae%c0%ae/inside.txt"), "a directory named like an overlong dot")
file(path.join(base, "secret.txt"), "secret")
fs.mkdirSync(w("out"), { recursive: true })
fs.mkdirSync(w("repo"), { recursive: true })
execFileSync("mkfifo", [w("out/fifo")])

const policy: Policy.Policy = {
  baseDir: base,
  document: {
    default: "deny",
    tools: {
      "fs.read": { allow: true, paths: ["workspace/**", "/dev/null", "/dev/zero"], deny_hidden: true, max_bytes: 1024 },
      "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1024 },
      "shell.run": {
        allow: true,
        executables: ["ls", "cat", "echo", "git"],
        denied_tokens: ["rm", "--force", "--recursive", "sudo", "-f"],
        timeout_ms: 5000,
        max_output_bytes: 65_536,
        ...uncontained
      }
    }
  }
}

describe("denied tokens, however they are written", () => {
  it.each([
    ["the whole token", "ls", ["--force"], false, "(--force)"],
    ["an abbreviation getopt_long would expand", "ls", ["--forc"], false, "(--force)"],
    ["a shorter abbreviation", "ls", ["--fo"], false, "(--force)"],
    ["an abbreviation with a value", "ls", ["--recur=always"], false, "(--recursive)"],
    ["the shortest abbreviation", "ls", ["--f"], false, "(--force)"],
    ["a short option in a cluster", "ls", ["-rf"], false, "(-f)"],
    ["a short option first in a cluster", "ls", ["-fl"], false, "(-f)"],
    ["a short option in a cluster with a value", "ls", ["-lf=1"], false, "(-f)"],
    ["the token as a value", "echo", ["--name=sudo"], false, "(sudo)"],
    ["the token as a later argument", "echo", ["hello", "rm"], false, "(rm)"],
    ["a longer option that only starts like one", "ls", ["--format=long"], true, "ls is an allowed executable"],
    ["a short option without the letter", "ls", ["-la"], true, "ls is an allowed executable"],
    ["the token inside a word", "echo", ["rmdir", "forced"], true, "echo is an allowed executable"],
    ["the token in another case", "echo", ["RM"], true, "echo is an allowed executable"]
  ])("%s: %s %s", (_what, command, args, ok, reason) => {
    const decision = Sandbox.decide(policy, "shell.run", { command, args })
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })
})

describe("paths glued to short options", () => {
  it.each([
    ["an absolute path glued to -F", "git", ["-C", "workspace/repo", "commit", "-F/root/notes"], false, "attaches a path to a short option"],
    ["a path glued at the end of a cluster", "git", ["-C", "workspace/repo", "commit", "-qF/root/notes"], false, "attaches a path to a short option"],
    ["a home path glued to an option", "ls", ["-d~root"], false, "attaches a path to a short option"],
    ["a relative path glued to an option", "cat", ["-v../secret.txt"], false, "attaches a path to a short option"],
    ["a file of the working directory glued to an option", "cat", ["-vsecret.txt"], false, "outside the allowed paths"],
    ["a file of the workspace as its own argument", "cat", ["-v", "workspace/notes.txt"], true, "cat is an allowed executable"],
  ])("%s: %s %s", (_what, command, args, ok, reason) => {
    const decision = Sandbox.decide(policy, "shell.run", { command, args })
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })
})

describe("paths taken literally: encodings and look-alikes", () => {
  it.each([
    ["an overlong UTF-8 dot, percent-encoded", "workspace/%c0%ae%c0%ae/secret.txt", false, "does not exist"],
    ["an overlong UTF-8 slash, percent-encoded", "workspace/..%c0%af..%c0%afsecret.txt", false, "hidden"],
    ["a directory named like overlong dots is a directory like any", "workspace/%c0%ae%c0%ae/inside.txt", true, "within fs.read's paths"],
    ["double percent-encoding", "workspace/%252e%252e/secret.txt", false, "does not exist"],
    ["full-width dots (U+FF0E) are not ..", "workspace/．．/secret.txt", false, "does not exist"],
    ["a directory named with full-width dots is a directory like any", "workspace/．．/inside.txt", true, "within fs.read's paths"],
    ["a one-dot leader pair (U+2024) is not ..", "workspace/\u2024\u2024/secret.txt", false, "does not exist"],
    ["a two-dot leader (U+2025) is not ..", "workspace/\u2025/secret.txt", false, "does not exist"],
    ["a division slash (U+2215) is not a slash", "workspace/..\u2215secret.txt", false, "hidden"],
    ["a full-width solidus (U+FF0F) is not a slash", "workspace/notes.txt\uff0f..\uff0f..\uff0fsecret.txt", false, "does not exist"],
    ["an encoded NUL taken literally", "workspace/notes.txt%00.png", false, "does not exist"],
    ["a zero-width space in a name", "workspace/notes\u200b.txt", false, "does not exist"],
    ["a Cyrillic look-alike letter", "workspace/n\u043etes.txt", false, "does not exist"],
    ["a trailing dot on a name", "workspace/notes.txt.", false, "does not exist"],
    ["a trailing space on a name", "workspace/notes.txt ", false, "does not exist"],
    ["doubled slashes stay inside", "workspace//notes.txt", true, "within fs.read's paths"]
  ])("%s: %s", (_what, requested, ok, reason) => {
    const decision = Sandbox.decide(policy, "fs.read", { path: requested })
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })
})

describe("`..` after a link is resolved as the system resolves it", () => {
  // workspace/jump -> <elsewhere>/inner: `workspace/jump/../notes.txt` is <elsewhere>/notes.txt to cat, not
  // workspace/notes.txt, which a lexical resolution would have checked (and allowed).
  const elsewhere = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-elsewhere-")))
  afterAll(() => fs.rmSync(elsewhere, { recursive: true, force: true }))
  file(path.join(elsewhere, "inner/x"))
  file(path.join(elsewhere, "notes.txt"), "notes from elsewhere")
  fs.symlinkSync(path.join(elsewhere, "inner"), w("jump"))
  fs.symlinkSync(path.join(elsewhere, "inner"), w("out/jump"))

  it("fs.read refuses it", () => {
    expect(Sandbox.decide(policy, "fs.read", { path: "workspace/jump/../notes.txt" })).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
  })

  it("fs.write refuses to create a file there", () => {
    expect(Sandbox.decide(policy, "fs.write", { path: "workspace/out/jump/../new.txt", content: "x" })).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
  })

  it("shell.run refuses it as an argument, for real: cat never prints the file", async () => {
    expect(Sandbox.decide(policy, "shell.run", { command: "cat", args: ["workspace/jump/../notes.txt"] })).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    const tool = Sandbox.tools(policy).find((t) => t.name === "shell.run")!
    const outcome = await Effect.runPromise(Effect.either(tool.invoke({ command: "cat", args: ["workspace/jump/../notes.txt"] }, context)))
    expect(Either.isLeft(outcome) && outcome.left).toMatchObject({ _tag: "PolicyDenied" })
    // The same file named plainly is read.
    const plain = await Effect.runPromise(tool.invoke({ command: "cat", args: ["workspace/notes.txt"] }, context))
    expect(plain).toMatchObject({ exitCode: 0, stdout: "notes" })
  })
})

describe("special files inside the allowed paths", () => {
  let socket: net.Server
  beforeAll(async () => {
    socket = net.createServer()
    await new Promise<void>((resolve) => socket.listen(w("sock"), resolve))
    fs.symlinkSync("/dev/zero", w("zero-link"))
  })
  afterAll(() => new Promise<void>((resolve) => socket.close(() => resolve())))

  it.each([
    ["a character device the globs allow", "/dev/null", "a device"],
    ["another device the globs allow", "/dev/zero", "a device"],
    ["a link to a device the globs allow", "workspace/zero-link", "a device"],
    ["a unix socket", "workspace/sock", "a socket"],
    ["a FIFO", "workspace/out/fifo", "a FIFO"],
    ["a directory", "workspace/out", "a directory"]
  ])("%s (%s) is refused for reading", (_what, requested, reason) => {
    expect(Sandbox.decide(policy, "fs.read", { path: requested })).toMatchObject({ ok: false, reason: expect.stringContaining(reason) })
  })

  it("a FIFO or a directory is refused for writing, and the FIFO is never opened", async () => {
    expect(Sandbox.decide(policy, "fs.write", { path: "workspace/out/fifo", content: "x" })).toMatchObject({ ok: false, reason: expect.stringContaining("a FIFO") })
    const tool = Sandbox.tools(policy).find((t) => t.name === "fs.write")!
    const outcome = await Effect.runPromise(Effect.either(tool.invoke({ path: "workspace/out/fifo", content: "x" }, context)))
    expect(Either.isLeft(outcome) && outcome.left).toMatchObject({ _tag: "PolicyDenied", reason: expect.stringContaining("a FIFO") })
  })
})

describe("DNS answers in every form that embeds a private or metadata address", () => {
  let server: http.Server
  let port = 0
  let requests = 0
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      requests++
      const to = new URL(req.url ?? "/", "http://x").searchParams.get("to")
      if (to !== null) return void res.writeHead(302, { location: to }).end()
      res.end("public")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const answers: Readonly<Record<string, ReadonlyArray<string>>> = {
    "example.com": ["93.184.216.34"],
    "mapped.example.com": ["::ffff:10.0.0.1"],
    "mapped-hex.example.com": ["::ffff:a9fe:a9fe"],
    "compat.example.com": ["::7f00:1"],
    "nat64.example.com": ["64:ff9b::a9fe:a9fe"],
    "nat64-private.example.com": ["64:ff9b::c0a8:101"],
    "sixtofour.example.com": ["2002:7f00:1::1"],
    "teredo.example.com": ["2001:0:4136:e378:8000:63bf:f5ff:fffe"],
    "ula.example.com": ["fd12:3456:789a::1"],
    "aws-v6.example.com": ["fd00:ec2::254"],
    "linklocal-v6.example.com": ["fe80::1"],
    "v6-good-and-bad.example.com": ["2606:2800:220:1:248:1893:25c8:1946", "::1"],
    "v4-bad-first.example.com": ["192.168.1.1", "93.184.216.34"],
    "alibaba.example.com": ["100.100.100.200"],
    "cgnat.example.com": ["100.64.0.1"]
  }
  const rule: Policy.HttpRule = {
    allow: true,
    domains: ["example.com", "*.example.com"],
    block_private: true,
    max_bytes: 1024,
    timeout_ms: 2000,
    max_redirects: 3,
    allow_metadata: false
  }
  const get = async (url: string) => {
    const tools = Sandbox.tools({ baseDir: base, document: { default: "deny", tools: { "http.get": rule } } }, Transport.fake(answers, { host: "127.0.0.1", port }))
    const outcome = await Effect.runPromise(Effect.either(tools.find((t) => t.name === "http.get")!.invoke({ url }, context)))
    return Either.isRight(outcome) ? { ok: true as const } : { ok: false as const, tag: outcome.left._tag, message: outcome.left.message }
  }

  it.each([
    ["IPv4-mapped private", "mapped.example.com", "private"],
    ["IPv4-mapped metadata, in hex", "mapped-hex.example.com", "metadata"],
    ["IPv4-compatible loopback", "compat.example.com", "loopback"],
    ["NAT64 metadata", "nat64.example.com", "metadata"],
    ["NAT64 private", "nat64-private.example.com", "private"],
    ["6to4 loopback", "sixtofour.example.com", "6to4"],
    ["Teredo", "teredo.example.com", "Teredo"],
    ["IPv6 unique local", "ula.example.com", "uniqueLocal"],
    ["AWS IPv6 metadata", "aws-v6.example.com", "metadata"],
    ["IPv6 link-local", "linklocal-v6.example.com", "linkLocal"],
    ["a good IPv6 address and IPv6 loopback", "v6-good-and-bad.example.com", "::1"],
    ["a private address before a public one", "v4-bad-first.example.com", "192.168.1.1"],
    ["Alibaba Cloud metadata", "alibaba.example.com", "metadata"],
    ["carrier-grade NAT", "cgnat.example.com", "carrierGradeNat"]
  ])("a name resolving to %s is refused, and nothing is requested", async (_what, host, reason) => {
    const before = requests
    const result = await get(`http://${host}/`)
    expect(result).toMatchObject({ ok: false, tag: "PolicyDenied", message: expect.stringContaining(reason) })
    expect(requests).toBe(before)
  })

  it.each([
    ["NAT64 loopback", "http://[64:ff9b::7f00:1]/", "NAT64"],
    ["a short loopback form", "http://0x7f.1/", "loopback"],
    ["an octal integer", "http://017700000001/", "loopback"],
    ["IPv4-mapped metadata in hex", "http://[::ffff:a9fe:a9fe]/", "metadata"],
    ["a name resolving to NAT64 metadata", "http://nat64.example.com/", "metadata"],
    ["a name with a private answer before a public one", "http://v4-bad-first.example.com/", "192.168.1.1"]
  ])("a redirect to %s is refused after one request", async (_what, target, reason) => {
    const before = requests
    const result = await get(`http://example.com/?to=${encodeURIComponent(target)}`)
    expect(result).toMatchObject({ ok: false, tag: "PolicyDenied", message: expect.stringContaining(`redirect 1 to`) })
    expect(result.ok === false && result.message).toContain(reason)
    expect(requests).toBe(before + 1)
  })

  it("the same public name passes (the server answers)", async () => {
    expect(await get("http://example.com/")).toEqual({ ok: true })
  })
})

describe("the child's home", () => {
  it("is an empty directory of the run's own, gone when the run ends (nothing carries over to the next run)", async () => {
    // Contained, the home is in the sandbox's private /tmp: a file left there by one call is not there for the next,
    // and nothing of it is on the host.
    const p: Policy.Policy = { ...policy, document: { ...policy.document, tools: { ...policy.document.tools, "shell.run": { ...policy.document.tools["shell.run"]!, executables: ["sh"], containment: "bubblewrap" } } } }
    const tool = Sandbox.tools(p).find((t) => t.name === "shell.run")!
    const sh = async (script: string) => await Effect.runPromise(tool.invoke({ command: "sh", args: ["-c", script] }, context)) as { readonly exitCode: number; readonly stdout: string }
    const first = await sh("cd && echo kept > carry && ls -A && pwd")
    expect(first.stdout).toBe("carry\n/tmp/home\n")
    const second = await sh("cd && ls -A; cat carry")
    expect(second.stdout).toBe("")
    expect(second.exitCode).not.toBe(0)
    expect(fs.existsSync("/tmp/home/carry")).toBe(false)
  })
})
