// What git on the host would run of what a contained command wrote in a writable folder: a person reviews an agent's
// work with `git status`, and that must not run a program the command chose. Each case plants a `core.fsmonitor` (a
// program git runs at `git status`) the way an attacker would, then runs the host's git as a person would. Real bwrap.
import { describe, expect, it } from "vitest"
import type { Policy } from "@artana/sandbox"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { contained, sh, tempFolder } from "./fixtures.js"

const shell = (): Policy.ShellRule => ({ allow: true, executables: ["sh", "git"], denied_tokens: [], timeout_ms: 20_000, max_output_bytes: 1_048_576, ...contained })
const fsRule = (paths: ReadonlyArray<string>, denyHidden = true) => ({ allow: true, paths: [...paths], deny_hidden: denyHidden, max_bytes: 1_048_576 })
const policy = (base: string, denyHidden = true): Policy.Policy => ({
  baseDir: base,
  document: { default: "deny", tools: { "shell.run": shell(), "fs.read": fsRule(["workspace/**"]), "fs.write": fsRule(["workspace/**"], denyHidden) } }
})

const ID = "-c user.name=Ada -c user.email=ada@example.com"
const hostGit = (cwd: string, ...args: ReadonlyArray<string>) =>
  execFileSync("git", ["-c", "user.name=Host", "-c", "user.email=host@example.com", ...args], { cwd, encoding: "utf8", stdio: "pipe" })

/** A workspace holding a repository with one commit, and the marker a planted program would create. */
const workspace = (name: string) => {
  const base = tempFolder(`git-${name}`)
  const repo = path.join(base, "workspace/repo")
  fs.mkdirSync(repo, { recursive: true })
  hostGit(base, "init", "-q", repo)
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n")
  hostGit(repo, "add", "a.txt")
  hostGit(repo, "commit", "-qm", "a")
  const marker = path.join(tempFolder(`git-${name}-outside`), "pwned")
  return { base, repo, marker, fsmonitor: `'touch ${marker}; false'` }
}

