// The root README's five-minute demo, run as written: the block between `<!-- cli-demo:start -->` and
// `<!-- cli-demo:end -->` goes to bash in a temp directory, with `artana` the real command (built from src/bin.ts).
import { afterAll, describe, expect, it } from "vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { ARTANA, cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const README = fileURLToPath(new URL("../../../README.md", import.meta.url))

/** The demo's shell block, as the README has it. */
const demoBlock = (): string => {
  const text = fs.readFileSync(README, "utf8")
  const start = text.indexOf("<!-- cli-demo:start -->")
  const end = text.indexOf("<!-- cli-demo:end -->")
  if (start === -1 || end === -1) throw new Error("the README has no cli-demo block")
  const fenced = /```sh\n([\s\S]*?)```/.exec(text.slice(start, end))
  if (fenced === null) throw new Error("the cli-demo block has no sh code block")
  return fenced[1]!
}

describe("the README's five-minute CLI demo", () => {
  it("runs as written: a denial, the report, a replay that matches, an intact chain", () => {
    const block = demoBlock()
    const lines = block.split("\n").filter((l) => l.startsWith("artana "))
    expect(lines.map((l) => l.split(/\s+/)[1])).toEqual(["run", "report", "replay", "verify", "report"])
    const cwd = tempDir()
    // Each `artana` prints its exit code after its output, so one bash run shows every command's outcome.
    const script = [
      `artana() { node ${ARTANA.map((a) => `"${a}"`).join(" ")} "$@"; echo "[exit $?]"; }`,
      block
    ].join("\n")
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" }
    for (const key of ["ARTANA_DB", "ARTANA_TENANT", "ARTANA_AUDIT_KEY", "FORCE_COLOR"]) delete env[key]
    const output = execFileSync("bash", ["-c", script], {
      cwd,
      env,
      encoding: "utf8",
      timeout: 240_000
    })
    const exits = [...output.matchAll(/\[exit (\d+)\]/g)].map((m) => Number(m[1]))
    expect(exits).toEqual([3, 3, 0, 0, 3])
    expect(output).toContain("run demo-1 completed")
    expect(output).toMatch(/peek\s+fs\.read\s+denied/)
    expect(output).toContain("/etc/passwd resolves to /etc/passwd, which is outside the allowed paths")
    expect(output).toContain("matches its log")
    expect(output).toContain("hash chain intact")
    // The last command's output: the JSON report.
    const json = output.slice(output.lastIndexOf("[exit", output.lastIndexOf("[exit") - 1) + "[exit 0]".length, output.lastIndexOf("[exit"))
    const report = JSON.parse(json.trim()) as { readonly steps: ReadonlyArray<{ readonly id: string; readonly decision: string }> }
    expect(report.steps.map((s) => [s.id, s.decision])).toEqual([["notes", "allowed"], ["count", "allowed"], ["peek", "denied"], ["save", "allowed"]])
    const demo = path.join(cwd, "artana-demo")
    expect(fs.readFileSync(path.join(demo, "workspace/out/summary.txt"), "utf8")).toBe("2 quarters of notes")
    expect(fs.existsSync(path.join(demo, "artana.db"))).toBe(true)
  }, 300_000)
})
