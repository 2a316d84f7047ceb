// git and the repository it works in: a repository's own configuration can make git run programs or read other
// files, its remotes can be local paths anywhere, and most subcommands write it. Real repositories in temp folders,
// and real runs showing that what is refused never runs.
import { describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { type Policy, Sandbox } from "@artana/sandbox"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { context, tempFolder, uncontained } from "./fixtures.js"


const base = tempFolder("repo")
const outside = tempFolder("repo-out")

const git = (...args: ReadonlyArray<string>) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { stdio: "pipe" })
const repository = (dir: string) => {
  git("init", "-q", dir)
  fs.writeFileSync(path.join(dir, "a.txt"), "a")
  git("-C", dir, "add", "a.txt")
  git("-C", dir, "commit", "-q", "-m", "first")
  fs.writeFileSync(path.join(dir, "a.txt"), "changed")
  return dir
}
const w = (p: string) => path.join(base, "workspace", p)
/** Commits `file` with `before` in the repository at `dir`, then changes it to `after` in the work tree. */
const committedThenChanged = (dir: string, file: string, before: string, after: string) => {
  fs.writeFileSync(path.join(dir, file), before)
  git("-C", dir, "add", file)
  git("-C", dir, "commit", "-q", "-m", file)
  fs.writeFileSync(path.join(dir, file), after)
}
fs.mkdirSync(w("out"), { recursive: true })

// A program a repository's configuration could name: it leaves a marker outside the workspace if it ever runs.
const marker = path.join(outside, "ran")
const program = path.join(outside, "program.sh")
fs.writeFileSync(program, `#!/bin/sh\ntouch ${marker}\ncat\n`, { mode: 0o755 })

const policy: Policy.Policy = {
  baseDir: base,
  document: {
    default: "deny",
    tools: {
      "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1024 },
      "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1024 },
      "shell.run": { allow: true, executables: ["git"], denied_tokens: [], timeout_ms: 5000, max_output_bytes: 65_536, ...uncontained }
    }
  }
}
const decide = (args: ReadonlyArray<string>, p: Policy.Policy = policy) => Sandbox.decide(p, "shell.run", { command: "git", args })
const run = async (args: ReadonlyArray<string>, p: Policy.Policy = policy) => {
  const tool = Sandbox.tools(p).find((t) => t.name === "shell.run")!
  const outcome = await Effect.runPromise(Effect.either(tool.invoke({ command: "git", args }, context)))
  return Either.isRight(outcome)
    ? { ok: true as const, value: outcome.right as { readonly exitCode: number | null; readonly stdout: string; readonly stderr: string } }
    : { ok: false as const, tag: outcome.left._tag, message: outcome.left.message }
}