describe("a command cannot make the host's git run a program of its choosing", () => {
  it("a commondir pointing at a repository the command planted: removed, and the call fails saying so", async () => {
    const w = workspace("commondir")
    const p = policy(w.base)
    const out = await sh(p, [
      "cd workspace/repo",
      "git init -q --bare ../planted",
      `git config --file ../planted/config core.fsmonitor ${w.fsmonitor}`,
      "echo ../../planted > .git/commondir"
    ].join(" && "))
    expect(out).toMatch(/^ERROR .*commondir \(removed\)/)
    expect(fs.existsSync(path.join(w.repo, ".git/commondir"))).toBe(false)
    hostGit(w.repo, "status")
    expect(fs.existsSync(w.marker)).toBe(false)
    // The bare repository it planted is no repository to git any more (git would run its programs there too).
    expect(out).toMatch(/workspace\/planted \(a repository the command made; its HEAD moved to .*planted\/HEAD-untrusted\)/)
    expect(() => hostGit(path.join(w.base, "workspace/planted"), "rev-parse", "--git-dir")).toThrow(/not a git repository/)
  }, 60_000)

  it("a repository the command made and named in the index as a submodule: moved aside, so `git status` does not enter it", async () => {
    const w = workspace("gitlink")
    const p = policy(w.base)
    const out = await sh(p, [
      "cd workspace/repo",
      "git init -q evil",
      `git -C evil ${ID} commit -q --allow-empty -m e`,
      `git -C evil config core.fsmonitor ${w.fsmonitor}`,
      "git update-index --add --cacheinfo 160000,$(git -C evil rev-parse HEAD),evil"
    ].join(" && "))
    expect(out).toMatch(/^ERROR .*evil\/\.git \(a repository the command made; its HEAD moved to .*evil\/\.git-untrusted\/HEAD-untrusted, itself to .*evil\/\.git-untrusted\)/)
    expect(fs.readFileSync(path.join(w.repo, "evil/.git-untrusted/config"), "utf8")).toContain("fsmonitor")
    hostGit(w.repo, "status")
    expect(fs.existsSync(w.marker)).toBe(false)
  }, 60_000)

  it("a submodule's git directory the command made under .git/modules, or one of an existing submodule changed", async () => {
    const w = workspace("modules")
    // An existing submodule, absorbed: its git directory is .git/modules/lib.
    const lib = path.join(tempFolder("git-modules-lib"), "lib")
    hostGit(path.dirname(lib), "init", "-q", lib)
    hostGit(lib, "commit", "-q", "--allow-empty", "-m", "lib")
    hostGit(w.repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
    hostGit(w.repo, "commit", "-qm", "lib")
    const p = policy(w.base)
    const changed = await sh(p, `cd workspace/repo && git config --file .git/modules/lib/config core.fsmonitor ${w.fsmonitor}; echo x > .git/modules/lib/hooks/post-checkout`)
    expect(changed).toMatch(/Read-only file system/)
    const made = await sh(p, [
      "cd workspace/repo",
      "git init -q --bare .git/modules/evil",
      `git config --file .git/modules/evil/config core.fsmonitor ${w.fsmonitor}`,
      "echo ok"
    ].join(" && "))
    expect(made).toMatch(/^ERROR .*\.git\/modules\/evil \(removed\)/)
    expect(fs.existsSync(path.join(w.repo, ".git/modules/evil"))).toBe(false)
    hostGit(w.repo, "status")
    expect(fs.existsSync(w.marker)).toBe(false)
    // git itself still works in the sandbox: status, add, commit, in the repository and its submodule.
    expect(await sh(p, `cd workspace/repo && echo b > b.txt && git add b.txt && git ${ID} commit -qm b && git -C lib status --short && echo committed`))
      .toContain("committed")
    expect(hostGit(w.repo, "log", "--format=%s", "-1").trim()).toBe("b")
  }, 60_000)

  it("a linked worktree's .git file in the writable folder cannot be pointed at another git directory", async () => {
    const w = workspace("worktree")
    const linked = path.join(w.base, "workspace/linked")
    hostGit(w.repo, "worktree", "add", "-q", linked)
    // A git directory with a program in its configuration, outside the writable folder (the command cannot change it).
    const planted = path.join(tempFolder("git-worktree-planted"), "planted")
    hostGit(path.dirname(planted), "init", "-q", "--bare", planted)
    hostGit(planted, "config", "core.fsmonitor", `touch ${w.marker}; false`)
    const before = fs.readFileSync(path.join(linked, ".git"), "utf8")
    const out = await sh(policy(w.base), `echo gitdir: ${planted} > workspace/linked/.git`)
    expect(out).toMatch(/Read-only file system|busy/)
    expect(fs.readFileSync(path.join(linked, ".git"), "utf8")).toBe(before)
    hostGit(linked, "status")
    expect(fs.existsSync(w.marker)).toBe(false)
  }, 60_000)

  it("a repository whose .git is a link: left alone by a call that uses it, put back when a command points it elsewhere", async () => {
    const w = workspace("linked-gitdir")
    // The repository's git directory moved beside it (a folder git takes for one: guarded as such), a link in its place.
    const gitDir = path.join(w.base, "workspace/store/repo.git")
    fs.mkdirSync(path.dirname(gitDir))
    fs.renameSync(path.join(w.repo, ".git"), gitDir)
    fs.symlinkSync(gitDir, path.join(w.repo, ".git"))
    const p = policy(w.base)
    expect(await sh(p, `cd workspace/repo && echo b > b.txt && git add b.txt && git ${ID} commit -qm b && echo committed`)).toContain("committed")
    expect(fs.readlinkSync(path.join(w.repo, ".git"))).toBe(gitDir)
    expect(await sh(p, `git config --file workspace/store/repo.git/config core.fsmonitor ${w.fsmonitor}`)).toMatch(/busy|Read-only/)
    const out = await sh(p, [
      "cd workspace/repo",
      "git init -q --bare ../planted",
      `git config --file ../planted/config core.fsmonitor ${w.fsmonitor}`,
      "rm .git && ln -s ../planted .git"
    ].join(" && "))
    expect(out).toMatch(/^ERROR .*repo\/\.git \(a link to the repository's git directory, changed: put back; what was there moved to .*\.git-untrusted\)/)
    expect(fs.readlinkSync(path.join(w.repo, ".git"))).toBe(gitDir)
    hostGit(w.repo, "status")
    expect(fs.existsSync(w.marker)).toBe(false)
    expect(hostGit(w.repo, "log", "--format=%s", "-1").trim()).toBe("b")
  }, 60_000)

  it("a plain repository a command makes is kept, and from the next call on its configuration is read-only", async () => {
    const w = workspace("plain")
    const p = policy(w.base)
    expect(await sh(p, `cd workspace && git init -q fresh && cd fresh && echo x > x.txt && git add x.txt && git ${ID} commit -qm x && echo made`))
      .toContain("made")
    expect(hostGit(path.join(w.base, "workspace/fresh"), "log", "--format=%s").trim()).toBe("x")
    expect(await sh(p, `git config --file workspace/fresh/.git/config core.fsmonitor ${w.fsmonitor}`)).toMatch(/Read-only file system|busy/)
  }, 60_000)

  it("where fs.write allows hidden files, the policy trusts commands with git's files: nothing is undone", async () => {
    const w = workspace("trusted")
    const out = await sh(policy(w.base, false), "cd workspace/repo && echo ../.. > .git/commondir.keep && git init -q own && git -C own config core.fsmonitor true && echo done")
    expect(out).toContain("done")
    expect(fs.existsSync(path.join(w.repo, "own/.git/config"))).toBe(true)
  }, 60_000)
})

describe("a repository in a read-only folder inside a read-write one", () => {
  it("stays read-only: guarding the read-write folder's repositories does not bind it writable", async () => {
    const base = tempFolder("git-nested-ro")
    const repo = path.join(base, "workspace/docs/repo")
    fs.mkdirSync(repo, { recursive: true })
    hostGit(base, "init", "-q", repo)
    const before = fs.readFileSync(path.join(repo, ".git/description"), "utf8")
    const p: Policy.Policy = {
      baseDir: base,
      document: { default: "deny", tools: { "shell.run": shell(), "fs.read": fsRule(["workspace/docs/**"]), "fs.write": fsRule(["workspace/**"]) } }
    }
    expect(await sh(p, "echo changed > workspace/docs/repo/.git/description; echo x > workspace/docs/new.txt")).toMatch(/Read-only file system/)
    expect(fs.readFileSync(path.join(repo, ".git/description"), "utf8")).toBe(before)
  }, 60_000)
})
