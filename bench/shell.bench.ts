// `pnpm bench shell`: what containment costs a `shell.run` call, and what a git decision costs.
//
// contained_true_vs_bare_spawn: shell.run of `true` through the tool (the check and the bind walk, then the call handed
//   to the launcher in the policy's long-lived bubblewrap sandbox, which runs it with the call's limits, kills what it
//   left and checks /tmp, HOME, /dev/shm and IPC are clean) / a bare `spawn("/usr/bin/true")` awaited to its close, in
//   the same process. The sandbox is started by the warm-up calls (its start is what bwrap_floor measures the least
//   of). The two alternate round by round (the order flips each round); medians of ROUNDS rounds of CALLS calls each.
//   Targets: at most 3x, and under 20 ms a call.
// uncontained_true_vs_bare_spawn: the same through the tool with `containment: none` (the check and a plain spawn).
// bwrap_floor_vs_bare_spawn: the least sandbox bubblewrap makes, spawned bare (`bwrap --ro-bind /usr /usr` and the
//   /bin, /lib... links, then `true`: a mount namespace and nothing of the policy), in the same rounds: what any
//   bwrap-per-call design pays before containing anything (its pivot_root and namespace setup and teardown); shell.run
//   pays it once per policy and process, and again only after a call that left something behind, was killed (timeout,
//   output cap, interruption) or ran when the policy's sandbox would now be built differently.
// git_decision_ms: Sandbox.decide of `git -C workspace/repo status` (what the middleware does before each call), in a
//   repository of a few commits; contained (the policy's default) and, for the record of what containment replaced,
//   with `containment: none`.
import { spawn } from "node:child_process"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { Tenant, type Tool } from "@artana/core"
import { type Policy, Sandbox } from "@artana/sandbox"
import { type BenchResult, median, nowUs, progress } from "./lib.js"

const ROUNDS = 15
const CALLS = 10
const DECISIONS = 15

const context: Tool.ToolContext = {
  runId: "bench",
  tenant: Tenant.TenantContext.make({ tenantId: "bench", capabilities: [], budgetUsdLimit: 1 }),
  idempotencyKey: "k",
  stepKey: "tool:0",
  fence: 1,
  signal: new AbortController().signal,
  lease: { expiresAt: () => Number.POSITIVE_INFINITY, signal: new AbortController().signal }
}

const bare = () =>
  new Promise<void>((resolve, reject) => {
    const child = spawn("/usr/bin/true", [], { stdio: "ignore" })
    child.on("error", reject)
    child.on("close", () => resolve())
  })

/** /bin, /lib... as the host has them (links of a merged /usr, or folders), for bwrap. */
const systemLinks = (): Array<string> =>
  ["/bin", "/sbin", "/lib", "/lib64"].flatMap((p) => {
    const stat = fs.lstatSync(p, { throwIfNoEntry: false })
    if (stat === undefined) return []
    return stat.isSymbolicLink() ? ["--symlink", fs.readlinkSync(p), p] : ["--ro-bind", p, p]
  })

