// A sandbox is built from a spec computed a moment before bwrap binds its folders by name (following links). A
// process of another sandbox sharing a writable folder can swap a folder for a link in between; the host checks the
// sandbox's mounts before its first call and stops a sandbox built otherwise. The race is made deterministic here: the
// spec is computed, the folder swapped, then the sandbox started from that spec (the internals shell.run chains).
// Real bwrap.
import { describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Policy } from "@artana/sandbox"
import { availability, sandboxSpec } from "../src/internal/contain.js"
import { runContained } from "../src/internal/launcher.js"
import { contained, tempFolder } from "./fixtures.js"

const rule: Policy.ShellRule = { allow: true, executables: ["sh"], denied_tokens: [], timeout_ms: 20_000, max_output_bytes: 1_048_576, ...contained }
const fsRule = (paths: ReadonlyArray<string>) => ({ allow: true, paths: [...paths], deny_hidden: true, max_bytes: 1_048_576 })

/**
 * A workspace (with a space in its name: the mount table escapes it), read-only but for its `cache` folder, and a
 * spec made from it; `run` starts a sandbox from that spec and runs `script` in it.
 */
const setUp = (name: string) => {
  const base = tempFolder(`mounts-${name}`)
  const workspace = path.join(base, "my workspace")
  const cache = path.join(workspace, "cache")
  const kept = path.join(workspace, "kept")
  fs.mkdirSync(cache, { recursive: true })
  fs.mkdirSync(kept)
  const spec = sandboxSpec(base, rule, fsRule(["my workspace/**"]), fsRule(["my workspace/cache/**"]), "/bin/sh")
  const run = (script: string) => {
    const tools = availability()
    if (!tools.ok) throw new Error(tools.reason)
    return runContained(tools, {
      policyKey: `mounts-${name}-${Math.random()}`,
      spec,
      env: { PATH: "/usr/bin:/bin", HOME: "/tmp/home" },
      extraEnv: {},
      argv: ["/bin/sh", "-c", script],
      rule
    })
  }
  return { workspace, cache, kept, spec, run }
}

describe("a sandbox is checked against its spec before its first call", () => {
  it("built as planned: the call runs, the read-only folder stays read-only", async () => {
    const s = setUp("planned")
    expect(s.spec.mounts.some((m) => m.at === s.cache && !m.ro)).toBe(true)
    const outcome = await s.run(`echo cached > '${s.cache}/x' && echo kept > '${s.kept}/x'; echo done`)
    expect(outcome._tag === "ok" && outcome.result.stdout + outcome.result.stderr).toMatch(/done[^]*Read-only file system/)
    expect(fs.readFileSync(path.join(s.cache, "x"), "utf8")).toBe("cached\n")
    expect(fs.existsSync(path.join(s.kept, "x"))).toBe(false)
  }, 60_000)

  it("the writable folder swapped for a link to a read-only one after the spec was made: stopped before the command runs", async () => {
    const s = setUp("swapped")
    // bwrap follows the link for both ends of the bind: the read-only folder would be bound read-write over itself.
    fs.rmSync(s.cache, { recursive: true })
    fs.symlinkSync("kept", s.cache)
    const outcome = await s.run(`echo pwned > '${s.kept}/x'`)
    expect(outcome._tag).toBe("error")
    expect(outcome._tag === "error" && outcome.reason).toMatch(/not built as its policy says \(nothing is mounted at .*my workspace\/cache\)/)
    expect(fs.existsSync(path.join(s.kept, "x"))).toBe(false)
  }, 60_000)
})
