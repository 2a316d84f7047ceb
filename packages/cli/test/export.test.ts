// `artana export`, and the read commands over a run of 200,000 events, run as users run them: child processes on real
// SQLite files, the long ones with their heap capped far below what holding the log takes.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { EventLines, EventStore, Json, Kernel, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { Plan, PlanRunner } from "@artana/cli"
import { SqliteStore } from "@artana/store-sqlite"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { artana, artanaToFile, cleanup, sqliteKernel, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

let dir = ""
let db = ""
let longDb = ""
const acme = tenant("acme")
const LONG = 200_000
// The heap, in MB, of the commands that read the long runs: their logs take several times that as objects.
const HEAP_MB = 64
const capped = { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` }

/** A file's JSON lines, decoded and verified a line at a time (as a program elsewhere would check an export). */
const verifyLines = (file: string, runId: string) =>
  Effect.promise(async () => {
    const verifier = Verify.make(runId)
    let count = 0
    let broken: string | undefined
    for await (const line of readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity })) {
      const event = EventLines.decode(line)
      if (Either.isLeft(event)) {
        broken = `line ${count + 1}: ${event.left}`
        break
      }
      count++
      verifier.push([event.right])
    }
    return { count, broken, report: verifier.finish() }
  })

const plan = (steps: number) =>
  Either.getOrThrow(Plan.parse(`steps:\n${Array.from({ length: steps }, (_, i) => `  - { id: s${i}, tool: echo, args: { text: "${i}" } }`).join("\n")}\n`, { file: "plan.yaml" }))

beforeAll(async () => {
  dir = tempDir()
  db = path.join(dir, "artana.db")
  await Effect.runPromise(PlanRunner.run({ runId: "plan-ok", tenant: acme, input: { plan: plan(5) } }).pipe(Effect.provide(sqliteKernel(db))))
  // Two runs of 200,000 events, written in bulk: a paused run of memoized steps, and a plan run (its one planned step,
  // then 99,999 pairs of ToolRequested and ToolCompleted of steps a later version of the plan lists: the report shows them).
  longDb = path.join(dir, "long.db")
  const encoded = Json.fromUnknown(Schema.encodeSync(PlanRunner.Input)({ plan: plan(1) }))
  if (!encoded.ok) throw new Error(encoded.error)
  const input = encoded.json
  await Effect.runPromise(Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    yield* TestLog.LongRun.write(store, { runId: "long", tenant: acme, steps: LONG - 2 })
    yield* TestLog.write(store, {
      runId: "long-plan",
      tenantId: "acme",
      events: LONG,
      event: (seq) => {
        if (seq === 1) return { stepKey: "run", payload: { _tag: "RunStarted", workflow: PlanRunner.WORKFLOW, input, tenant: acme } }
        if (seq === LONG) return { stepKey: "run", payload: { _tag: "RunCompleted", output: { steps: [] } } }
        const step = Math.floor((seq - 2) / 2)
        const stepKey = Plan.stepKey(`s${step}`)
        return seq % 2 === 0
          ? { stepKey, payload: { _tag: "ToolRequested", tool: "echo", arguments: JSON.stringify({ text: `${step}` }), idempotencyKey: `long-plan/${stepKey}` } }
          : { stepKey, payload: { _tag: "ToolCompleted", tool: "echo", result: { echoed: `${step}` } } }
      }
    })
  }).pipe(Effect.provide(SqliteStore.layer({ filename: longDb }))))
}, 900_000)

describe("artana export", () => {
  it.live("writes the run's events as JSON lines, one per event with its chain fields, that decode and verify elsewhere: to stdout, or to --out FILE", () =>
    Effect.gen(function*() {
      const events = yield* Effect.flatMap(Kernel.Kernel, (k) => k.readEvents({ tenantId: "acme", runId: "plan-ok" })).pipe(Effect.provide(sqliteKernel(db)))
      const out = yield* artana(["export", "plan-ok", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(out.code).toBe(0)
      const lines = out.stdout.trimEnd().split("\n")
      expect(lines).toHaveLength(events.length)
      const decoded = lines.map((line) => Either.getOrThrow(EventLines.decode(line)))
      expect(decoded).toEqual(events)
      expect(Object.keys(JSON.parse(lines[0]!) as object)).toEqual(["eventId", "runId", "tenantId", "seq", "timestamp", "type", "stepKey", "payload", "prevHash", "hash"])
      const last = events[events.length - 1]!
      expect(out.stderr).toBe(`exported ${events.length} events of run plan-ok, verified, head ${last.seq}:${last.hash}\n`)

      const file = path.join(dir, "plan-ok.jsonl")
      const toFile = yield* artana(["export", "plan-ok", "--db", db, "--tenant", "acme", "--format", "jsonl", "--out", file], { cwd: dir })
      expect(toFile.code).toBe(0)
      expect(toFile.stdout).toBe("")
      expect(fs.readFileSync(file, "utf8")).toBe(out.stdout)
      expect(yield* verifyLines(file, "plan-ok")).toMatchObject({ count: events.length, report: { ok: true, headSeq: last.seq, headHash: last.hash } })

      // Another tenant's run is not found (exit 5), and writes no file.
      const elsewhere = path.join(dir, "nothing.jsonl")
      const other = yield* artana(["export", "plan-ok", "--db", db, "--tenant", "globex", "--out", elsewhere], { cwd: dir })
      expect(other.code).toBe(5)
      expect(fs.existsSync(elsewhere)).toBe(false)
    }))

  it.live("a run whose log was altered exports nothing past the broken page: exit 6, and --out leaves FILE as it was", () =>
    Effect.gen(function*() {
      const own = path.join(tempDir(), "tampered.db")
      fs.copyFileSync(db, own)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE events SET payload = json_set(payload, '$.result.echoed', 'forged') WHERE run_id = 'plan-ok' AND seq = 3`
      }).pipe(Effect.provide(Layer.orDie(SqliteStore.layer({ filename: own }))))
      const out = yield* artana(["export", "plan-ok", "--db", own, "--tenant", "acme"], { cwd: dir })
      expect(out.code).toBe(6)
      expect(out.stdout).toBe("")
      expect(out.stderr).toContain("seq 3")
      const file = path.join(path.dirname(own), "kept.jsonl")
      fs.writeFileSync(file, "an earlier export\n")
      const toFile = yield* artana(["export", "plan-ok", "--db", own, "--tenant", "acme", "--out", file], { cwd: dir })
      expect(toFile.code).toBe(6)
      expect(fs.readFileSync(file, "utf8")).toBe("an earlier export\n")
      expect(fs.readdirSync(path.dirname(own)).filter((f) => f.includes("partial"))).toEqual([])
    }))
})

