// Group commit: appends made together share one transaction (a savepoint each), and each is answered only once
// that transaction committed.
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import { EventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const WRITER = fileURLToPath(new URL("./child/group-writer.ts", import.meta.url))

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-group-commit-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = { _tag: "RunStarted", workflow: "w", input: null, tenant } as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

const openStore = (filename: string) =>
  Effect.map(Layer.build(SqliteStore.layer({ filename })), (context) => Context.get(context, EventStore.EventStore))

/** `runs` runs appending at once, each its start and then `steps` steps one after the other: each run's log, by run id. */
const runsAppending = (store: EventStore.Service, runs: number, steps: number) =>
  Effect.map(
    Effect.all(Array.from({ length: runs }, (_, r) =>
      Effect.gen(function*() {
        const runId = `run-${r}`
        const log = TestLog.chain(runId, "acme", [], [started])
        yield* store.append({ runId, tenantId: "acme", expectedSeq: 0, events: log })
        for (let i = 1; i <= steps; i++) {
          const events = TestLog.chain(runId, "acme", log, [step(`s${i}`)])
          yield* store.append({ runId, tenantId: "acme", expectedSeq: log.length, events })
          log.push(...events)
        }
        return [runId, log] as const
      })), { concurrency: "unbounded" }),
    (entries) => new Map(entries)
  )

describe("SQLite group commit", () => {
  it.scoped("appends made together are written together, and one the store refuses fails alone", () =>
    Effect.gen(function*() {
      const store = yield* openStore(tempDb())
      const runs = ["a", "b", "c", "d"]
      const firsts = runs.map((run) => TestLog.chain(run, "acme", [], [started]))
      // Created together: one group of four new runs.
      yield* Effect.all(runs.map((run, i) => store.append({ runId: run, tenantId: "acme", expectedSeq: 0, events: firsts[i]! })), { concurrency: "unbounded" })
      // Then, together again: three follow their heads, one (b) claims a seq already written.
      const next = runs.map((run, i) => TestLog.chain(run, "acme", firsts[i]!, [step(`${run}-2`)]))
      const outcomes = yield* Effect.all(
        runs.map((run, i) =>
          Effect.either(store.append({ runId: run, tenantId: "acme", expectedSeq: run === "b" ? 0 : 1, events: run === "b" ? firsts[i]! : next[i]! }))
        ),
        { concurrency: "unbounded" }
      )
      expect(outcomes.map((o) => Either.isRight(o) ? "ok" : o.left._tag)).toEqual(["ok", "SequenceConflict", "ok", "ok"])
      for (const [i, run] of runs.entries()) {
        const stored = yield* store.readEvents("acme", run)
        expect(stored).toEqual(run === "b" ? firsts[i]! : [...firsts[i]!, ...next[i]!])
        expect(Verify.verifyEvents(run, stored).ok).toBe(true)
      }
    }))

  it.scoped("100 runs appending at once: every run's log is whole, in order, and verifies", () =>
    Effect.gen(function*() {
      const store = yield* openStore(tempDb())
      const logs = yield* runsAppending(store, 100, 20)
      for (const [runId, log] of logs) {
        const stored = yield* store.readEvents("acme", runId)
        expect(stored).toEqual(log)
        expect(Verify.verifyEvents(runId, stored).ok).toBe(true)
      }
      expect((yield* store.listRuns("acme")).length).toBe(100)
    }))

  it.scoped("a writer killed mid-flight (SIGKILL) lost no append it had acknowledged: every answer came after its commit", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const acked = yield* Effect.promise(() =>
        new Promise<ReadonlyArray<string>>((resolve, reject) => {
          const child = spawn(process.execPath, ["--import", "tsx", WRITER, filename, "50"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })
          let out = ""
          let err = ""
          child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
            out += chunk
            // Killed once it has answered enough appends, while the 50 runs are still appending.
            if (out.split("\n").length > 1500) child.kill("SIGKILL")
          })
          child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk))
          child.once("error", reject)
          child.once("close", (_code, signal) =>
            signal === "SIGKILL" ? resolve(out.split("\n").slice(0, -1)) : reject(new Error(`the writer ended on its own: ${err}`)))
        })
      )
      expect(acked.length).toBeGreaterThanOrEqual(1500)
      const store = yield* openStore(filename)
      const heads = new Map<string, number>()
      for (const line of acked) {
        const [runId = "", seq = "0"] = line.split(" ")
        heads.set(runId, Math.max(heads.get(runId) ?? 0, Number(seq)))
      }
      expect(heads.size).toBe(50)
      for (const [runId, acknowledged] of heads) {
        const stored = yield* store.readEvents("acme", runId)
        // At least what was acknowledged (a commit whose answer the kill cut off may hold more), chained whole.
        expect(stored.length).toBeGreaterThanOrEqual(acknowledged)
        expect(Verify.verifyEvents(runId, stored).ok).toBe(true)
      }
    }), 600_000)
})

// `onGroupCommit`: the store says how many appends each of its commits made durable, so a program can see how well
// its appends group (commits per step, the mean group's size) without timing anything.
const observedStore = (filename: string) =>
  Effect.gen(function*() {
    const commits: Array<number> = []
    const context = yield* Layer.build(SqliteStore.layer({ filename, onGroupCommit: (appends) => commits.push(appends) }))
    return { store: Context.get(context, EventStore.EventStore), commits }
  })

describe("SQLite group commit, observed", () => {
  it.scoped("each commit reports the appends it made durable: they add up to every acknowledged append, in fewer commits", () =>
    Effect.gen(function*() {
      const { commits, store } = yield* observedStore(tempDb())
      const RUNS = 50
      const STEPS = 10
      yield* runsAppending(store, RUNS, STEPS)
      expect(commits.reduce((n, c) => n + c, 0)).toBe(RUNS * (STEPS + 1))
      expect(commits.every((c) => c >= 1)).toBe(true)
      // Made together, committed together: at least one commit held more than one append.
      expect(commits.length).toBeLessThan(RUNS * (STEPS + 1))
    }))

  it.scoped("an append the store refuses is not counted: only what a commit made durable is", () =>
    Effect.gen(function*() {
      const { commits, store } = yield* observedStore(tempDb())
      const first = TestLog.chain("a", "acme", [], [started])
      yield* store.append({ runId: "a", tenantId: "acme", expectedSeq: 0, events: first })
      const refused = yield* Effect.either(store.append({ runId: "a", tenantId: "acme", expectedSeq: 0, events: first }))
      expect(Either.isLeft(refused) && refused.left._tag).toBe("SequenceConflict")
      expect(commits).toEqual([1])
    }))
})
