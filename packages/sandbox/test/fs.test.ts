// fs.read / fs.write policy cases against a real temp folder: traversal, encodings taken literally, symlinks (out
// of the workspace, chains, dangling, loops, directories), hidden files, non-regular files, caps, and files swapped
// between the check and the open.
import { afterAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import type { Policy} from "@artana/sandbox";
import { Sandbox } from "@artana/sandbox"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { context, tempFolder } from "./fixtures.js"


const base = tempFolder("fs")
const outside = tempFolder("outside")

const w = (p: string) => path.join(base, "workspace", p)
const file = (p: string, content = `content of ${p}`) => {
  fs.mkdirSync(path.dirname(p), { recursive: true })
  fs.writeFileSync(p, content)
}
file(w("a.txt"), "hello")
file(w("sub/b.txt"))
file(w(".env"), "SECRET=1")
file(w(".git/config"))
file(w("sub/.hidden/c.txt"))
file(w("%2e%2e/literal.txt"), "a directory named %2e%2e")
file(path.join(base, "secret.txt"), "top secret")
file(path.join(outside, "passwd"), "root:x:0:0")
file(w("big.bin"), "x".repeat(2048))
fs.mkdirSync(w("out"), { recursive: true })
fs.mkdirSync(w("empty-dir"), { recursive: true })
fs.symlinkSync("../secret.txt", w("link-out"))
fs.symlinkSync(path.join(outside, "passwd"), w("link-abs"))
fs.symlinkSync("missing.txt", w("dangling"))
fs.symlinkSync("chain2", w("chain1"))
fs.symlinkSync("chain3", w("chain2"))
fs.symlinkSync("../secret.txt", w("chain3"))
fs.symlinkSync("inner-chain2", w("inner-chain1"))
fs.symlinkSync("a.txt", w("inner-chain2"))
fs.symlinkSync("loop2", w("loop1"))
fs.symlinkSync("loop1", w("loop2"))
fs.symlinkSync(".env", w("innocent"))
fs.symlinkSync("..", w("parent-dir"))
fs.symlinkSync(outside, w("out/escape"))
fs.symlinkSync("../a.txt", w("out/link-to-a"))
fs.symlinkSync(path.join(outside, "new.txt"), w("out/dangling-out"))
execFileSync("mkfifo", [w("fifo")])
fs.linkSync(w("a.txt"), w("out/hard-link"))

const policy: Policy.Policy = {
  baseDir: base,
  document: {
    default: "deny",
    tools: {
      "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1024 },
      "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 64 }
    }
  }
}
const permissive: Policy.Policy = { ...policy, document: { ...policy.document, tools: { ...policy.document.tools, "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: false, max_bytes: 1024 } } } }

describe("fs.read decisions", () => {
  it.each([
    ["a file of the workspace", "workspace/a.txt", true, "workspace/a.txt is within"],
    ["a file in a subfolder", "workspace/sub/b.txt", true, "sub/b.txt"],
    ["an absolute path inside the workspace", w("a.txt"), true, "workspace/a.txt"],
    ["a dot segment that stays inside", "workspace/sub/../a.txt", true, "workspace/a.txt"],
    ["a literal %2e%2e directory (no URL-decoding)", "workspace/%2e%2e/literal.txt", true, "%2e%2e/literal.txt"],
    ["a link inside the workspace to a workspace file", "workspace/inner-chain1", true, "workspace/a.txt"],
    ["traversal out with ..", "workspace/../secret.txt", false, "outside the allowed paths"],
    ["deep traversal to /etc", "workspace/sub/../../../../../../etc/passwd", false, "outside the allowed paths"],
    ["an absolute path outside", "/etc/hostname", false, "outside the allowed paths"],
    ["an absolute path of another temp folder", path.join(outside, "passwd"), false, "outside the allowed paths"],
    ["%2e%2e traversal taken literally (does not exist)", "workspace/%2e%2e/secret.txt", false, "does not exist"],
    ["%2f taken literally (a name starting with a dot)", "workspace/..%2fsecret.txt", false, "hidden"],
    ["a backslash taken literally", "workspace\\..\\secret.txt", false, "does not exist"],
    ["a full-width letter not normalised", "workspace/ａ.txt", false, "does not exist"],
    ["a decomposed accent not normalised", "workspace/a\u0301.txt", false, "does not exist"],
    ["a NUL byte", "workspace/a.txt\u0000.png", false, "NUL"],
    ["a link to a file outside", "workspace/link-out", false, "outside the allowed paths"],
    ["an absolute link outside", "workspace/link-abs", false, "outside the allowed paths"],
    ["a chain of links ending outside", "workspace/chain1", false, "outside the allowed paths"],
    ["a dangling link", "workspace/dangling", false, "dangling link"],
    ["a link loop", "workspace/loop1", false, "link loop"],
    ["a link to a directory above, then down", "workspace/parent-dir/secret.txt", false, "outside the allowed paths"],
    ["a link in an allowed folder pointing out", "workspace/out/escape/passwd", false, "outside the allowed paths"],
    ["a hidden file", "workspace/.env", false, "hidden"],
    ["a file in a hidden folder", "workspace/.git/config", false, "hidden"],
    ["a hidden folder deeper down", "workspace/sub/.hidden/c.txt", false, "hidden"],
    ["a harmless name linking to a hidden file", "workspace/innocent", false, "hidden"],
    ["a missing file", "workspace/nope.txt", false, "does not exist"],
    ["a directory", "workspace/empty-dir", false, "a directory"],
    ["a FIFO", "workspace/fifo", false, "a FIFO"],
    ["a device", "/dev/zero", false, "outside the allowed paths"]
  ])("%s: %s", (_what, requested, ok, reason) => {
    const decision = Sandbox.decide(policy, "fs.read", { path: requested })
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })

  it("deny_hidden: false reads hidden files, still only inside the allowed paths", () => {
    expect(Sandbox.decide(permissive, "fs.read", { path: "workspace/.env" }).ok).toBe(true)
    expect(Sandbox.decide(permissive, "fs.read", { path: "workspace/innocent" }).ok).toBe(true)
    expect(Sandbox.decide(permissive, "fs.read", { path: "workspace/link-out" }).ok).toBe(false)
  })

  it("decide names the arguments a tool takes when given others", () => {
    expect(Sandbox.decide(policy, "fs.read", { file: "workspace/a.txt" })).toEqual({ ok: false, reason: "fs.read takes { path }" })
    expect(Sandbox.decide(policy, "fs.write", { path: "workspace/out/x" })).toEqual({ ok: false, reason: "fs.write takes { path, content }" })
  })

  it("a tool without a rule, or with allow: false, is denied by default", () => {
    const none: Policy.Policy = { baseDir: base, document: { default: "deny", tools: {} } }
    expect(Sandbox.decide(none, "fs.read", { path: "workspace/a.txt" })).toMatchObject({ ok: false, reason: "fs.read has no rule in the policy (default: deny)" })
    const off: Policy.Policy = { baseDir: base, document: { default: "deny", tools: { "fs.read": { allow: false, paths: ["**"], deny_hidden: true, max_bytes: 10 } } } }
    expect(Sandbox.decide(off, "fs.read", { path: "workspace/a.txt" })).toMatchObject({ ok: false, reason: "fs.read is not allowed by the policy (allow: false)" })
  })
})

describe("fs.write decisions", () => {
  it.each([
    ["a new file in the allowed folder", "workspace/out/report.txt", "x", true, "workspace/out/report.txt"],
    ["a new file through a dot segment inside", "workspace/out/../out/r2.txt", "x", true, "workspace/out/r2.txt"],
    ["a file outside the write paths (but readable)", "workspace/a.txt", "x", false, "outside the allowed paths"],
    ["traversal out of the write folder", "workspace/out/../../secret.txt", "x", false, "outside the allowed paths"],
    ["an absolute path outside", path.join(outside, "x.txt"), "x", false, "outside the allowed paths"],
    ["an existing link inside the folder", "workspace/out/link-to-a", "x", false, "is a link"],
    ["a dangling link pointing outside", "workspace/out/dangling-out", "x", false, "is a link"],
    ["through a directory link to outside", "workspace/out/escape/new.txt", "x", false, "outside the allowed paths"],
    ["a hidden file", "workspace/out/.profile", "x", false, "hidden"],
    ["a missing directory", "workspace/out/missing/x.txt", "x", false, "does not exist"],
    ["a folder, not a file", "workspace/out/..", "x", false, "names no file"],
    ["content over max_bytes", "workspace/out/big.txt", "y".repeat(65), false, "over fs.write's max_bytes"],
    ["a NUL byte", "workspace/out/a\u0000b", "x", false, "NUL"],
    ["a hard link to a file outside the write paths", "workspace/out/hard-link", "x", false, "other hard links"]
  ])("%s: %s", (_what, requested, content, ok, reason) => {
    const decision = Sandbox.decide(policy, "fs.write", { path: requested, content })
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })
})

const [read, write] = Sandbox.tools(policy)
const call = (tool: typeof read, args: unknown) =>
  Effect.runPromise(Effect.either(tool!.invoke(args, context)))

describe("the tools, end to end", () => {
  it("fs.read returns the content; over max_bytes is a denial naming the cap, not a truncation", async () => {
    expect(await call(read, { path: "workspace/a.txt" })).toMatchObject({ _tag: "Right", right: { path: "workspace/a.txt", content: "hello", bytes: 5 } })
    const big = await call(read, { path: "workspace/big.bin" })
    expect(big._tag === "Left" && big.left).toMatchObject({ _tag: "PolicyDenied", tool: "fs.read", reason: expect.stringContaining("over fs.read's max_bytes (1024)") })
  })

  it("fs.write creates the file, and refuses with the reason, writing nothing", async () => {
    expect(await call(write, { path: "workspace/out/new.txt", content: "written" })).toMatchObject({ _tag: "Right", right: { bytes: 7 } })
    expect(fs.readFileSync(w("out/new.txt"), "utf8")).toBe("written")
    const refused = await call(write, { path: "workspace/out/link-to-a", content: "overwrite" })
    expect(refused._tag === "Left" && refused.left).toMatchObject({ _tag: "PolicyDenied", tool: "fs.write", reason: expect.stringContaining("workspace/out/link-to-a is a link") })
    expect(fs.readFileSync(w("a.txt"), "utf8")).toBe("hello")
  })
})

describe("a file swapped between the check and the open", () => {
  it("a read whose file became a link to outside is refused", async () => {
    file(w("swap.txt"), "innocent")
    const rule = policy.document.tools["fs.read"]!
    const { checkRead, readChecked } = await import("../src/internal/fsGuard.js")
    const decision = checkRead(base, rule, "workspace/swap.txt")
    expect(decision.ok).toBe(true)
    fs.rmSync(w("swap.txt"))
    fs.symlinkSync(path.join(outside, "passwd"), w("swap.txt"))
    const result = decision.ok ? readChecked(decision, 1024) : undefined
    expect(result).toMatchObject({ denied: "workspace/swap.txt became a link after the check" })
  })

  it("a read whose folder became a link to outside is refused (the opened file is not where the check said)", async () => {
    file(w("moved/data.txt"), "inside")
    file(path.join(outside, "data.txt"), "outside")
    const { checkRead, readChecked } = await import("../src/internal/fsGuard.js")
    const decision = checkRead(base, policy.document.tools["fs.read"]!, "workspace/moved/data.txt")
    expect(decision.ok).toBe(true)
    fs.rmSync(w("moved"), { recursive: true })
    fs.symlinkSync(outside, w("moved"))
    expect(decision.ok && readChecked(decision, 1024)).toMatchObject({ denied: expect.stringContaining("workspace/moved/data.txt changed between the check and the open") })
  })

  it("a write whose folder became a link to outside is refused, and nothing is left outside", async () => {
    fs.mkdirSync(w("out/moving"), { recursive: true })
    const { checkWrite, writeChecked } = await import("../src/internal/fsGuard.js")
    const decision = checkWrite(base, policy.document.tools["fs.write"]!, "workspace/out/moving/x.txt")
    expect(decision.ok).toBe(true)
    fs.rmSync(w("out/moving"), { recursive: true })
    fs.symlinkSync(outside, w("out/moving"))
    const result = decision.ok ? writeChecked(decision, Buffer.from("payload")) : undefined
    expect(result).toMatchObject({ denied: expect.stringContaining("workspace/out/moving/x.txt changed between the check and the open") })
    expect(fs.existsSync(path.join(outside, "x.txt"))).toBe(false)
  })

  it("a write whose target became a link is refused, and the link's target is untouched", async () => {
    const { checkWrite, writeChecked } = await import("../src/internal/fsGuard.js")
    const decision = checkWrite(base, policy.document.tools["fs.write"]!, "workspace/out/target.txt")
    fs.symlinkSync(path.join(outside, "passwd"), w("out/target.txt"))
    expect(decision.ok && writeChecked(decision, Buffer.from("pwned"))).toMatchObject({ denied: "workspace/out/target.txt became a link after the check" })
    expect(fs.readFileSync(path.join(outside, "passwd"), "utf8")).toBe("root:x:0:0")
  })
})

describe("a base directory whose name holds glob characters", () => {
  // Its name is never read as a pattern: `ws[ab]` is not a character class matching the sibling `wsa`.
  const parent = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "artana-sandbox-glob-")))
  afterAll(() => fs.rmSync(parent, { recursive: true, force: true }))
  const odd = path.join(parent, "ws[ab] (1)*")
  const sibling = path.join(parent, "wsa (1)x")
  file(path.join(odd, "workspace/a.txt"), "inside")
  file(path.join(sibling, "workspace/secret.txt"), "sibling")
  const p: Policy.Policy = { baseDir: odd, document: { default: "deny", tools: { "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1024 } } } }
  it("its files are allowed, a sibling's that its name would match as a pattern are not", () => {
    expect(Sandbox.decide(p, "fs.read", { path: "workspace/a.txt" })).toMatchObject({ ok: true, filesRead: ["workspace/a.txt"] })
    expect(Sandbox.decide(p, "fs.read", { path: path.join(sibling, "workspace/secret.txt") })).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    expect(Sandbox.decide(p, "fs.read", { path: "../wsa (1)x/workspace/secret.txt" })).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
  })
})
