import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { EventStore, Verify } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const WRITER = fileURLToPath(new URL("./race/writer.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./race/tsconfig.json", import.meta.url))

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-store-sqlite-race-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

interface Outcome {
  readonly name: string
  readonly created?: string
  readonly next?: string
  readonly failed?: string
}

/** Runs one writer process to its end; its last stdout line is its outcome. */
const writer = (filename: string, startAt: number, name: string) =>
  Effect.async<Outcome, Error>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", WRITER, filename, String(startAt), name],
      { cwd: REPO_ROOT, env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const line = stdout.trim().split("\n").pop() ?? ""
        try {
          const parsed: Outcome = JSON.parse(line)
          resume(Effect.succeed(parsed))
        } catch {
          resume(Effect.fail(new Error(`writer ${name} printed no outcome (${String(error)}): ${stderr}`)))
        }
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("SqliteStore across processes", () => {
  it.live("writers that open one fresh file at once all migrate it, and exactly one wins each append", () =>
    Effect.gen(function*() {
      const filename = path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")
      const names = ["w1", "w2", "w3", "w4"]
      // Past the children's start-up, so that they open the database and append at the same moment.
      const startAt = Date.now() + 4_000
      const outcomes = yield* Effect.forEach(names, (name) => writer(filename, startAt, name), { concurrency: "unbounded" })

      expect(outcomes.filter((o) => o.failed !== undefined)).toEqual([])
      expect(outcomes.map((o) => o.created).sort()).toEqual(["SequenceConflict", "SequenceConflict", "SequenceConflict", "ok"])
      expect(outcomes.map((o) => o.next).sort()).toEqual(["SequenceConflict", "SequenceConflict", "SequenceConflict", "ok"])

      const store = Context.get(yield* Layer.build(SqliteStore.layer({ filename })), EventStore.EventStore)
      const log = yield* store.readEvents("acme", "race")
      expect(log.map((e) => e.seq)).toEqual([1, 2, 3])
      expect(Verify.verifyEvents("race", log).ok).toBe(true)
      const creator = outcomes.find((o) => o.created === "ok")!.name
      expect(log[0]!.payload).toMatchObject({ _tag: "RunStarted", workflow: creator })
      const third = outcomes.find((o) => o.next === "ok")!.name
      expect(log[2]!.payload).toMatchObject({ _tag: "StepCompleted", name: `${third}-next` })
    }).pipe(Effect.scoped), 60_000)
})
