// A run appending alone: its append is written at once, not at the end of the event loop's turn, and a run that
// appends without pause still lets the event loop turn (timers, I/O) every few milliseconds.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type Event, EventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-append-alone-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const started = { _tag: "RunStarted", workflow: "w", input: null, tenant } as const
const step = (name: string) => ({ _tag: "StepCompleted", name, value: name }) as const

/** The store, with every commit's count of appends. */
const observedStore = (filename: string) =>
  Effect.gen(function*() {
    const commits: Array<number> = []
    const context = yield* Layer.build(SqliteStore.layer({ filename, onGroupCommit: (appends) => commits.push(appends) }))
    return { store: Context.get(context, EventStore.EventStore), commits }
  })

/** The next turn of the event loop: what the store gathered in this one is written by then. */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const appendStep = (store: EventStore.Service, log: Array<Event.Event>, name: string) =>
  Effect.gen(function*() {
    const events = TestLog.chain("a", "acme", log, [step(name)])
    yield* store.append({ runId: "a", tenantId: "acme", expectedSeq: log.length, events })
    log.push(...events)
  })

describe("SQLite append of a run alone", () => {
  it.scoped("is committed and answered at once, before anything else the event loop holds runs", () =>
    Effect.gen(function*() {
      const filename = tempDb()
      const { commits, store } = yield* observedStore(filename)
      const log = TestLog.chain("a", "acme", [], [started])
      yield* store.append({ runId: "a", tenantId: "acme", expectedSeq: 0, events: log })
      yield* nextTurn
      let turned = false
      yield* Effect.sync(() => setImmediate(() => (turned = true)))
      yield* appendStep(store, log, "s1")
      // Durable already (a second connection reads it), and the turn it would have waited for has not come.
      expect(turned).toBe(false)
      expect(commits).toEqual([1, 1])
      const other = yield* observedStore(filename)
      const stored = yield* other.store.readEvents("acme", "a")
      expect(stored).toEqual(log)
      expect(Verify.verifyEvents("a", stored).ok).toBe(true)
    }))

  it.scoped("appending without pause, it still lets the event loop turn: a callback queued at its start runs long before its end", () =>
    Effect.gen(function*() {
      const { commits, store } = yield* observedStore(tempDb())
      const log = TestLog.chain("a", "acme", [], [started])
      yield* store.append({ runId: "a", tenantId: "acme", expectedSeq: 0, events: log })
      const APPENDS = 500
      let appended = 0
      let seenAt: number | undefined
      yield* Effect.sync(() => setImmediate(() => (seenAt = appended)))
      for (let i = 1; i <= APPENDS; i++) {
        yield* appendStep(store, log, `s${i}`)
        appended = i
      }
      // 500 commits (each an fsync at synchronous=FULL) take far longer than the few milliseconds a run may write alone.
      expect(seenAt).toBeDefined()
      expect(seenAt!).toBeLessThan(APPENDS)
      // Alone or after the turn, each append is its own commit, and the log is whole.
      expect(commits.length).toBe(APPENDS + 1)
      expect(commits.every((c) => c === 1)).toBe(true)
      const stored = yield* store.readEvents("acme", "a")
      expect(stored.length).toBe(APPENDS + 1)
      expect(Verify.verifyEvents("a", stored).ok).toBe(true)
    }))
})
