// What a command leaves in a writable folder for the next call's sandbox to bind: links, and a repository swapped
// for another. Each sandbox is built from the files as they are when the call starts, and bwrap follows links in what
// it binds, so a link planted by one call must not become a bind of the next. Real bwrap; skipped nowhere.
import { describe, expect, it } from "vitest"
import type { Policy } from "@artana/sandbox"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { contained, sh, tempFolder } from "./fixtures.js"

const shell = (): Policy.ShellRule => ({ allow: true, executables: ["sh", "cat", "ln", "git"], denied_tokens: [], timeout_ms: 20_000, max_output_bytes: 1_048_576, ...contained })
const fsRule = (paths: ReadonlyArray<string>) => ({ allow: true, paths: [...paths], deny_hidden: true, max_bytes: 1_048_576 })
const policy = (base: string, read: ReadonlyArray<string>, write: ReadonlyArray<string>): Policy.Policy =>
  ({ baseDir: base, document: { default: "deny", tools: { "shell.run": shell(), "fs.read": fsRule(read), "fs.write": fsRule(write) } } })

describe("a link a command planted is not bound by the next call's sandbox", () => {
  it("a link matching a finer read glob (`**/*.md`) to a file beside the policy, or to /etc/shadow", async () => {
    const base = tempFolder("links-finer")
    fs.mkdirSync(path.join(base, "out"))
    fs.writeFileSync(path.join(base, "secret.txt"), "SECRET=beside-policy\n")
    fs.writeFileSync(path.join(base, "out/readme.md"), "# shown\n")
    const p = policy(base, ["**/*.md"], ["out/**"])
    expect(await sh(p, "cat ../secret.txt secret.txt /etc/shadow")).toMatch(/No such file/)
    await sh(p, "ln -s ../secret.txt out/notes.md && ln -s ../../../etc/shadow out/x.md")
    // The next call: a new sandbox, built from the files as they are now.
    const next = await sh(p, "cat out/readme.md; cat out/notes.md; head -n1 out/x.md")
    expect(next).toContain("# shown")
    expect(next).not.toContain("SECRET=beside-policy")
    expect(next).not.toMatch(/^root:/m)
  }, 60_000)

  it("a read glob's folder inside a writable folder, made a link to /etc: not bound, the rest still is", async () => {
    const base = tempFolder("links-root")
    fs.mkdirSync(path.join(base, "workspace"))
    fs.writeFileSync(path.join(base, "workspace/kept.txt"), "kept\n")
    const p = policy(base, ["workspace/**", "workspace/data/**"], ["workspace/**"])
    await sh(p, "ln -s /etc workspace/data")
    const after = await sh(p, "cat workspace/kept.txt; head -n1 /etc/shadow; ls /etc/shadow workspace/data/shadow")
    expect(after).toContain("kept")
    expect(after).not.toMatch(/^root:/m)
    expect(after).toMatch(/No such file/)
  }, 60_000)

  it("a write glob's folder inside a writable folder, made a link to a folder outside: not bound read-write", async () => {
    const base = tempFolder("links-write")
    const outside = tempFolder("links-write-outside")
    fs.mkdirSync(path.join(base, "workspace"))
    const p = policy(base, ["workspace/**"], ["workspace/**", "workspace/cache/**"])
    await sh(p, `ln -s ${outside} workspace/cache`)
    await sh(p, `echo planted > ${outside}/planted.txt; echo planted > workspace/cache/planted.txt`)
    expect(fs.existsSync(path.join(outside, "planted.txt"))).toBe(false)
  }, 60_000)
})

describe("a repository in a writable folder", () => {
  it("cannot be swapped for a copy with a configuration of its own: its .git cannot be renamed", async () => {
    const base = tempFolder("links-git")
    const marker = path.join(tempFolder("links-git-outside"), "pwned")
    const repo = path.join(base, "workspace/repo")
    fs.mkdirSync(repo, { recursive: true })
    execFileSync("git", ["init", "-q", repo])
    const p = policy(base, ["workspace/**"], ["workspace/**"])
    expect(await sh(p, "echo x >> workspace/repo/.git/config")).toMatch(/Read-only file system/)
    const swapped = await sh(p, [
      "cd workspace/repo && cp -r .git .git-new",
      `git config --file .git-new/config core.fsmonitor 'touch ${marker}; false'`,
      "mv .git .git-old && mv .git-new .git && echo swapped"
    ].join(" && "))
    expect(swapped).not.toContain("swapped")
    // The rename fails (a mount point); the copy it left, a repository with a program in its configuration, is made inert.
    expect(swapped).toMatch(/\.git-new \(a repository the command made; its HEAD moved/)
    // A person's git on the host reads the repository's own configuration: nothing of the command's runs.
    execFileSync("git", ["-C", repo, "status"], { stdio: "pipe" })
    expect(fs.existsSync(marker)).toBe(false)
    expect(fs.existsSync(path.join(repo, ".git/hooks"))).toBe(true)
  }, 60_000)
})
