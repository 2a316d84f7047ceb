// A process SIGKILLed in the handler of an idempotent tool, on PostgreSQL, and a new process that resumes the run
// (as store-sqlite's recovery tests do on SQLite). With the kernel's one-commit durability the call left no trace in
// the log, so the resume runs the handler again, once, with the same idempotency key, and nothing else runs again;
// with the default two-phase log the crashed run holds the call's ToolRequested. Child program: crash/child.ts.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Context, Effect, Layer } from "effect"
import { type Event, EventStore, Verify } from "@artana/core"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))
const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./crash/child.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./race/tsconfig.json", import.meta.url))
const RUN = "order-1"

interface ChildExit {
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the child to its end (or its death) with a generous limit: two cores are shared with the server. */
const child = (args: ReadonlyArray<string>) =>
  Effect.async<ChildExit>((resume) => {
    const process_ = execFile(
      process.execPath,
      ["--import", "tsx", CHILD, ...args],
      { cwd: REPO_ROOT, env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG }, timeout: 300_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ signal: error?.signal ?? null, stdout, stderr }))
    )
    return Effect.sync(() => process_.kill("SIGKILL"))
  })

const workDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "artana-pg-crash-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const lines = (dir: string, name: string) =>
  existsSync(join(dir, name)) ? readFileSync(join(dir, name), "utf8").split("\n").filter((l) => l !== "") : []
const stepTypes = (events: ReadonlyArray<Event.Event>, stepKey: string) => events.filter((e) => e.stepKey === stepKey).map((e) => e.type)

const CASES = [
  { durability: "one-commit", crashedStep: [] },
  { durability: "two-phase", crashedStep: ["ToolRequested"] }
] as const

describe.skipIf(pg.url === undefined)(`a process killed in a tool's handler, on PostgreSQL (${pg.description})`, () => {
  it.live.each(CASES)("$durability: the resumed run calls the handler again once, with the same key; nothing else runs again", (c) =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const dir = yield* workDir
      const first = `${RUN}/tool:1`

      // 1. The first process dies in the first call's handler, after its side effect, before the call's outcome is logged.
      const crashed = yield* child([url, dir, c.durability, "record:first:after-effect"])
      expect(crashed.signal, crashed.stderr).toBe("SIGKILL")
      const store = Context.get(yield* Layer.build(PostgresStore.layer({ url, pool: { max: 1 } })), EventStore.EventStore)
      const atCrash = yield* store.readEvents("acme", RUN)
      expect(Verify.verifyEvents(RUN, atCrash).ok).toBe(true)
      expect((yield* store.getRun("acme", RUN)).status).toBe("running")
      // One commit: the call is logged only with its outcome, after the handler, so the crash left no trace of it.
      expect(stepTypes(atCrash, "tool:1")).toEqual(c.crashedStep)
      expect(lines(dir, "attempts.log")).toEqual([`attempt ${first}`])

      // 2. A new process resumes the run to its end.
      const resumed = yield* child([url, dir, c.durability])
      const result = JSON.parse(resumed.stdout.trim().split("\n").pop() ?? "{}")
      expect(result, resumed.stderr).toMatchObject({
        status: "completed",
        output: { prepared: 41, first: { key: first, fresh: false }, second: { key: `${RUN}/tool:2`, fresh: true } }
      })
      // The handler ran again once, with the same key; the side effect happened once; the memoized step did not re-run.
      expect(lines(dir, "attempts.log")).toEqual([`attempt ${first}`, `attempt ${first}`, `attempt ${RUN}/tool:2`])
      expect(lines(dir, "effects.log")).toEqual([`record ${first}`, `record ${RUN}/tool:2`])
      expect(lines(dir, "steps.log")).toEqual(["step prepare"])

      const log = yield* store.readEvents("acme", RUN)
      expect(Verify.verifyEvents(RUN, log).ok).toBe(true)
      expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1))
      expect(log.slice(0, atCrash.length)).toEqual(atCrash)
      expect(stepTypes(log, "tool:1")).toEqual(["ToolRequested", "ToolCompleted"])
      expect(stepTypes(log, "tool:2")).toEqual(["ToolRequested", "ToolCompleted"])
      expect(log.filter((e) => e.type === "RunResumed")).toHaveLength(1)
      expect(log[log.length - 1]!.type).toBe("RunCompleted")
    }).pipe(Effect.scoped), 600_000)
})
