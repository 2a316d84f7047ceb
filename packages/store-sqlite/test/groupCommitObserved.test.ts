// `onGroupCommit`: the store says how many appends each of its commits made durable, so a program can see how well
// its appends group (commits per step, the mean group's size) without timing anything.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import { EventStore, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-group-observed-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = { _tag: "RunStarted", workflow: "w", input: null, tenant } as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

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
      yield* Effect.all(Array.from({ length: RUNS }, (_, r) =>
        Effect.gen(function*() {
          const runId = `run-${r}`
          const log = TestLog.chain(runId, "acme", [], [started])
          yield* store.append({ runId, tenantId: "acme", expectedSeq: 0, events: log })
          for (let i = 1; i <= STEPS; i++) {
            const events = TestLog.chain(runId, "acme", log, [step(`s${i}`)])
            yield* store.append({ runId, tenantId: "acme", expectedSeq: log.length, events })
            log.push(...events)
          }
        })), { concurrency: "unbounded", discard: true })
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
