// The pids cgroups shell.run makes for its calls (root, with a pids hierarchy): a caller killed with SIGKILL cannot
// remove its call's cgroup, so the next process's first call removes the empty ones older than ten minutes, and
// leaves a recent one (a call just starting) and one with processes (a call running) alone. Its own file: the sweep
// runs once per process, at its first call.
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { type Policy, Sandbox } from "@artana/sandbox"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { contained, context, tempFolder } from "./fixtures.js"

const base = tempFolder("cgroups")

/** Where the sandbox makes its call cgroups here (cgroup v1's pids hierarchy, or v2 with pids enabled). */
const v2Pids = (): boolean => {
  try {
    return fs.readFileSync("/sys/fs/cgroup/cgroup.subtree_control", "utf8").split(/\s+/).includes("pids")
  } catch {
    return false
  }
}
const root = fs.existsSync("/sys/fs/cgroup/pids/tasks") ? "/sys/fs/cgroup/pids" : v2Pids() ? "/sys/fs/cgroup" : undefined

const policy: Policy.Policy = {
  baseDir: base,
  document: {
    default: "deny",
    tools: {
      "shell.run": { allow: true, executables: ["true"], denied_tokens: [], timeout_ms: 20_000, max_output_bytes: 65_536, ...contained }
    }
  }
}

describe("call cgroups left behind", () => {
  it("an empty one older than ten minutes goes at the next process's first call; a recent one and a busy one stay", async () => {
    if (root === undefined) throw new Error("no pids cgroup hierarchy here: this test needs root and cgroup v1's pids hierarchy or v2 with pids")
    const made = (name: string, ageMs: number) => {
      const dir = path.join(root, `artana-sandbox-${name}-${process.pid}`)
      fs.mkdirSync(dir)
      const then = new Date(Date.now() - ageMs)
      fs.utimesSync(dir, then, then)
      return dir
    }
    const stale = made("stale", 60 * 60_000)
    const recent = made("recent", 0)
    const busy = made("busy", 60 * 60_000)
    const sleeper = spawn("sh", ["-c", `echo $$ > "${busy}/cgroup.procs" && exec sleep 60`], { stdio: "ignore" })
    try {
      for (let i = 0; i < 100 && fs.readFileSync(path.join(busy, "cgroup.procs"), "utf8").trim() === ""; i++) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(fs.readFileSync(path.join(busy, "cgroup.procs"), "utf8").trim()).not.toBe("")
      const tool = Sandbox.tools(policy).find((t) => t.name === "shell.run")!
      expect(await Effect.runPromise(tool.invoke({ command: "true", args: [] }, context))).toMatchObject({ exitCode: 0 })
      expect(fs.existsSync(stale)).toBe(false)
      expect(fs.existsSync(recent)).toBe(true)
      expect(fs.existsSync(busy)).toBe(true)
    } finally {
      sleeper.kill("SIGKILL")
      await new Promise((resolve) => sleeper.once("close", resolve))
      for (const dir of [stale, recent, busy]) {
        for (let i = 0; i < 50 && fs.existsSync(dir); i++) {
          try {
            fs.rmdirSync(dir)
          } catch {
            await new Promise((resolve) => setTimeout(resolve, 50))
          }
        }
      }
    }
  }, 60_000)
})