describe(`a run of ${LONG} events, read by commands whose heap is capped at ${HEAP_MB} MB`, () => {
  it.live("export writes every event, verified, and the file verifies elsewhere", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "long.jsonl")
      const out = yield* artana(["export", "long", "--db", longDb, "--tenant", "acme", "--out", file], { cwd: dir, env: capped })
      expect(out.stderr).toMatch(new RegExp(`^exported ${LONG} events of run long, verified, head ${LONG}:[0-9a-f]{64} to `))
      expect(out.code).toBe(0)
      const checked = yield* verifyLines(file, "long")
      expect(checked).toMatchObject({ count: LONG, broken: undefined, report: { ok: true, headSeq: LONG } })
    }), 900_000)

  it.live("report --from 1 reports every step of a plan run, streamed, and its JSON is whole", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "long-report.json")
      const out = yield* artanaToFile(["report", "long-plan", "--db", longDb, "--tenant", "acme", "--from", "1", "--format", "json"], file, { cwd: dir, env: capped })
      expect(out.stderr).toBe("")
      expect(out.code).toBe(0)
      const report = JSON.parse(fs.readFileSync(file, "utf8")) as {
        readonly steps: ReadonlyArray<{ readonly id: string; readonly status: string }>
        readonly summary: { readonly steps: number; readonly ok: number }
        readonly chain: { readonly ok: boolean }
      }
      const steps = (LONG - 2) / 2
      expect(report.steps).toHaveLength(steps)
      expect(report.steps[steps - 1]).toMatchObject({ id: `s${steps - 1}`, status: "ok" })
      expect(report.summary).toMatchObject({ steps, ok: steps })
      expect(report.chain.ok).toBe(true)
      // The console form likewise: one table header over the pages, every step a row.
      const console = path.join(dir, "long-report.txt")
      const shown = yield* artanaToFile(["report", "long-plan", "--db", longDb, "--tenant", "acme", "--from", "1"], console, { cwd: dir, env: capped })
      expect(shown.stderr).toBe("")
      expect(shown.code).toBe(0)
      const text = fs.readFileSync(console, "utf8")
      expect(text.match(/STEP\s+TOOL\s+DECISION/g)).toHaveLength(1)
      expect(text.split("\n").filter((line) => /^✓ s\d+\s+echo\s+allowed/.test(line))).toHaveLength(steps)
      expect(text).toContain(`${steps} steps: ${steps} ok, 0 denied, 0 failed, 0 skipped`)
    }), 900_000)
})