describe("a repository's configuration", () => {
  // Each key, set in a repository of its own, makes git refuse to work there (names as git prints them).
  it.each([
    ["diff.external (git diff runs it)", "diff.external", program],
    ["a diff driver's textconv", "diff.pdf.textconv", program],
    ["a diff driver's command", "diff.pdf.command", program],
    ["a clean filter (git add, git status run it)", "filter.lfs.clean", program],
    ["a smudge filter", "filter.lfs.smudge", program],
    ["a long-running filter process", "filter.lfs.process", program],
    ["a merge driver", "merge.ours.driver", program],
    ["an alias running a shell command", "alias.st", `!${program}`],
    ["an include of another file", "include.path", path.join(outside, "more.config")],
    ["a conditional include", "includeIf.gitdir:/.path", path.join(outside, "more.config")],
    ["gpg.program", "gpg.program", program],
    ["signing every commit", "commit.gpgSign", "true"],
    ["core.sshCommand", "core.sshCommand", program],
    ["core.gitProxy", "core.gitProxy", program],
    ["core.askPass", "core.askPass", program],
    ["core.pager", "core.pager", program],
    ["core.editor", "core.editor", program],
    ["core.fsmonitor", "core.fsmonitor", program],
    ["core.hooksPath", "core.hooksPath", outside],
    ["core.worktree (a work tree elsewhere)", "core.worktree", outside],
    ["core.excludesFile (reads another file)", "core.excludesFile", path.join(outside, "ignore")],
    ["core.attributesFile", "core.attributesFile", path.join(outside, "attributes")],
    ["commit.template (reads another file)", "commit.template", path.join(outside, "template")],
    ["mailmap.file", "mailmap.file", path.join(outside, "mailmap")],
    ["a credential helper", "credential.helper", program],
    ["a remote's upload-pack", "remote.origin.uploadpack", program],
    ["a remote's helper (vcs)", "remote.origin.vcs", "evil"],
    ["a submodule's update command", "submodule.lib.update", `!${program}`],
    ["the pack-objects hook", "uploadpack.packObjectsHook", program],
    ["an interactive diff filter", "interactive.diffFilter", program],
    ["a sequence editor", "sequence.editor", program],
    ["a web browser", "web.browser", program],
    ["protocol permissions", "protocol.allow", "always"],
    ["safe.directory", "safe.directory", "*"]
  ])("%s is refused", (_what, key, value) => {
    const dir = w(`config-${key.replace(/[^a-zA-Z]/g, "-")}`)
    repository(dir)
    git("-C", dir, "config", key, value)
    const decision = decide(["-C", path.relative(base, dir), "status"])
    expect(decision.ok).toBe(false)
    // git prints a key's section and name in lower case, its subsection as written.
    const [section, ...restOfKey] = key.split(".")
    const name = restOfKey.pop()!
    const printed = [section!.toLowerCase(), ...restOfKey, name.toLowerCase()].join(".")
    expect(decision.reason).toContain(`.git/config sets ${printed}, which shell.run does not let git read`)
  })

  it.each([
    ["a fresh repository", [] as ReadonlyArray<readonly [string, string]>],
    ["identities", [["user.name", "A"], ["user.email", "a@example.com"]] as const],
    ["branches and remotes", [["remote.origin.url", "https://example.com/r.git"], ["remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"], ["branch.main.remote", "origin"], ["branch.main.merge", "refs/heads/main"]] as const],
    ["display settings", [["color.ui", "auto"], ["color.diff.meta", "blue"], ["log.date", "iso"], ["advice.detachedHead", "false"]] as const]
  ])("%s: allowed", (what, entries) => {
    const dir = w(`allowed-${what.replace(/[^a-z]/g, "-")}`)
    repository(dir)
    for (const [key, value] of entries) git("-C", dir, "config", key, value)
    expect(decide(["-C", path.relative(base, dir), "status"])).toMatchObject({ ok: true })
  })

  it("a configuration git cannot parse is refused, naming the file", () => {
    const dir = repository(w("broken-config"))
    fs.appendFileSync(path.join(dir, ".git/config"), "[broken\n")
    expect(decide(["-C", "workspace/broken-config", "log"])).toMatchObject({ ok: false, reason: expect.stringContaining("workspace/broken-config/.git/config cannot be read") })
  })

  it("the refused configuration never runs: git diff with diff.external, for real", async () => {
    const dir = repository(w("out/external"))
    git("-C", dir, "config", "diff.external", program)
    expect(await run(["-C", "workspace/out/external", "diff"])).toMatchObject({ ok: false, tag: "PolicyDenied", message: expect.stringContaining("sets diff.external") })
    expect(fs.existsSync(marker)).toBe(false)
    // Without it, the same command runs.
    git("-C", dir, "config", "--unset", "diff.external")
    expect(await run(["-C", "workspace/out/external", "diff", "--stat"])).toMatchObject({ ok: true, value: { exitCode: 0, stdout: expect.stringContaining("a.txt") } })
    expect(fs.existsSync(marker)).toBe(false)
  })

  it("a linked worktree's configuration and a bare repository's are read too", () => {
    const bare = w("bare.git")
    git("init", "-q", "--bare", bare)
    git("-C", bare, "config", "core.sshCommand", program)
    expect(decide(["-C", "workspace/bare.git", "log"])).toMatchObject({ ok: false, reason: expect.stringContaining("bare.git/config sets core.sshcommand") })
    const main = repository(w("with-worktree"))
    git("-C", main, "worktree", "add", "-q", w("linked"))
    expect(decide(["-C", "workspace/linked", "status"])).toMatchObject({ ok: true })
    git("-C", main, "config", "diff.external", program)
    expect(decide(["-C", "workspace/linked", "status"])).toMatchObject({ ok: false, reason: expect.stringContaining("sets diff.external") })
  })

  it("--git-dir naming a repository with such a configuration is refused (with hidden files allowed)", () => {
    const dir = repository(w("explicit"))
    git("-C", dir, "config", "filter.x.clean", program)
    const open: Policy.Policy = { ...policy, document: { ...policy.document, tools: { ...policy.document.tools, "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: false, max_bytes: 1024 } } } }
    expect(decide(["-C", "workspace", "--git-dir=explicit/.git", "--work-tree=explicit", "status"], open)).toMatchObject({ ok: false, reason: expect.stringContaining("sets filter.x.clean") })
  })
})

describe("where a repository's objects and remotes are", () => {
  it("alternates outside the readable area are refused; inside it they are fine", () => {
    const lender = repository(path.join(outside, "lender"))
    const dir = repository(w("borrower"))
    fs.writeFileSync(path.join(dir, ".git/objects/info/alternates"), `${path.join(lender, ".git/objects")}\n`)
    expect(decide(["-C", "workspace/borrower", "log"])).toMatchObject({ ok: false, reason: expect.stringContaining("objects/info/alternates") })
    const near = repository(w("near-lender"))
    fs.writeFileSync(path.join(dir, ".git/objects/info/alternates"), `${path.join(near, ".git/objects")}\n`)
    expect(decide(["-C", "workspace/borrower", "log"])).toMatchObject({ ok: true })
  })

  it("a worktree whose common directory is outside is refused", () => {
    const main = repository(path.join(outside, "main-repo"))
    git("-C", main, "worktree", "add", "-q", w("stray-worktree"))
    expect(decide(["-C", "workspace/stray-worktree", "status"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the readable area") })
  })

  it("a remote that is a local path outside the readable area cannot be fetched from (nor pushed to); other commands still run", () => {
    const upstream = repository(path.join(outside, "upstream"))
    const dir = repository(w("out/cloned"))
    git("-C", dir, "remote", "add", "up", upstream)
    git("-C", dir, "remote", "add", "up-url", `file://${upstream}`)
    expect(decide(["-C", "workspace/out/cloned", "fetch", "up"])).toMatchObject({ ok: false, reason: expect.stringContaining(`remote.up.url is ${upstream}`) })
    expect(decide(["-C", "workspace/out/cloned", "pull", "up-url"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    expect(decide(["-C", "workspace/out/cloned", "log"])).toMatchObject({ ok: true })
  })

  it("a remote named by a relative path is found from the work tree's top, where git runs, not from -C's directory", async () => {
    const upstream = repository(path.join(outside, "top-relative"))
    const dir = repository(w("out/deep"))
    fs.mkdirSync(path.join(dir, "a/b"), { recursive: true })
    // From the top this path reaches the repository outside; from a/b it would name a folder inside the workspace.
    const escape = path.relative(dir, upstream)
    for (const args of [["fetch", escape], ["pull", escape], ["ls-remote", escape], ["push", escape, "HEAD:refs/heads/x"], ["archive", `--remote=${escape}`, "HEAD"]]) {
      expect(decide(["-C", "workspace/out/deep/a/b", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    }
    expect(fs.readdirSync(path.join(upstream, ".git/refs/heads"))).not.toContain("x")
    // A sibling named the same way is inside: git fetches it from there.
    repository(w("out/sibling"))
    const fetched = await run(["-C", "workspace/out/deep/a/b", "fetch", "-q", "../sibling", "HEAD"])
    expect(fetched).toMatchObject({ ok: true, value: { exitCode: 0 } })
  })

  it("a remote that is a bare word names a path; git also tries <path>.git (and a clone <path>.bundle), which are judged too", () => {
    const upstream = repository(path.join(outside, "linked"))
    const dir = repository(w("out/words"))
    fs.symlinkSync(upstream, path.join(dir, "link.git"))
    git("-C", dir, "remote", "add", "o", "link")
    expect(decide(["-C", "workspace/out/words", "fetch", "o"])).toMatchObject({ ok: false, reason: expect.stringContaining("remote.o.url is link") })
    expect(decide(["-C", "workspace/out/words", "fetch", "link"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    expect(decide(["-C", "workspace/out/words", "clone", "link", "../word-clone"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    fs.writeFileSync(path.join(outside, "secret.bundle"), "x")
    fs.symlinkSync(path.join(outside, "secret.bundle"), path.join(dir, "pack.bundle"))
    expect(decide(["-C", "workspace/out/words", "clone", "pack", "../pack-clone"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    // A trailing slash is dropped before the suffix, as git drops it: link/ is link.git too.
    git("-C", dir, "remote", "remove", "o")
    for (const args of [["fetch", "link/", "HEAD"], ["push", "link/", "HEAD:refs/heads/x"], ["archive", "--remote=link/", "HEAD"], ["fetch", "file://link/"]]) {
      expect(decide(["-C", "workspace/out/words", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    }
    // A word that is a configured remote is that remote, not a path.
    expect(decide(["-C", "workspace/out/words", "log"])).toMatchObject({ ok: true })
  })

  it("a remote in a home directory (~, ~user) is refused: git expands it", () => {
    const dir = repository(w("out/tilde"))
    git("-C", dir, "remote", "add", "home", "~root/repo")
    expect(decide(["-C", "workspace/out/tilde", "fetch", "home"])).toMatchObject({ ok: false, reason: expect.stringContaining("home directory") })
    expect(decide(["-C", "workspace/out/tilde", "fetch"])).toMatchObject({ ok: false, reason: expect.stringContaining("home directory") })
    expect(decide(["-C", "workspace/out/tilde", "status"])).toMatchObject({ ok: true })
  })

  it("branch.<name>.remote may name a path instead of a remote: fetch and pull without a remote reach it", () => {
    const upstream = repository(path.join(outside, "tracked"))
    const dir = repository(w("out/tracking"))
    git("-C", dir, "config", "branch.master.remote", upstream)
    git("-C", dir, "config", "branch.main.pushremote", upstream)
    for (const args of [["fetch"], ["pull"], ["push"]]) {
      expect(decide(["-C", "workspace/out/tracking", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining(`is ${upstream}`) })
    }
    // "." (the repository itself) and a configured remote's name are no paths to judge.
    git("-C", dir, "config", "branch.master.remote", ".")
    git("-C", dir, "config", "--unset", "branch.main.pushremote")
    expect(decide(["-C", "workspace/out/tracking", "fetch"])).toMatchObject({ ok: true })
  })

  it("every argument of fetch, pull and ls-remote may be the remote (options take separate values): each is judged", () => {
    const secret = repository(path.join(outside, "multi-secret"))
    const dir = repository(w("out/multi"))
    git("-C", dir, "remote", "add", "good", w("plain"))
    git("-C", dir, "remote", "add", "evil", secret)
    for (const args of [["fetch", "-m", "good", "evil"], ["fetch", "--mul", "good", "evil"], ["fetch", "--depth", "1", "evil"], ["pull", "-X", "theirs", "evil", "main"], ["ls-remote", "-o", "x", "evil"]]) {
      expect(decide(["-C", "workspace/out/multi", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining(`remote.evil.url is ${secret}`) })
    }
    expect(decide(["-C", "workspace/out/multi", "fetch", "--depth", "1", "good"])).toMatchObject({ ok: true })
    // Arguments that name no remote: git may use the default one, so every remote is judged.
    expect(decide(["-C", "workspace/out/multi", "fetch", "--depth", "1"])).toMatchObject({ ok: false, reason: expect.stringContaining("remote.evil.url") })
  })

  it("a remote with settings but no URL is no remote to git: its name is a path, judged", () => {
    const secret = repository(path.join(outside, "nameless"))
    const dir = repository(w("out/nameless"))
    git("-C", dir, "config", "remote.foo.prune", "true")
    fs.symlinkSync(secret, path.join(dir, "foo"))
    expect(decide(["-C", "workspace/out/nameless", "fetch", "foo", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
  })

  it("a file URL's host is ignored, as git ignores it: file://x/abs is /abs", () => {
    const secret = repository(path.join(outside, "hosted"))
    repository(w("out/hosted"))
    expect(decide(["-C", "workspace/out/hosted", "fetch", `file://x${secret}`, "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    expect(decide(["-C", "workspace/out", "clone", `file://x${secret}`, "hosted-clone"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
  })

  it("a gitfile (gitdir: <dir>) is followed, as git follows it: as a remote, a clone's source or reference, and --git-dir", () => {
    const secret = path.join(outside, "gitfiled.git")
    git("clone", "-q", "--bare", repository(path.join(outside, "gitfiled")), secret)
    const dir = repository(w("out/gitfiles"))
    // fs.write may write such a file: it is no hidden name.
    fs.writeFileSync(path.join(dir, "pointer"), `gitdir: ${secret}\n`)
    for (const args of [["fetch", "pointer", "HEAD"], ["push", "pointer", "HEAD:refs/heads/x"], ["ls-remote", "pointer"]]) {
      expect(decide(["-C", "workspace/out/gitfiles", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    }
    expect(decide(["-C", "workspace/out/gitfiles", "clone", "pointer", "../gitfile-clone"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    expect(decide(["-C", "workspace/out", "clone", "--reference=gitfiles/pointer", "../plain", "ref-clone"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the allowed paths") })
    expect(decide(["-C", "workspace/out/gitfiles", "--git-dir=pointer", "log"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside the readable area") })
  })

  it("remotes in git's old files ($GIT_DIR/remotes, $GIT_DIR/branches) are refused; remote add --fetch too", () => {
    const secret = repository(path.join(outside, "legacy"))
    const dir = repository(w("out/legacy"))
    fs.mkdirSync(path.join(dir, ".git/remotes"), { recursive: true })
    fs.writeFileSync(path.join(dir, ".git/remotes/origin"), `URL: ${secret}\nPull: refs/heads/master:refs/heads/stolen\n`)
    expect(decide(["-C", "workspace/out/legacy", "fetch", "origin"])).toMatchObject({ ok: false, reason: expect.stringContaining("old remotes format") })
    fs.rmSync(path.join(dir, ".git/remotes"), { recursive: true })
    fs.mkdirSync(path.join(dir, ".git/branches"), { recursive: true })
    fs.writeFileSync(path.join(dir, ".git/branches/up"), `${secret}#master\n`)
    expect(decide(["-C", "workspace/out/legacy", "ls-remote", "up"])).toMatchObject({ ok: false, reason: expect.stringContaining("old remotes format") })
    fs.rmSync(path.join(dir, ".git/branches"), { recursive: true })
    for (const flag of ["-f", "--fetch", "--fe"]) {
      expect(decide(["-C", "workspace/out/legacy", "remote", "add", flag, "o", "../plain"])).toMatchObject({ ok: false, reason: expect.stringContaining("remote add --fetch") })
    }
    expect(decide(["-C", "workspace/out/legacy", "remote", "add", "o", "../plain"])).toMatchObject({ ok: true })
  })

  it("submodules: their repositories' configuration is held to the same list, and git never recurses into them", async () => {
    const source = repository(w("sub-source"))
    const dir = repository(w("out/super"))
    git("-C", dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", source, "sub")
    git("-C", dir, "commit", "-q", "-m", "with a submodule")
    expect(decide(["-C", "workspace/out/super", "status"])).toMatchObject({ ok: true })
    git("-C", path.join(dir, "sub"), "config", "filter.evil.clean", program)
    expect(decide(["-C", "workspace/out/super", "status"])).toMatchObject({ ok: false, reason: expect.stringContaining("modules/sub/config sets filter.evil.clean") })
    git("-C", path.join(dir, "sub"), "config", "--unset", "filter.evil.clean")
    // git works in a submodule too: its repository names this work tree (core.worktree), which is fine.
    expect(decide(["-C", "workspace/out/super/sub", "log"])).toMatchObject({ ok: true })
    // fetch's default would fetch changed submodules too, from remotes nothing judged: shell.run's git never recurses.
    const recursion = await run(["-C", "workspace/out/super", "config", "--get", "fetch.recurseSubmodules"])
    expect(recursion).toMatchObject({ ok: true, value: { exitCode: 0, stdout: "false\n" } })
    const pushing = await run(["-C", "workspace/out/super", "config", "--get", "push.recurseSubmodules"])
    expect(pushing).toMatchObject({ ok: true, value: { exitCode: 0, stdout: "no\n" } })
  })

  it("push writes the repository it pushes to: within fs.write, or refused", async () => {
    const target = w("published.git")
    git("init", "-q", "--bare", target)
    const dir = repository(w("out/pusher"))
    git("-C", dir, "remote", "add", "pub", target)
    expect(decide(["-C", "workspace/out/pusher", "push", "pub", "HEAD:refs/heads/main"])).toMatchObject({ ok: false, reason: expect.stringContaining("git push writes workspace/published.git") })
    expect(decide(["-C", "workspace/out/pusher", "push", "../../published.git", "HEAD:refs/heads/main"])).toMatchObject({ ok: false, reason: expect.stringContaining("git push writes workspace/published.git") })
    const writable = w("out/published.git")
    git("init", "-q", "--bare", writable)
    git("-C", dir, "remote", "add", "ok", writable)
    const pushed = await run(["-C", "workspace/out/pusher", "push", "-q", "ok", "HEAD:refs/heads/main"])
    expect(pushed).toMatchObject({ ok: true, value: { exitCode: 0 } })
    expect(git("-C", writable, "log", "--format=%s", "main").toString()).toBe("first\n")
  })
})

describe("commands that write the repository fall under fs.write", () => {
  repository(w("readonly-repo"))
  it.each([
    ["status", ["status"], true],
    ["log", ["log", "--oneline"], true],
    ["diff", ["diff"], true],
    ["branch, listing", ["branch", "-a"], true],
    ["tag, listing", ["tag"], true],
    ["stash list", ["stash", "list"], true],
    ["remote -v", ["remote", "-v"], true],
    ["commit", ["commit", "-am", "x"], false],
    ["add", ["add", "a.txt"], false],
    ["checkout of a file", ["checkout", "--", "a.txt"], false],
    ["reset --hard", ["reset", "--hard"], false],
    ["clean -fdx", ["clean", "-fdx"], false],
    ["stash", ["stash"], false],
    ["branch, creating", ["branch", "feature"], false],
    ["tag, creating", ["tag", "v1"], false],
    ["gc", ["gc"], false],
    ["format-patch into the repository", ["format-patch", "HEAD~0"], false]
  ])("%s", (_what, args, ok) => {
    const decision = decide(["-C", "workspace/readonly-repo", ...args])
    expect(decision.ok).toBe(ok)
    if (!ok) expect(decision.reason).toMatch(/git [a-z-]+ writes workspace\/readonly-repo(: .*outside the fs.write paths|, and fs.write)/)
  })

  it("a repository within fs.write's paths can be committed to, for real (an identity in its configuration is allowed)", async () => {
    const dir = repository(w("out/writable-repo"))
    git("-C", dir, "config", "user.name", "Agent")
    git("-C", dir, "config", "user.email", "agent@example.com")
    expect(await run(["-C", "workspace/out/writable-repo", "commit", "-q", "-am", "second"])).toMatchObject({ ok: true, value: { exitCode: 0 } })
    expect(git("-C", dir, "log", "--format=%an %s").toString()).toBe("Agent second\nt first\n")
  })
})

describe("the subcommands git may run, and the other repositories it reaches", () => {
  repository(w("plain"))
  it.each([
    ["checkout-index (--prefix writes anywhere)", ["checkout-index", "-a", "--prefix=../../elsewhere/"], "is not a subcommand shell.run lets git run"],
    ["fast-export (marks files)", ["fast-export", "--export-marks=../marks", "HEAD"], "is not a subcommand shell.run lets git run"],
    ["merge-file (writes the file it is given)", ["merge-file", "a.txt", "a.txt", "a.txt"], "is not a subcommand shell.run lets git run"],
    ["mailsplit (writes files)", ["mailsplit", "-o.", "mbox"], "is not a subcommand shell.run lets git run"],
    ["an external git-<name> program (lfs)", ["lfs", "pull"], "is not a subcommand shell.run lets git run"],
    ["gui", ["gui"], "is not a subcommand shell.run lets git run"],
    ["worktree add", ["worktree", "add", "../wt"], "only worktree list is allowed"],
    ["bundle create", ["bundle", "create", "../b.bundle", "HEAD"], "only bundle verify and list-heads are allowed"],
    ["apply --unsafe-paths", ["apply", "--unsafe-paths", "p.diff"], "write outside the work tree"]
  ])("%s is refused", (_what, args, reason) => {
    expect(decide(["-C", "workspace/plain", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining(reason) })
  })

  it.each([
    ["worktree list", ["worktree", "list"]],
    ["bundle verify", ["bundle", "verify", "x.bundle"]],
    ["rev-parse", ["rev-parse", "HEAD"]],
    ["no subcommand at all", ["--version"]]
  ])("%s is allowed", (_what, args) => {
    expect(decide(["-C", "workspace/plain", ...args])).toMatchObject({ ok: true })
  })

  it("a local repository git's transport programs run in is judged too: clone, fetch and push", () => {
    const tainted = repository(w("tainted"))
    git("-C", tainted, "config", "core.alternateRefsCommand", program)
    expect(decide(["-C", "workspace", "clone", "tainted", "out/copy"])).toMatchObject({ ok: false, reason: expect.stringContaining("tainted/.git/config sets core.alternaterefscommand") })
    const dir = repository(w("out/fetcher"))
    git("-C", dir, "remote", "add", "t", tainted)
    expect(decide(["-C", "workspace/out/fetcher", "fetch", "t"])).toMatchObject({ ok: false, reason: expect.stringContaining("sets core.alternaterefscommand") })
    const target = w("out/target.git")
    git("init", "-q", "--bare", target)
    git("-C", target, "config", "receive.procReceiveRefs", "refs/for")
    expect(decide(["-C", "workspace/out/fetcher", "push", "../target.git", "HEAD:refs/heads/main"])).toMatchObject({ ok: false, reason: expect.stringContaining("target.git/config sets receive.procreceiverefs") })
    // The same commands against a clean repository are allowed; a command that names one remote reaches only that one,
    // one that names none may reach any.
    expect(decide(["-C", "workspace", "clone", "plain", "out/copy"])).toMatchObject({ ok: true })
    git("-C", dir, "remote", "add", "clean", w("plain"))
    expect(decide(["-C", "workspace/out/fetcher", "fetch", "clean"])).toMatchObject({ ok: true })
    expect(decide(["-C", "workspace/out/fetcher", "fetch"])).toMatchObject({ ok: false, reason: expect.stringContaining("sets core.alternaterefscommand") })
    expect(decide(["-C", "workspace/out/fetcher", "fetch", "--all"])).toMatchObject({ ok: false, reason: expect.stringContaining("sets core.alternaterefscommand") })
  })

  it("archive --remote reaches a remote: a local one outside the readable area is refused", () => {
    const upstream = repository(path.join(outside, "archive-upstream"))
    const dir = repository(w("out/archiver"))
    git("-C", dir, "remote", "add", "up", upstream)
    expect(decide(["-C", "workspace/out/archiver", "archive", "--remote=up", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("remote.up.url") })
    expect(decide(["-C", "workspace/out/archiver", "archive", "HEAD"])).toMatchObject({ ok: true })
  })
})

describe("what a repository's own files, and commands that write, could reach", () => {
  it("alternates are followed as git follows them, chain and all", () => {
    const secret = repository(path.join(outside, "chained"))
    const first = w("out/b1")
    const second = w("out/b2")
    git("init", "-q", "--bare", first)
    git("init", "-q", "--bare", second)
    fs.writeFileSync(path.join(first, "objects/info/alternates"), "../../b2/objects\n")
    fs.writeFileSync(path.join(second, "objects/info/alternates"), `${path.join(secret, ".git/objects")}\n`)
    expect(decide(["-C", "workspace/out/b1", "cat-file", "--batch-all-objects", "--batch-check"])).toMatchObject({ ok: false, reason: expect.stringContaining("b2/objects/info/alternates") })
  })

  it("a link in a git directory is refused: git reads and writes through it", () => {
    const secret = repository(path.join(outside, "linked-objects"))
    const bare = w("out/linkbare")
    fs.mkdirSync(bare, { recursive: true })
    fs.writeFileSync(path.join(bare, "HEAD"), "ref: refs/heads/main\n")
    fs.symlinkSync(path.join(secret, ".git/objects"), path.join(bare, "objects"))
    fs.symlinkSync(path.join(secret, ".git/refs"), path.join(bare, "refs"))
    expect(decide(["-C", "workspace/out/linkbare", "log", "--all"])).toMatchObject({ ok: false, reason: expect.stringContaining("is a link in the repository's git directory") })
  })

  it("commands that write are judged where they write: apply outside a repository, read-tree's and apply's index files, format-patch's directory", () => {
    fs.writeFileSync(w("out/p.patch"), "")
    expect(decide(["-C", "workspace", "apply", "out/p.patch"])).toMatchObject({ ok: false, reason: expect.stringContaining("git apply writes workspace:") })
    fs.mkdirSync(w("out/patch-here"), { recursive: true })
    expect(decide(["-C", "workspace/out/patch-here", "apply", "../p.patch"])).toMatchObject({ ok: true })
    repository(w("out/indexer"))
    expect(decide(["-C", "workspace/out/indexer", "read-tree", "--index-output=../../important.txt", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/important.txt") })
    expect(decide(["-C", "workspace/out/indexer", "apply", "--build-fake-ancestor=../../important.txt", "../p.patch"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/important.txt") })
    fs.mkdirSync(w("out/indexer/patches"))
    expect(decide(["-C", "workspace/out/indexer", "format-patch", "-1", "-o", "patches"])).toMatchObject({ ok: true })
    fs.symlinkSync(path.join(outside, "victim.txt"), w("out/indexer/patches/0001-first.patch"))
    expect(decide(["-C", "workspace/out/indexer", "format-patch", "-1", "-o", "patches"])).toMatchObject({ ok: false, reason: expect.stringContaining("0001-first.patch is a link") })
  })

  it("branch, tag, stash and notes write unless they only list or show", () => {
    const ro = "workspace/readonly-repo"
    for (const args of [["tag", "-a", "v1", "-m", "x"], ["branch", "-v", "newbranch"], ["branch", "-r", "-d", "origin/main"], ["notes", "--ref", "show", "add", "-m", "n", "HEAD"], ["stash", "-m", "list"], ["tag", "--annotate", "v2"]]) {
      expect(decide(["-C", ro, ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/readonly-repo") })
    }
    for (const args of [["tag"], ["tag", "-l", "v*"], ["tag", "-n"], ["branch", "-v"], ["branch", "-a"], ["branch", "--contains", "HEAD"], ["branch", "--list", "fea*"], ["stash", "list"], ["notes", "--ref=x", "show", "HEAD"], ["notes"]]) {
      expect(decide(["-C", ro, ...args])).toMatchObject({ ok: true })
    }
  })

  it("a repository kept outside its work tree (--work-tree, a gitfile) is read and written where it is kept", () => {
    fs.mkdirSync(w("out/wt"), { recursive: true })
    expect(decide(["-C", "workspace/readonly-repo", "--work-tree=../out/wt", "commit", "--allow-empty", "-m", "x"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/readonly-repo") })
    const hidden = repository(w(".private"))
    fs.writeFileSync(w("out/gf"), `gitdir: ${path.join(hidden, ".git")}\n`)
    expect(decide(["-C", "workspace/out", "--git-dir=gf", "--work-tree=wt", "show", "HEAD:a.txt"])).toMatchObject({ ok: false, reason: expect.stringContaining("hidden") })
  })

  it("maintenance's prefetch reaches the remotes; config --includes and help pages are refused", () => {
    const secret = repository(path.join(outside, "prefetched"))
    const dir = repository(w("out/maint"))
    git("-C", dir, "remote", "add", "evil", secret)
    expect(decide(["-C", "workspace/out/maint", "maintenance", "run", "--task=prefetch"])).toMatchObject({ ok: false, reason: expect.stringContaining("remote.evil.url") })
    fs.writeFileSync(w("out/c.txt"), `[include]\n\tpath = ${path.join(secret, ".git/config")}\n`)
    expect(decide(["-C", "workspace/out", "config", "--file", "c.txt", "--includes", "--list"])).toMatchObject({ ok: false, reason: expect.stringContaining("--includes") })
    expect(decide(["-C", "workspace/out", "config", "--file", "c.txt", "--list"])).toMatchObject({ ok: true })
    expect(decide(["-C", "workspace/out/maint", "help", "../x.1"])).toMatchObject({ ok: false, reason: expect.stringContaining("runs man") })
    expect(decide(["-C", "workspace/out/maint", "log", "--help"])).toMatchObject({ ok: false, reason: expect.stringContaining("runs man") })
    expect(decide(["-C", "workspace/out/maint", "help", "-a"])).toMatchObject({ ok: true })
  })
})

describe("where git's own rules differ from a reading of the files", () => {
  it("the repository git finds must be the one judged: a commondir file, a HEAD git rejects", () => {
    const secret = repository(path.join(outside, "common-secret"))
    fs.mkdirSync(w("out/d"), { recursive: true })
    fs.writeFileSync(w("out/d/HEAD"), "ref: refs/heads/master\n")
    fs.writeFileSync(w("out/d/commondir"), `${path.join(secret, ".git")}\n`)
    // Found as git finds it (its commondir followed), it is judged, and its common directory is outside.
    expect(decide(["-C", "workspace/out/d", "show", "HEAD:a.txt"])).toMatchObject({ ok: false, reason: expect.stringContaining("common directory") })
    const enclosing = repository(w("enclosing"))
    for (const dir of ["x/objects", "x/refs"]) fs.mkdirSync(path.join(enclosing, dir), { recursive: true })
    fs.writeFileSync(path.join(enclosing, "x/HEAD"), "not a ref\n")
    expect(decide(["-C", "workspace/enclosing/x", "checkout", "--", "../a.txt"])).toMatchObject({ ok: false, reason: expect.stringContaining("git would work in the repository at workspace/enclosing/.git") })
    expect(decide(["-C", "workspace/enclosing", "status"])).toMatchObject({ ok: true })
  })

  it("rm, mv and grep follow links in a tracked path's folders: refused when there is one; mv's destination is a write", () => {
    const dir = repository(w("out/linked-tree"))
    fs.mkdirSync(path.join(dir, "v"))
    fs.writeFileSync(path.join(dir, "v/important.txt"), "x")
    git("-C", dir, "add", "v/important.txt")
    git("-C", dir, "commit", "-q", "-m", "v")
    expect(decide(["-C", "workspace/out/linked-tree", "grep", "x"])).toMatchObject({ ok: true })
    fs.mkdirSync(path.join(outside, "victim"), { recursive: true })
    fs.rmSync(path.join(dir, "v"), { recursive: true })
    fs.symlinkSync(path.join(outside, "victim"), path.join(dir, "v"))
    for (const args of [["rm", "-q", "-f", "-r", "--", "."], ["grep", "root"], ["mv", "a.txt", "b.txt"]]) {
      expect(decide(["-C", "workspace/out/linked-tree", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("v is a link in the work tree") })
    }
    const mover = repository(w("out/mover"))
    fs.symlinkSync(w("plain"), path.join(mover, "ln"))
    expect(decide(["-C", "workspace/out/mover", "mv", "a.txt", "ln/moved.txt"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/plain/moved.txt") })
  })

  it("hidden files stay unread under deny_hidden: --no-index on a folder and grep --untracked are refused", () => {
    fs.writeFileSync(w(".env"), "API_KEY=1")
    expect(decide(["-C", "workspace", "grep", "--no-index", "-e", "API_KEY"])).toMatchObject({ ok: false, reason: expect.stringContaining("--no-index") })
    expect(decide(["-C", "workspace", "diff", "--no-index", "out", "."])).toMatchObject({ ok: false, reason: expect.stringContaining("--no-index") })
    expect(decide(["-C", "workspace/readonly-repo", "grep", "--untracked", "SECRET"])).toMatchObject({ ok: false, reason: expect.stringContaining("--untracked") })
    fs.writeFileSync(w("out/one.txt"), "1")
    fs.writeFileSync(w("out/two.txt"), "2")
    expect(decide(["-C", "workspace/out", "diff", "--no-index", "one.txt", "two.txt"])).toMatchObject({ ok: true })
  })

  it("write options glued or abbreviated are writes: archive -oFILE, read-tree --i=, apply --bu=", () => {
    expect(decide(["-C", "workspace/readonly-repo", "archive", "-oa2.tar", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/readonly-repo/a2.tar") })
    expect(decide(["-C", "workspace/readonly-repo", "archive", "-vo", "a3.tar", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/readonly-repo/a3.tar") })
    repository(w("out/abbrev"))
    expect(decide(["-C", "workspace/out/abbrev", "read-tree", "--i=../../important.txt", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/important.txt") })
    expect(decide(["-C", "workspace/out/abbrev", "apply", "--cached", "--bu=../../important.txt", "../p.patch"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/important.txt") })
  })

  it("git is never given a gpg to run (archive's export-subst could ask for %G)", async () => {
    repository(w("out/signed"))
    for (const key of ["gpg.program", "gpg.x509.program", "gpg.ssh.program"]) {
      const shown = await run(["-C", "workspace/out/signed", "config", "--get", key])
      expect(shown).toMatchObject({ ok: true, value: { exitCode: 0, stdout: "/nonexistent/artana-sandbox/no-program\n" } })
    }
  })
})

describe("hidden files git would copy into a repository", () => {
  it("add of folders (add ., add -A) and stash -u are refused while a hidden file would go along; naming files is fine", () => {
    const dir = repository(w("out/adder-hidden"))
    fs.writeFileSync(path.join(dir, "b.txt"), "b")
    expect(decide(["-C", "workspace/out/adder-hidden", "add", "."])).toMatchObject({ ok: true })
    fs.writeFileSync(path.join(dir, ".env"), "API_KEY=1")
    for (const args of [["add", "."], ["add", "-A"], ["stash", "-u"]]) {
      expect(decide(["-C", "workspace/out/adder-hidden", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("would take .env into the repository") })
    }
    expect(decide(["-C", "workspace/out/adder-hidden", "add", "b.txt"])).toMatchObject({ ok: true })
    expect(decide(["-C", "workspace/out/adder-hidden", "add", ".env"])).toMatchObject({ ok: false, reason: expect.stringContaining("hidden") })
  })
})

describe("a fourth review: globs, abbreviations, and files git opens from the top", () => {
  it("hidden files: add with a glob, stash and commit -a, grep --untr and grep --no-index with a glob are refused", () => {
    const dir = repository(w("out/globbed"))
    fs.writeFileSync(path.join(dir, ".env"), "A1=secret")
    for (const args of [["add", "a.txt", "*"], ["add", "a.txt", ":(glob)**"], ["stash", "push", "--include-untr"], ["stash", "-qu"], ["stash", "push", "--al"]]) {
      expect(decide(["-C", "workspace/out/globbed", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("would take .env into the repository") })
    }
    // Untracked, it goes with none of these: plain stash and commit -a take changed tracked files only.
    for (const args of [["add", "a.txt"], ["stash"], ["commit", "-am", "x"]]) expect(decide(["-C", "workspace/out/globbed", ...args])).toMatchObject({ ok: true })
    // A tracked hidden file, changed: its new content would go with them.
    committedThenChanged(dir, ".cfg", "v1", "v2-secret")
    for (const args of [["stash"], ["commit", "-am", "x"], ["commit", "--all", "-m", "x"]]) {
      expect(decide(["-C", "workspace/out/globbed", ...args])).toMatchObject({ ok: false, reason: expect.stringMatching(/would (take|read) \.cfg/) })
    }
    expect(decide(["-C", "workspace/out/globbed", "grep", "--untra", "secret"])).toMatchObject({ ok: false, reason: expect.stringContaining("--untracked") })
    fs.writeFileSync(w("out/x.txt"), "x")
    expect(decide(["-C", "workspace/out", "grep", "--no-index", "-e", "secret", "x.txt", "*"])).toMatchObject({ ok: false, reason: expect.stringContaining("--no-index") })
    expect(decide(["-C", "workspace/out", "grep", "--no-index", "-e", "secret", "x.txt"])).toMatchObject({ ok: true })
  })

  it("notes -F, commit-tree -F and blame --contents read, read-tree --index-output writes, from the work tree's top", () => {
    const dir = repository(w("out/topfiles"))
    fs.mkdirSync(path.join(dir, "sub"))
    fs.writeFileSync(path.join(outside, "top-secret.txt"), "OUTSIDE")
    fs.symlinkSync(path.join(outside, "top-secret.txt"), path.join(dir, "lk"))
    fs.mkdirSync(path.join(outside, "wdir"), { recursive: true })
    fs.symlinkSync(path.join(outside, "wdir"), path.join(dir, "ld"))
    const sub = "workspace/out/topfiles/sub"
    for (const args of [["notes", "add", "-F", "lk"], ["notes", "append", "--file=lk", "HEAD"], ["commit-tree", "-Flk", "HEAD^{tree}"], ["blame", "--contents=lk", "--", "../a.txt"]]) {
      expect(decide(["-C", sub, ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("from the work tree's top") })
    }
    expect(decide(["-C", sub, "read-tree", "--index-output=ld/idx", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside") })
  })
})

describe("a fifth review: git directories fs.write can write, and hidden files the index names", () => {
  it("git refuses to work in a git directory fs.write may write (git runs commands from a rebase's todo there); pushing to one is fine", () => {
    git("init", "-q", `--separate-git-dir=${w("out/gd")}`, w("out/separated"))
    expect(decide(["-C", "workspace/out/separated", "rebase", "--continue"])).toMatchObject({ ok: false, reason: expect.stringContaining("fs.write may write in the repository's git directory (workspace/out/gd)") })
    git("init", "-q", "--bare", w("out/bare-w"))
    expect(decide(["-C", "workspace/out/bare-w", "log"])).toMatchObject({ ok: false, reason: expect.stringContaining("fs.write may write in the repository's git directory") })
    const dir = repository(w("out/pushes-to-bare"))
    git("-C", dir, "remote", "add", "b", w("out/bare-w"))
    expect(decide(["-C", "workspace/out/pushes-to-bare", "push", "b", "HEAD:refs/heads/main"])).toMatchObject({ ok: true })
  })

  it("commands that read the work tree are refused while a tracked hidden file there has changed", () => {
    const dir = repository(w("out/hidden-tracked"))
    fs.writeFileSync(path.join(dir, ".cfg"), "v1")
    git("-C", dir, "add", ".cfg")
    git("-C", dir, "commit", "-q", "-m", "cfg")
    expect(decide(["-C", "workspace/out/hidden-tracked", "diff"])).toMatchObject({ ok: true })
    fs.writeFileSync(path.join(dir, ".cfg"), "SECRET=hunter2")
    for (const args of [["diff"], ["grep", "SECRET"], ["status", "-v"], ["diff-files", "-p"], ["commit", "-m", "x", "--", "*"]]) {
      expect(decide(["-C", "workspace/out/hidden-tracked", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining(".cfg") })
    }
    expect(decide(["-C", "workspace/out/hidden-tracked", "log"])).toMatchObject({ ok: true })
  })
})

describe("a sixth review: submodules' repositories, bisect and merge strategies", () => {
  it("every populated submodule of the work tree is judged as the repository git works in (git status runs in each)", () => {
    const dir = repository(w("out/super2"))
    const embedded = repository(path.join(dir, "sub2"))
    const head = git("-C", embedded, "rev-parse", "HEAD").toString().trim()
    git("-C", dir, "update-index", "--add", "--cacheinfo", `160000,${head},sub2`)
    expect(decide(["-C", "workspace/out/super2", "status"])).toMatchObject({ ok: true })
    git("-C", embedded, "config", "filter.x.clean", program)
    expect(decide(["-C", "workspace/out/super2", "status"])).toMatchObject({ ok: false, reason: expect.stringContaining("the submodule at workspace/out/super2/sub2: git: workspace/out/super2/sub2/.git/config sets filter.x.clean") })
    git("-C", embedded, "config", "--unset", "filter.x.clean")
    // One whose git directory fs.write may write (a separate git directory within its paths) is refused too.
    git("init", "-q", `--separate-git-dir=${w("out/subgit")}`, path.join(dir, "sub3"))
    fs.writeFileSync(path.join(dir, "sub3/f.txt"), "f")
    git("-C", path.join(dir, "sub3"), "add", "f.txt")
    git("-C", path.join(dir, "sub3"), "commit", "-q", "-m", "f")
    git("-C", dir, "update-index", "--add", "--cacheinfo", `160000,${git("-C", path.join(dir, "sub3"), "rev-parse", "HEAD").toString().trim()},sub3`)
    expect(decide(["-C", "workspace/out/super2", "diff"])).toMatchObject({ ok: false, reason: expect.stringContaining("the submodule at workspace/out/super2/sub3: fs.write may write in its git directory (workspace/out/subgit)") })
  })
})

describe("a seventh review: operands after --, and checks that list the work tree", () => {
  it("every argument after -- is an operand, whatever it starts with", () => {
    const secret = repository(path.join(outside, "dashed"))
    fs.mkdirSync(w("out/--x"), { recursive: true })
    fs.writeFileSync(w("out/--x/f"), "f")
    const escape = `--x/${path.relative(w("out/--x"), path.join(secret, "a.txt"))}`
    expect(decide(["-C", "workspace/out", "diff", "--no-index", "--", "--x/f", escape])).toMatchObject({ ok: false, reason: expect.stringContaining("outside") })
    expect(decide(["-C", "workspace/out", "diff", "--no-index", "--", "--x/f", "--x/../../.env"])).toMatchObject({ ok: false, reason: expect.stringContaining("hidden") })
    expect(decide(["-C", "workspace/out", "hash-object", "--", escape])).toMatchObject({ ok: false, reason: expect.stringContaining("outside") })
    expect(decide(["-C", "workspace/out", "clone", "--", `--x/${path.relative(w("out/--x"), secret)}`, "y"])).toMatchObject({ ok: false, reason: expect.stringContaining("outside") })
  })

  it("--work-tree without --git-dir: the listing checks see the work tree git will use", () => {
    const dir = repository(w("out/wt-only"))
    const blob = git("-C", dir, "hash-object", "-w", "a.txt").toString().trim()
    git("-C", dir, "update-index", "--add", "--cacheinfo", `100644,${blob},.env`)
    fs.writeFileSync(w(".env"), "SECRET=hunter2")
    for (const args of [["diff"], ["status", "--short"]]) {
      expect(decide(["-C", "workspace/out/wt-only", "--work-tree=../..", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("would read .env") })
    }
  })
})

describe("an eighth review: more files opened from the top, ignored hidden files, and every reader of the work tree", () => {
  it("blame -S and --ignore-revs-file read their file from the work tree's top", () => {
    const dir = repository(w("out/blamed"))
    fs.mkdirSync(path.join(dir, "a/b"), { recursive: true })
    fs.writeFileSync(path.join(dir, "a/b/f.txt"), "f")
    fs.symlinkSync(w(".env"), path.join(dir, "e"))
    for (const args of [["blame", "-S", "e", "f.txt"], ["blame", "-Se", "f.txt"], ["blame", "--ignore-revs-file", "e", "f.txt"], ["blame", "--ignore-revs=e", "f.txt"]]) {
      expect(decide(["-C", "workspace/out/blamed/a/b", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("from the work tree's top") })
    }
  })

  it("add -f and stash -a take ignored hidden files: refused while one would go along", () => {
    const dir = repository(w("out/ignoring"))
    committedThenChanged(dir, ".gitignore", ".env\n", ".env\n")
    fs.writeFileSync(path.join(dir, ".env"), "API_KEY=PROJ-SECRET")
    expect(decide(["-C", "workspace/out/ignoring", "add", "."])).toMatchObject({ ok: true })
    for (const args of [["add", "-f", "."], ["add", "--force", "."], ["stash", "push", "-a"], ["stash", "--all"]]) {
      expect(decide(["-C", "workspace/out/ignoring", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("would take .env into the repository") })
    }
  })

  it("every command that may read the work tree is refused while a tracked hidden file there has changed (checkout -p, update-index --again)", () => {
    const dir = repository(w("out/patchy"))
    committedThenChanged(dir, ".env", "KEY=old", "KEY=NEW-SECRET")
    for (const args of [["commit", "-p"], ["checkout", "-p"], ["restore", "-p"], ["reset", "-p"], ["update-index", "--again"]]) {
      expect(decide(["-C", "workspace/out/patchy", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("would read .env") })
    }
    expect(decide(["-C", "workspace/out/patchy", "log", "-p"])).toMatchObject({ ok: true })
  })
})

describe("a ninth review: more ways to run a program, and grep -f", () => {
  it("every merge strategy on the line is judged (git keeps the last); -X values are no strategies", () => {
    repository(w("out/strategies"))
    const at = (...args: ReadonlyArray<string>) => decide(["-C", "workspace/out/strategies", ...args])
    expect(at("rebase", "-s", "ort", "-s", "x/prog", "main")).toMatchObject({ ok: false, reason: expect.stringContaining("--strategy x/prog") })
    expect(at("cherry-pick", "--strategy=ort", "--strategy=x/prog", "HEAD")).toMatchObject({ ok: false, reason: expect.stringContaining("--strategy x/prog") })
    for (const args of [["merge", "-Xours", "main"], ["rebase", "-Xtheirs", "main"], ["merge", "-Xignore-space-change", "main"], ["merge", "-X", "theirs", "-s", "ort", "main"]]) {
      expect(at(...args)).toMatchObject({ ok: true })
    }
  })

  it("--bare before the subcommand and --submodule=diff are refused", () => {
    repository(w("out/bared"))
    expect(decide(["-C", "workspace/out/bared", "--bare", "ls-remote", "origin"])).toMatchObject({ ok: false, reason: expect.stringContaining("--bare") })
    expect(decide(["-C", "workspace/out/bared", "diff", "--submodule=diff", "HEAD"])).toMatchObject({ ok: false, reason: expect.stringContaining("--submodule=diff") })
    expect(decide(["-C", "workspace/out/bared", "log", "-p", "--submod=diff"])).toMatchObject({ ok: false, reason: expect.stringContaining("=diff") })
    expect(decide(["-C", "workspace/out/bared", "diff", "--submodule=log", "HEAD"])).toMatchObject({ ok: true })
  })

  it("grep -f reads its file from the work tree's top", () => {
    const dir = repository(w("out/grepf"))
    fs.mkdirSync(path.join(dir, "a"))
    fs.symlinkSync(w(".env"), path.join(dir, "e"))
    for (const args of [["grep", "-f", "e"], ["grep", "-vf", "e"], ["grep", "-vfe"]]) {
      expect(decide(["-C", "workspace/out/grepf/a", ...args])).toMatchObject({ ok: false, reason: expect.stringContaining("from the work tree's top") })
    }
  })
})

describe("a tenth review: global options, separate git directories, nested submodules, bundle lists", () => {
  it("--separate-git-dir into fs.write's paths and clone --bundle-uri are refused", () => {
    expect(decide(["-C", "workspace/out", "init", "-q", "--separate-git-dir=gd2", "x"])).toMatchObject({ ok: false, reason: expect.stringContaining("--separate-git-dir puts the repository where fs.write may write") })
    expect(decide(["-C", "workspace/out", "clone", "--bundle-uri=list", "../plain", "dst"])).toMatchObject({ ok: false, reason: expect.stringContaining("--bundle-uri") })
  })

  it("submodules of submodules are judged too", () => {
    const top = repository(w("nested-top"))
    const sub = repository(path.join(top, "sub"))
    const inner = repository(path.join(sub, "n"))
    git("-C", sub, "update-index", "--add", "--cacheinfo", `160000,${git("-C", inner, "rev-parse", "HEAD").toString().trim()},n`)
    git("-C", top, "update-index", "--add", "--cacheinfo", `160000,${git("-C", sub, "rev-parse", "HEAD").toString().trim()},sub`)
    expect(decide(["-C", "workspace/nested-top", "status"])).toMatchObject({ ok: true })
    git("-C", inner, "config", "filter.x.clean", program)
    expect(decide(["-C", "workspace/nested-top", "status"])).toMatchObject({ ok: false, reason: expect.stringContaining("the submodule at workspace/nested-top/sub/n") })
  })
})

describe("an eleventh review: config writes, and git looking into submodules", () => {
  it("config reads, and sets an allowed key in a repository within fs.write (an identity to commit with); nothing else", async () => {
    repository(w("out/configured"))
    const at = (...args: ReadonlyArray<string>) => decide(["-C", "workspace/out/configured", ...args])
    expect(at("config", "--get", "user.name")).toMatchObject({ ok: true })
    expect(at("config", "--null", "--list")).toMatchObject({ ok: true })
    expect(at("config", "user.name")).toMatchObject({ ok: true })
    expect(at("config", "--remove-sec", "core")).toMatchObject({ ok: false, reason: expect.stringContaining("--remove-sec is not one of the read options") })
    expect(at("config", "-z", "diff.external", "sh")).toMatchObject({ ok: false, reason: expect.stringContaining("only reads (--get, --list, or a single key)") })
    expect(at("config", "diff.external", "sh")).toMatchObject({ ok: false, reason: expect.stringContaining("setting diff.external is refused") })
    expect(decide(["-C", "workspace/readonly-repo", "config", "user.name", "Ada"])).toMatchObject({ ok: false, reason: expect.stringContaining("writes workspace/readonly-repo") })
    const set = await run(["-C", "workspace/out/configured", "config", "user.name", "Ada"])
    expect(set).toMatchObject({ ok: true, value: { exitCode: 0 } })
    expect(git("config", "--file", w("out/configured/.git/config"), "--get", "user.name").toString()).toBe("Ada\n")
  })

  it("git never looks into submodules for changes: status in a superproject runs no submodule filter", async () => {
    const dir = repository(w("out/watched"))
    const sub = repository(path.join(dir, "lib"))
    git("-C", dir, "update-index", "--add", "--cacheinfo", `160000,${git("-C", sub, "rev-parse", "HEAD").toString().trim()},lib`)
    const shown = await run(["-C", "workspace/out/watched", "config", "--get", "diff.ignoreSubmodules"])
    expect(shown).toMatchObject({ ok: true, value: { exitCode: 0, stdout: "all\n" } })
  })
})

describe("a twelfth review: hooks of the repository a push goes to", () => {
  it("a push to a local repository with a hook is refused (receive-pack runs it, and git drops hooksPath for it); without one it runs", async () => {
    const target = w("out/hooked.git")
    git("init", "-q", "--bare", target)
    const dir = repository(w("out/hook-pusher"))
    git("-C", dir, "remote", "add", "t", target)
    expect(decide(["-C", "workspace/out/hook-pusher", "push", "t", "HEAD:refs/heads/main"])).toMatchObject({ ok: true })
    fs.writeFileSync(path.join(target, "hooks/pre-receive"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 })
    expect(decide(["-C", "workspace/out/hook-pusher", "push", "t", "HEAD:refs/heads/main"])).toMatchObject({ ok: false, reason: expect.stringContaining("would run the hook workspace/out/hooked.git/hooks/pre-receive") })
    const refused = await run(["-C", "workspace/out/hook-pusher", "push", "t", "HEAD:refs/heads/main"])
    expect(refused).toMatchObject({ ok: false, tag: "PolicyDenied" })
    expect(fs.existsSync(marker)).toBe(false)
  })
})

describe("a thirteenth review: a repository git finds through a commondir file", () => {
  it("a push to a folder whose commondir names a repository with a hook is refused: it is judged as git sees it", () => {
    const common = w("out/common-c")
    git("init", "-q", "--bare", common)
    fs.writeFileSync(path.join(common, "hooks/post-receive"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 })
    fs.mkdirSync(w("out/common-p"), { recursive: true })
    fs.writeFileSync(w("out/common-p/HEAD"), "ref: refs/heads/main\n")
    fs.writeFileSync(w("out/common-p/commondir"), "../common-c\n")
    const dir = repository(w("out/common-pusher"))
    expect(decide(["-C", "workspace/out/common-pusher", "push", "../common-p", "HEAD:refs/heads/x"])).toMatchObject({ ok: false, reason: expect.stringContaining("would run the hook workspace/out/common-c/hooks/post-receive") })
    expect(fs.existsSync(marker)).toBe(false)
    expect(fs.existsSync(path.join(dir, ".git"))).toBe(true)
  })
})
