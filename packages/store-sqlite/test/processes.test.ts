import { afterAll, describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option } from "effect"
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

/** Runs one writer process to its end (it waits at the barrier in `barrier`); its last stdout line is its outcome. */
const writer = (filename: string, barrier: string, name: string) =>
  Effect.async<Outcome, Error>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", WRITER, filename, barrier, name],
      // A TypeScript loader's cold start each: on a loaded machine over a minute, slow but not wrong.
      { cwd: REPO_ROOT, env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG }, timeout: 300_000 },
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

/**
 * Starts the writers and releases them together once every one is ready (its start-up over: a time chosen in advance
 * came before the start-up of some on a loaded machine); their outcomes. A writer that ends before the barrier fails it.
 */
const released = <A, E>(barrier: string, names: ReadonlyArray<string>, start: (name: string) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fibers = yield* Effect.forEach(names, (name) => Effect.fork(start(name)))
    while (!names.every((name) => fs.existsSync(path.join(barrier, `${name}.ready`)))) {
      for (const fiber of fibers) {
        const ended = yield* Fiber.poll(fiber)
        if (Option.isSome(ended)) {
          const exit = ended.value
          return yield* Effect.dieMessage(`a writer ended before the barrier: ${Exit.isSuccess(exit) ? JSON.stringify(exit.value) : Cause.pretty(exit.cause)}`)
        }
      }
      yield* Effect.sleep("20 millis")
    }
    fs.writeFileSync(path.join(barrier, "go"), "")
    return yield* Fiber.joinAll(fibers)
  })

describe("SqliteStore across processes", () => {
  it.live("writers that open one fresh file at once all migrate it, and exactly one wins each append", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(root, "db-"))
      const filename = path.join(dir, "artana.db")
      const names = ["w1", "w2", "w3", "w4"]
      // Released together once all are started, so that they open the database and append at the same moment.
      const outcomes = yield* released(dir, names, (name) => writer(filename, dir, name))

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
    }).pipe(Effect.scoped), 600_000)
})