const floor = (links: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn("bwrap", ["--ro-bind", "/usr", "/usr", ...links, "/usr/bin/true"], { stdio: "ignore" })
    child.on("error", reject)
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`bwrap exited with ${code}`))))
  })

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "artana-bench-shell-")))
  try {
    fs.mkdirSync(path.join(base, "workspace/out"), { recursive: true })
    const repo = path.join(base, "workspace/repo")
    execFileSync("git", ["init", "-q", repo])
    for (let i = 0; i < 5; i++) {
      fs.writeFileSync(path.join(repo, `f${i}.txt`), `file ${i}\n`)
      execFileSync("git", ["-C", repo, "add", "."])
      execFileSync("git", ["-C", repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", `c${i}`])
    }
    const policy = (containment: "bubblewrap" | "none"): Policy.Policy => ({
      baseDir: base,
      document: {
        default: "deny",
        tools: {
          "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1_048_576 },
          "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1_048_576 },
          "shell.run": {
            allow: true, executables: ["true", "git"], denied_tokens: [], timeout_ms: 10_000, max_output_bytes: 65_536,
            containment, max_memory_bytes: 4_294_967_296, max_processes: 128, max_file_bytes: 67_108_864
          }
        }
      }
    })
    const toolOf = (containment: "bubblewrap" | "none") => Sandbox.tools(policy(containment)).find((t) => t.name === "shell.run")!
    const contained = toolOf("bubblewrap")
    const uncontained = toolOf("none")
    const call = (tool: Tool.Tool) => Effect.runPromise(tool.invoke({ command: "true", args: [] }, context))

    const timed = async (f: () => Promise<unknown>) => {
      const t0 = nowUs()
      for (let i = 0; i < CALLS; i++) await f()
      return (nowUs() - t0) / CALLS
    }
    progress(`contained vs bare: ${ROUNDS} rounds of ${CALLS} calls`)
    await timed(() => call(contained))
    await timed(bare)
    await timed(() => call(uncontained))
    const links = systemLinks()
    await timed(() => floor(links))
    const c: Array<number> = []
    const u: Array<number> = []
    const b: Array<number> = []
    const f: Array<number> = []
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ["c", "u", "f", "b"] : ["b", "f", "u", "c"]
      for (const which of order) {
        if (which === "c") c.push(await timed(() => call(contained)))
        else if (which === "u") u.push(await timed(() => call(uncontained)))
        else if (which === "f") f.push(await timed(() => floor(links)))
        else b.push(await timed(bare))
      }
    }
    const cm = median(c)
    const um = median(u)
    const bm = median(b)
    const fm = median(f)

    progress(`git decisions: ${DECISIONS} each`)
    const decision = (containment: "bubblewrap" | "none") => {
      const p = policy(containment)
      const args = { command: "git", args: ["-C", "workspace/repo", "status"] }
      const ok = Sandbox.decide(p, "shell.run", args).ok
      if (!ok) throw new Error(`the git decision was refused (${containment})`)
      const times: Array<number> = []
      for (let i = 0; i < DECISIONS; i++) {
        const t0 = nowUs()
        Sandbox.decide(p, "shell.run", args)
        times.push(nowUs() - t0)
      }
      return median(times) / 1000
    }
    const gitContained = decision("bubblewrap")
    const gitRules = decision("none")

    const baseline = "bare spawn(\"/usr/bin/true\"), awaited to close"
    return {
      name: "shell",
      machine,
      rows: [
        {
          metric: "contained_true_vs_bare_spawn",
          value: cm / bm,
          unit: "ratio",
          baseline,
          baselineValue: bm,
          ratio: cm / bm,
          detail: { contained_median_ms: cm / 1000, bare_median_ms: bm / 1000, overhead_ms: (cm - bm) / 1000, target_ratio: 3, target_ms: 20, rounds: ROUNDS, calls_per_round: CALLS }
        },
        {
          metric: "uncontained_true_vs_bare_spawn",
          value: um / bm,
          unit: "ratio",
          baseline,
          baselineValue: bm,
          ratio: um / bm,
          detail: { uncontained_median_ms: um / 1000, bare_median_ms: bm / 1000 }
        },
        {
          metric: "bwrap_floor_vs_bare_spawn",
          value: fm / bm,
          unit: "ratio",
          baseline,
          baselineValue: bm,
          ratio: fm / bm,
          detail: { bwrap_floor_median_ms: fm / 1000, bare_median_ms: bm / 1000 }
        },
        {
          metric: "git_decision_ms",
          value: gitContained,
          unit: "ms",
          baseline: "the same decision with containment: none",
          baselineValue: gitRules,
          ratio: gitContained / gitRules,
          detail: { contained_ms: gitContained, uncontained_ms: gitRules, decisions: DECISIONS }
        }
      ]
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true })
  }
}
