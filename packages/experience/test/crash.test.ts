// A process SIGKILLed between the reflection's answer and the saved rules, then resumed by another process: the
// rules are saved exactly once, and the model is not asked again.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { EventStore, Verify } from "@artana/core"
import { ExperienceStore, SqlExperienceStore } from "@artana/experience"
import { SqliteStore } from "@artana/store-sqlite"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./child/learn.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./child/tsconfig.json", import.meta.url))

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-experience-crash-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

/** Runs the child to its end: its exit code or signal, and its last stdout line. */
const child = (filename: string, mode: string, paradigm: string) =>
  Effect.async<{ readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly last: string; readonly stderr: string }>((resume) => {
    const proc = spawn(process.execPath, ["--import", "tsx", CHILD, filename, mode, paradigm], {
      cwd: REPO_ROOT,
      env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    proc.once("exit", (code, signal) => resume(Effect.succeed({ code, signal, last: stdout.trim().split("\n").pop() ?? "", stderr })))
    return Effect.sync(() => proc.kill("SIGKILL"))
  })

describe("a crash between the reflection and the saved rules", () => {
  for (const paradigm of ["workflow", "agent"] as const) {
    for (const mode of ["crash-before-save", "crash-after-save"] as const) {
      it.live(`${paradigm}, ${mode}: the resumed run saves the rules exactly once, without asking the model again`, () =>
        Effect.gen(function*() {
          const filename = path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")
          const crashed = yield* child(filename, mode, paradigm)
          expect(crashed.signal, crashed.stderr).toBe("SIGKILL")
          const resumed = yield* child(filename, "resume", paradigm)
          expect(resumed.code, resumed.stderr).toBe(0)
          expect(JSON.parse(resumed.last)).toMatchObject({ status: "completed" })
          expect(resumed.last).toContain("Booked for 2026-03-15")

          const context = yield* Layer.build(Layer.provideMerge(SqlExperienceStore.layer(), SqliteStore.layer({ filename })))
          const rules = yield* Context.get(context, ExperienceStore.ExperienceStore).getRules("acme", "booking")
          expect(rules).toMatchObject([{ ruleType: "fact", content: "book_flight takes ISO dates", successCount: 0, failCount: 0 }])
          const events = yield* Context.get(context, EventStore.EventStore).readEvents("acme", "run-1")
          expect(Verify.verifyEvents("run-1", events).ok).toBe(true)
          expect(events.filter((e) => e.payload._tag === "ModelRequested")).toHaveLength(2)
          expect(events.filter((e) => e.payload._tag === "StepCompleted" && e.payload.name.endsWith("save_rules"))).toHaveLength(1)
          expect(events.filter((e) => e.payload._tag === "RunResumed")).toHaveLength(1)
        }).pipe(Effect.scoped), 600_000)
    }
  }
})
