// The agent loop's reads of a long run, each in a process whose heap is capped far below what holding the run's log
// takes: an agent run of 1,200 turns (about 6,000 events and 50 MB of log, each model request carrying a context of
// up to ~64 KB) whose process died before its last turn is resumed, replayed, and run again once completed. The
// resume and the replay read the log a page at a time; the run again reads its end only.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./longRun/child.ts", import.meta.url))
const TURNS = 1200
/**
 * The heap of the processes that read the run, in MB. Its log's payloads are about 50 MB of JSON: the kernel that
 * read a run whole died here ("JavaScript heap out of memory"); a page of it and the agent's context fit.
 */
const HEAP_MB = 64
// Under load (2 cores shared), writing the run takes a minute or more.
const TIMEOUT = 600_000

interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

const children = new Set<ChildProcess>()
const runChild = (args: ReadonlyArray<string>, nodeArgs: ReadonlyArray<string> = []): Promise<ChildExit> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", CHILD, ...args], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })
    children.add(child)
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
    child.once("error", reject)
    child.once("close", (code, signal) => {
      children.delete(child)
      resolve({ code, signal, stdout, stderr })
    })
  })

/** The result line of a capped child that exited with 0. */
const resultOf = async (command: "resume" | "replay" | "rerun"): Promise<unknown> => {
  const e = await runChild([command, db, String(TURNS)], [`--max-old-space-size=${HEAP_MB}`])
  const line = e.stdout.trim().split("\n").pop()
  if (e.code !== 0 || line === undefined) throw new Error(`${command} exited with ${e.signal ?? e.code}\nstdout: ${e.stdout}\nstderr: ${e.stderr.slice(-4000)}`)
  return JSON.parse(line)
}

let dir = ""
let db = ""

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "artana-agent-heap-"))
  db = join(dir, "artana.db")
  // Written live by the agent (at Node's default heap), which dies when its model is asked for the last turn.
  const written = await runChild(["write", db, String(TURNS)])
  if (written.signal !== "SIGKILL") throw new Error(`the writing process was to die at its last turn; it exited with ${written.code}\n${written.stderr.slice(-4000)}`)
}, TIMEOUT)

afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
  if (dir !== "") rmSync(dir, { recursive: true, force: true })
})

describe(`an agent run of ${TURNS} turns, read by processes with a ${HEAP_MB} MB heap`, () => {
  it("is resumed after its process died, replayed, and run again once completed", async () => {
    const completed = { outcome: "result", result: { status: "completed", runId: "long-agent", output: `done after ${TURNS - 1} observations`, turns: TURNS } }
    // The resume replays every turn from the log, then asks the model for the last one.
    expect(await resultOf("resume")).toMatchObject(completed)
    expect(await resultOf("replay")).toMatchObject(completed)
    expect(await resultOf("rerun")).toMatchObject(completed)
  }, TIMEOUT)
})
