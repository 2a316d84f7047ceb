// What the `artana ui` tests share: a store seeded with a lineage (sub-runs, a continue-as-new successor, model spend),
// a run whose log a test edits by hand, and the real `artana ui` process, started and waited for until it listens.
import { type Errors, type Event, EventStore, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { artanaStarted } from "./helpers.js"

export const acme = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 10 })

/** Where the browser tests save their screenshots (gitignored). */
export const SCREENSHOTS = fileURLToPath(new URL("../test-output/ui/", import.meta.url))

const started = (workflow: string, lineage: { readonly parentRunId?: string; readonly rootRunId?: string } = {}): Event.EventPayload => ({
  _tag: "RunStarted",
  workflow,
  input: { task: "summarise the Q3 report" },
  tenant: acme,
  ...lineage
})

const modelStep = (costUsd: number, inputTokens: number, outputTokens: number): ReadonlyArray<Event.EventPayload> => [
  { _tag: "ModelRequested", model: "gpt-test", messages: [{ role: "user", content: "What were Q3's revenues?" }], tools: ["fs.read"], requestHash: "h" },
  { _tag: "ModelCompleted", model: "gpt-test", message: { role: "assistant", content: "1.2M EUR" }, usage: { inputTokens, outputTokens }, costUsd }
]

/** The runs the lineage is made of: id, parent, cost of its one model step, whether it completed. */
export const LINEAGE: ReadonlyArray<{ readonly runId: string; readonly parent?: string; readonly cost: number }> = [
  { runId: "research", cost: 0.5 },
  { runId: "research::sub_agent::a", parent: "research", cost: 0.25 },
  { runId: "research::sub_agent::a::sub_agent::x", parent: "research::sub_agent::a", cost: 0.125 },
  { runId: "research::sub_agent::b", parent: "research", cost: 0.0625 }
]

/**
 * Seeds the store: the lineage of `research` (each run one model step and its end), `long` continued as its successor,
 * and `tampered`, a completed run of steps whose seq 2 a test then edits by hand.
 */
export const seed: Effect.Effect<void, Errors.SequenceConflict | Errors.OwnershipLost | Errors.StoreError, EventStore.EventStore> = Effect.gen(function*() {
  const store = yield* EventStore.EventStore
  const append = (runId: string, payloads: ReadonlyArray<Event.EventPayload>, at: number) =>
    store.append({ runId, tenantId: "acme", expectedSeq: 0, events: TestLog.chain(runId, "acme", [], payloads, at) })
  let at = TestLog.T0
  for (const r of LINEAGE) {
    at += 1000
    const lineage = r.parent === undefined ? {} : { parentRunId: r.parent, rootRunId: "research" }
    yield* append(r.runId, [started("agent", lineage), ...modelStep(r.cost, 100, 20), { _tag: "RunCompleted", output: "done" }], at)
  }
  yield* append("long", [started("chain"), { _tag: "StepCompleted", name: "page", value: 1 }, { _tag: "RunContinued", nextRunId: "long::continued::1", input: { page: 2 } }], at + 1000)
  yield* append("long::continued::1", [
    { _tag: "RunStarted", workflow: "chain", input: null, tenant: acme, rootRunId: "long", continuedFrom: { runId: "long", chainRunId: "long", generation: 1 } },
    { _tag: "RunCompleted", output: "all pages" }
  ], at + 2000)
  yield* append("tampered", [started("steps"), { _tag: "StepCompleted", name: "one", value: 1 }, { _tag: "StepCompleted", name: "two", value: 2 }, { _tag: "RunCompleted", output: 3 }], at + 3000)
})

/** A SQLite file seeded with `seed`. */
export const seededSqlite = (file: string): Effect.Effect<void, unknown> => Effect.provide(seed, SqliteStore.layer({ filename: file }))

/** Edits seq 2 of `tampered` as a person with the file would: its chain then breaks there. */
export const tamper = (file: string) => {
  const Database = SqliteStore.driver()
  const handle = new Database(file)
  try {
    handle.exec("UPDATE events SET payload = json_set(payload, '$.value', 'forged') WHERE run_id = 'tampered' AND seq = 2")
  } finally {
    handle.close()
  }
}

/** The running `artana ui`: its address (and the token it printed, off loopback) and how to stop it. */
export interface Ui {
  readonly url: string
  readonly token: string | undefined
  readonly stderr: () => string
  readonly stop: () => Promise<unknown>
}

/** Starts `artana ui ARGS --port 0` in `cwd` and waits until it prints where it listens. */
export const startUi = (args: ReadonlyArray<string>, cwd: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const child = artanaStarted(["ui", "--port", "0", ...args], { cwd })
      for (let i = 0; i < 1200; i++) {
        const { stderr, stdout } = child.output()
        const url = /http:\/\/\S+?:\d+\//.exec(stdout)?.[0]
        const needsToken = args.includes("--host")
        const token = /\?token=(\S+)/.exec(stderr)?.[1]
        if (url !== undefined && (!needsToken || token !== undefined)) {
          return { url, token, stderr: () => child.output().stderr, stop: child.interrupt } satisfies Ui
        }
        const exited = yield* Effect.promise(() => Promise.race([child.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 100))]))
        if (exited) return yield* Effect.die(new Error(`artana ui exited before listening:\n${stdout}\n${stderr}`))
      }
      yield* Effect.promise(() => child.kill())
      return yield* Effect.die(new Error(`artana ui did not listen within 120 s:\n${child.output().stdout}\n${child.output().stderr}`))
    }),
    (ui) => Effect.promise(() => ui.stop())
  )

/** A fresh folder for the screenshots of one test. */
export const screenshotPath = (name: string) => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true })
  return path.join(SCREENSHOTS, `${name}.png`)
}
