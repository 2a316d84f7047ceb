// shell.run policy cases: the executable (by name on a fixed PATH, or a listed path), argument smuggling (denied
// tokens as whole arguments and --opt=value, git options that run programs or load configuration, with their
// abbreviations, ext:: URLs, config writes, hooks), paths in arguments under the fs.read rule; and real runs: argv
// only, a minimal environment, stdin from /dev/null, the timeout and the output cap killing the process group.
import { describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { type Policy, Sandbox } from "@artana/sandbox"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
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
    ["git status in a workspace repository", "git", ["-C", "workspace/repo", "status", "--short"], true, "git"],
    ["git log with a format", "git", ["-C", "workspace/repo", "log", "--oneline", "-n", "5"], true, "git"],
    ["git in the base directory (outside fs.read's paths)", "git", ["status"], false, "git would work in the base directory"],
    ["git -C to a readable file's folder's parent", "git", ["-C", ".", "log"], false, "git would work in the base directory"],
    ["git -C into a hidden folder", "git", ["-C", "workspace/repo/.git", "log"], false, "hidden"],
    ["git in a repository whose .git file points outside", "git", ["-C", "workspace/gitfile", "log"], false, "points to a repository outside the readable area"],
    ["git in a repository whose .git links outside", "git", ["-C", "workspace/gitlink", "log"], false, "points to a repository outside the readable area"],
    ["git below a repository whose .git file points outside", "git", ["-C", "workspace/gitfile/sub", "log"], false, "points to a repository outside"],
    ["git -C inside the workspace", "git", ["-C", "workspace/repo", "status"], true, "git"],
    ["git config read", "git", ["-C", "workspace/repo", "config", "--get", "user.name"], true, "git"],
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
    ["git -c", "git", ["-c", "core.pager=sh", "log"], false, "-c"],
    ["git -c attached", "git", ["-ccore.sshCommand=sh", "fetch"], false, "-c"],
    ["git -c in a cluster", "git", ["-pc", "x=y", "log"], false, "the global option -pc is not one shell.run knows"],
    ["git clone -c", "git", ["clone", "-c", "core.sshCommand=sh", "https://example.com/r.git"], false, "-c"],
    ["git --config-env", "git", ["--config-env=core.pager=X", "log"], false, "--config-env"],
    ["git --exec-path", "git", ["--exec-path=/tmp", "status"], false, "--exec-path"],
    ["git --upload-pack", "git", ["fetch", "--upload-pack=touch /tmp/x", "origin"], false, "--upload-pack"],
    ["git --upload-pack abbreviated", "git", ["fetch", "--upload-p=sh", "origin"], false, "an abbreviation of --upload-pack"],
    ["git --receive-pack", "git", ["push", "--receive-pack", "sh", "origin"], false, "--receive-pack"],
    ["git --exec", "git", ["push", "--exec=sh", "origin"], false, "--exec"],
    ["git clone -u", "git", ["clone", "-u", "sh -c id", "https://example.com/r.git"], false, "-u"],
    ["git ext:: URL", "git", ["clone", "ext::sh -c touch% /tmp/pwned", "x"], false, "ext::"],
    ["git --git-dir outside", "git", ["--git-dir=/tmp/evil", "status"], false, "outside the workspace"],
    ["git --git-dir abbreviated outside", "git", ["--git-d", "/tmp/evil", "status"], false, "the global option --git-d is not one shell.run knows"],
    ["git --shallow-file (takes the next word, and git runs the one after as the subcommand)", "git", ["-C", "workspace/repo", "--shallow-file", "log", "a/x"], false, "the global option --shallow-file is not one shell.run knows"],
    ["git --work-tree outside", "git", ["--work-tree", "/", "status"], false, "outside the workspace"],
    ["git -C outside", "git", ["-C", "/etc", "status"], false, "outside the workspace"],
    ["git -C through a link out", "git", ["-C", "workspace/out-link", "status"], false, "outside the workspace"],
    ["git config write", "git", ["config", "core.hooksPath", "/tmp/hooks"], false, "setting core.hooksPath is refused"],
    ["git config --add", "git", ["config", "--add", "alias.x", "!sh"], false, "--add is not one of the read options"],
    ["git config write abbreviated", "git", ["-C", "workspace/repo", "config", "--ad", "--null", "diff.external", "sh"], false, "--ad is not one of the read options"],
    ["git config --type does not make a read", "git", ["-C", "workspace/repo", "config", "--type=path", "core.fsmonitor", "touch x"], false, "only reads (--get, --list, or a single key)"],
    ["git config --file without a read", "git", ["-C", "workspace/repo", "config", "--file=new.cfg", "--null", "core.pager", "x"], false, "--file and --blob are for reads only"],
    ["git init --template (hooks)", "git", ["init", "--template=/tmp/t", "workspace/repo"], false, "--template"],
    ["git hook run", "git", ["hook", "run", "pre-commit"], false, "hook"],
    ["git rebase -x", "git", ["rebase", "-x", "touch /tmp/pwned", "HEAD~1"], false, "-x is --exec"],
    ["git rebase -x in a cluster", "git", ["rebase", "-ix", "sh", "HEAD~1"], false, "-x is --exec"],
    ["git rebase --exec abbreviated", "git", ["rebase", "--exe=sh", "HEAD~1"], false, "an abbreviation of --exec"],
    ["git bisect run", "git", ["bisect", "run", "sh"], false, "bisect run is refused (run and visualize run programs)"],
    ["git bisect visualize with a program", "git", ["bisect", "visualize", "git", "-c", "alias.x=!sh", "x"], false, "bisect visualize is refused"],
    ["git bisect view", "git", ["bisect", "view"], false, "bisect view is refused"],
    ["git cherry-pick with a strategy that is a path", "git", ["-C", "workspace/repo", "cherry-pick", "--strategy=a/x", "HEAD~1"], false, "only git's own strategies"],
    ["git rebase --strat abbreviated", "git", ["-C", "workspace/repo", "rebase", "--strat", "a/x", "HEAD~2"], false, "only git's own strategies"],
    ["git merge -s glued", "git", ["-C", "workspace/repo", "merge", "-sa/x", "HEAD~1"], false, "only git's own strategies"],
    ["git merge -s ours", "git", ["-C", "workspace/repo", "merge", "-s", "ours", "HEAD~1"], true, "git"],
    ["git merge -X theirs is a strategy option, not a strategy", "git", ["-C", "workspace/repo", "merge", "--strategy-option=theirs", "HEAD~1"], true, "git"],
    ["git cherry-pick -s is signoff", "git", ["-C", "workspace/repo", "cherry-pick", "-s", "HEAD~1"], true, "git"],
    ["git submodule foreach", "git", ["submodule", "foreach", "sh -c id"], false, "submodule foreach runs a command"],
    ["git difftool", "git", ["difftool", "HEAD"], false, "difftool runs a diff tool"],
    ["git mergetool", "git", ["mergetool"], false, "mergetool runs a merge tool"],
    ["git filter-branch", "git", ["filter-branch", "--tree-filter", "sh", "HEAD"], false, "filter-branch runs shell filters"],
    ["git daemon", "git", ["daemon", "--export-all"], false, "daemon serves repositories"],
    ["git credential", "git", ["credential", "fill"], false, "credential reads credentials"],
    ["git upload-pack as a subcommand", "git", ["upload-pack", "workspace/repo"], false, "upload-pack is a transport program"],
    ["git grep -O (a pager program)", "git", ["grep", "-Osh", "needle"], false, "-O opens a pager program"],
    ["git grep --open-files-in-pager", "git", ["grep", "--open-files-in-pager=sh", "needle"], false, "opens a pager program"],
    ["git help --web", "git", ["help", "--web", "log"], false, "runs a browser"],
    // After the subcommand -c is the subcommand's (log -c: combined diffs; switch -c: create): not configuration.
    ["git -c after the subcommand is the subcommand's", "git", ["-C", "workspace/repo", "log", "-c"], true, "git"],
    ["git switch -c", "git", ["-C", "workspace/repo", "switch", "-c", "feature"], true, "git"],
    ["git fetch -u (upload-pack)", "git", ["fetch", "-u", "sh", "workspace/repo"], false, "-u is --upload-pack"],
    ["git push -u (set-upstream) is not upload-pack", "git", ["-C", "workspace/repo", "push", "-u", "origin", "main"], true, "git"],
    ["git clone over https", "git", ["clone", "https://example.com/r.git"], false, "reaches no network"],
    ["git clone over ssh", "git", ["clone", "ssh://git@example.com/r.git"], false, "reaches no network"],
    ["git fetch over git://", "git", ["-C", "workspace/repo", "fetch", "git://example.com/r.git"], false, "reaches no network"],
    ["git clone of a file URL outside", "git", ["clone", "file:///etc/skel", "workspace/repo2"], false, "outside the allowed paths"],
    ["git clone of a file URL with escapes", "git", ["clone", "file:///%65tc/skel", "workspace/repo2"], false, "%-escapes"],
    ["git ext:: in a --option value", "git", ["clone", "--origin=ext::sh", "workspace/repo"], false, "ext::"],
    ["git diff --output without fs.write", "git", ["-C", "workspace/repo", "diff", "--output=../diff.txt"], false, "fs.write is not allowed"],
    ["git refs with a slash, resolved under -C", "git", ["-C", "workspace/repo", "log", "origin/main", "feature/x"], true, "git"],
    ["git commit message that looks like a path", "git", ["-C", "workspace/repo", "commit", "-m", "fix ../../etc/passwd and /root"], true, "git"],
    ["git commit --message= that looks like a path", "git", ["-C", "workspace/repo", "commit", "--message=see /etc/shadow"], true, "git"],
    ["git diff -m (a flag there): the next argument is still a path", "git", ["-C", "workspace/repo", "diff", "--no-index", "-m", "../../secret.txt", "notes.txt"], false, "outside the allowed paths"],
    ["git log -m (a flag there): the next argument is still a path", "git", ["-C", "workspace/repo", "log", "-m", "/etc/passwd"], false, "outside the allowed paths"],
    ["git commit -F of a file outside", "git", ["-C", "workspace/repo", "commit", "-F", "/etc/passwd"], false, "outside the allowed paths"],
    ["git path relative to -C, climbing out", "git", ["-C", "workspace/repo", "diff", "--no-index", "../../secret.txt", "notes.txt"], false, "outside the allowed paths"],
    ["git -C twice, the second climbing out", "git", ["-C", "workspace", "-C", "../..", "status"], false, "outside the workspace"],
    ["a denied token as the value of --opt=value", "echo", ["--label=sudo"], false, "denied token (sudo)"],
    ["a denied token in a -o=value form", "echo", ["-x=rm"], false, "denied token (rm)"],
    ["a dangling link named without a slash", "cat", ["dangling-top"], false, "dangling link"],
    ["a link named without a slash, to outside", "cat", ["top-link"], false, "outside the allowed paths"]
  ])("%s: %s %s", (_what, command, args, ok, reason) => {
    const decision = decide(command, args)
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })

  it("paths git writes fall under fs.write: --output, format-patch -o, a clone's directory", () => {
    const p: Policy.Policy = {
      baseDir: base,
      document: { default: "deny", tools: { ...policy().document.tools, "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1024 } } }
    }
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, boolean, string]> = [
      [["-C", "workspace", "diff", "--output=out/diff.txt"], true, "git"],
      [["-C", "workspace", "diff", "--output", "notes.txt"], false, "git diff writes workspace/notes.txt: workspace/notes.txt is outside the fs.write paths"],
      [["-C", "workspace/repo", "diff", "--outp=../out/d.txt"], true, "git"],
      [["-C", "workspace/repo", "format-patch", "-o", "../../patches", "HEAD~1"], false, "git format-patch writes patches"],
      [["-C", "workspace/repo", "format-patch", "--output-directory=../out/patches", "HEAD~1"], true, "git"],
      [["-C", "workspace", "clone", "repo", "out/clone"], true, "git"],
      [["-C", "workspace", "clone", "repo", "elsewhere"], false, "git clone writes workspace/elsewhere"],
      [["-C", "workspace", "clone", "repo"], false, "git clone writes workspace/repo"],
      [["-C", "workspace", "init", "out/new-repo"], true, "git"],
      [["-C", "workspace", "init", "/tmp/new-repo"], false, "git init writes"],
      // clone, init and push read their repository and directory by position: an option's value goes after "=".
      [["-C", "workspace", "clone", "--depth", "1", "out/src", "protected"], false, 'clone --depth: give its value after "=" (--depth=...)'],
      [["-C", "workspace", "clone", "--depth=1", "repo", "out/shallow"], true, "git"],
      [["-C", "workspace", "clone", "--depth=1", "repo", "protected"], false, "git clone writes workspace/protected"],
      [["-C", "workspace", "init", "out/r", "-b", "main"], false, 'init -b: give its value after "="'],
      [["-C", "workspace", "init", "--separate-git-dir=/tmp/elsewhere", "out/r"], false, "git init writes ../elsewhere: ../elsewhere is outside the fs.write paths"],
      [["-C", "workspace/repo", "push", "-o", "x", "../other"], false, 'push -o: give its value after "="'],
      [["-C", "workspace/repo", "push", "--repo=../other"], false, "push --repo: name the repository as an argument"]
    ]
    for (const [args, ok, reason] of cases) {
      const decision = decide("git", args, p)
      expect({ args, ok: decision.ok, reason: decision.reason }).toMatchObject({ args, ok, reason: expect.stringContaining(reason) })
    }
    expect(decide("git", ["-C", "workspace", "diff", "--output=out/diff.txt"], p)).toMatchObject({ filesWritten: ["workspace/out/diff.txt"] })
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
    expect(await run("git", ["-c", `core.pager=touch ${marker}`, "log"])).toMatchObject({ ok: false, tag: "PolicyDenied", message: expect.stringContaining("-c sets configuration") })
    expect(fs.existsSync(marker)).toBe(false)
  })

  it("git runs without hooks, system or global configuration", async () => {
    const repo = path.join(base, "workspace/repo")
    // The repository is written (init, add, commit): it must be within fs.write's paths.
    const writable = { "fs.write": { allow: true, paths: ["workspace/repo/**"], deny_hidden: true, max_bytes: 1024 } }
    expect(await run("git", ["-C", "workspace/repo", "init", "-q"])).toMatchObject({ ok: false, message: expect.stringContaining("git init writes workspace/repo, and fs.write is not allowed") })
    expect((await run("git", ["-C", "workspace/repo", "init", "-q"], {}, writable)).ok).toBe(true)
    fs.mkdirSync(path.join(repo, ".git/hooks"), { recursive: true })
    const marker = path.join(outside, "hook-ran")
    fs.writeFileSync(path.join(repo, ".git/hooks/pre-commit"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 })
    fs.writeFileSync(path.join(repo, "x.txt"), "x")
    expect((await run("git", ["-C", "workspace/repo", "add", "x.txt"], {}, writable)).ok).toBe(true)
    // The pre-commit hook would run before the commit (which then fails: the child has no identity configured).
    expect((await run("git", ["-C", "workspace/repo", "commit", "-q", "-m", "first"], {}, writable)).ok).toBe(true)
    expect(fs.existsSync(marker)).toBe(false)
    // gc and maintenance never detach from the process group the timeout kills.
    for (const key of ["gc.autoDetach", "maintenance.autoDetach", "core.hooksPath"]) {
      const value = await run("git", ["-C", "workspace/repo", "config", "--get", key])
      expect(value).toMatchObject({ ok: true, value: { stdout: key === "core.hooksPath" ? "/dev/null\n" : "false\n" } })
    }
  })

  it("git clones a local repository into fs.write's paths; a remote in the repository's configuration cannot take it to the network", async () => {
    const writable: Partial<Policy.ShellRule> = {}
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
    // A remote the repository names over http: git itself refuses the transport (GIT_ALLOW_PROTOCOL=file).
    execFileSync("git", ["-C", path.join(base, "workspace/out/clone"), "remote", "add", "web", "http://127.0.0.1:9/r.git"])
    const fetched = await call(["-C", "workspace/out/clone", "fetch", "web"])
    expect(fetched.exitCode).not.toBe(0)
    expect(fetched.stderr).toContain("transport 'http' not allowed")
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
      const p: Policy.Policy = { ...policy(), baseDir: around }
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
