// The live-approval example, run as a person runs it (`tsx src/live-approval.ts`, its stdin driven by the test): the
// answer streams, the approval of `transfer_funds` is asked on the terminal inside the streamed turn, and the same
// stream carries on with the decision. Offline (scripted deltas) and through the real openai SDK (SSE, local server).
import { afterAll, describe, expect, it } from "vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { FakeOpenAi } from "@artana/model-openai/testing"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-live-approval-example-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const intro = "Sure: I will move $250 from acc-1 to acc-2 with transfer_funds. That needs your approval."
const done = "Done: $250 went from acc-1 to acc-2 (reference tx-acc-1-acc-2-250)."

/** Runs the example in a child process; answers `answer` on its stdin once it asks. What it printed, and how it ended. */
const runExample = (answer: string, env: Record<string, string | undefined>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string; textBeforeAsk: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/live-approval.ts"], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      // The example keeps its database in a fresh temp directory (for `artana show-run`): this test's root holds it.
      env: { ...process.env, TMPDIR: root, OPENAI_API_KEY: "", OPENAI_BASE_URL: "", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`the example did not finish: ${stdout} ${stderr}`))), 150_000)
    let stdout = ""
    let stderr = ""
    let textBeforeAsk = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => {
      stdout += s
      if (textBeforeAsk === "" && /\? \[y\/N\] $/.test(stdout)) {
        textBeforeAsk = stdout
        child.stdin.write(`${answer}\n`)
      }
    })
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
    child.once("close", (code) => (clearTimeout(timer), resolve({ code, stdout, stderr, textBeforeAsk })))
  })

describe("live-approval example", () => {
  it("offline: the turn streams, the terminal asks inside it, 'y' approves and the stream carries on to the end", async () => {
    const { code, stderr, stdout, textBeforeAsk } = await runExample("y", {})
    expect(stderr).toBe("")
    expect(code).toBe(0)
    expect(stdout).toContain("ScriptedModel (offline: simulated deltas; set OPENAI_API_KEY to use OpenAI)")
    // Before the question: the turn's text, streamed, then the pending approval with the call's arguments.
    expect(textBeforeAsk).toContain(`agent: ${intro}\n\n[pending approval pay-`)
    expect(textBeforeAsk).toMatch(/approve transfer_funds \{"from":"acc-1","to":"acc-2","amountUsd":250\}\? \[y\/N\] $/)
    // After it, on the same stream: the decision, the tool's result, the next turn, the end.
    const rest = stdout.slice(textBeforeAsk.length)
    expect(rest).toContain("[approved by you@terminal]\n")
    expect(rest).toContain('[transfer_funds ran: {"ok":true,"reference":"tx-acc-1-acc-2-250"}]\n')
    expect(rest).toContain(`agent: ${done}`)
    expect(rest).toContain(`run completed: ${JSON.stringify(done)}`)
    expect(stdout).not.toContain("[logged reply")
    // The run's file is kept for inspection, and the example says how.
    expect(stdout).toMatch(/inspect it: artana show-run pay-\d+ --tenant \S+ --db '[^']+artana\.db'\n/)
  }, 180_000)

  it("offline: 'n' rejects; the model sees the rejection and the run still ends", async () => {
    const { code, stdout } = await runExample("n", {})
    expect(code).toBe(0)
    const rest = stdout.slice(stdout.indexOf("[y/N] "))
    expect(rest).toContain("[rejected by you@terminal]\n")
    expect(rest).toContain("[transfer_funds did not run: ")
    expect(rest).not.toContain("transfer_funds ran")
    expect(rest).toContain("agent: Understood: I did not move the money")
    expect(rest).toContain("run completed: ")
  }, 180_000)

  it("through the real openai SDK streaming (SSE) from a local server: the same, delta by delta", async () => {
    const server = await FakeOpenAi.start([
      FakeOpenAi.toolCalls([{ name: "transfer_funds", arguments: { from: "acc-1", to: "acc-2", amountUsd: 250 } }], { content: intro, pieces: 8 }),
      FakeOpenAi.text(done, { pieces: 6 })
    ])
    try {
      const { code, stderr, stdout, textBeforeAsk } = await runExample("yes", { OPENAI_BASE_URL: server.url, OPENAI_API_KEY: "sk-test", OPENAI_MODEL: "gpt-4o-mini" })
      expect(stderr).toBe("")
      expect(code).toBe(0)
      expect(stdout).toContain("model: OpenAI (SSE)")
      expect(textBeforeAsk).toContain(`agent: ${intro}\n\n[pending approval pay-`)
      expect(stdout).toContain(`agent: ${done}`)
      expect(stdout).toContain(`run completed: ${JSON.stringify(done)}`)
      expect(server.requests.map((r) => (r.body as { stream?: boolean }).stream)).toEqual([true, true])
    } finally {
      await server.close()
    }
  }, 180_000)
})
