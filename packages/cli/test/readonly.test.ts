// The read commands on a database nobody may write (a read-only file system, a read-only file), on a database from a
// newer Artana, and on a log edited by hand: real child processes, real SQLite files, real read-only mounts.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Kernel } from "@artana/core"
import { Plan, PlanRunner } from "@artana/cli"
import { SqliteStore } from "@artana/store-sqlite"
import { Effect, Either } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { artana, artanaJson, artanaReadOnlyMount, cleanup, greet, sqliteKernel, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

const plan = (text: string) => Either.getOrThrow(Plan.parse(text, { file: "plan.yaml" }))
const acme = tenant("acme")

let source = ""

beforeAll(async () => {
  source = path.join(tempDir(), "runs.db")
  await Effect.runPromise(Effect.gen(function*() {
    yield* PlanRunner.run({ runId: "plan-ok", tenant: acme, input: { plan: plan("steps:\n  - { id: hello, tool: echo, args: { text: hi } }\n  - { id: world, tool: echo, args: { text: there } }\n") } })
    const kernel = yield* Kernel.Kernel
    yield* kernel.execute(greet, { runId: "root", tenant: acme, input: { name: "root" } })
  }).pipe(Effect.provide(sqliteKernel(source))))
}, 60_000)

/** A copy of the database in a directory of its own. */
const copy = () => {
  const dir = tempDir()
  const db = path.join(dir, "runs.db")
  fs.copyFileSync(source, db)
  return { dir, db }
}

/** Statements run on the file with the driver, as a person editing it by hand would. */
const byHand = (db: string, ...statements: ReadonlyArray<string>) => {
  const Database = SqliteStore.driver()
  const handle = new Database(db)
  try {
    for (const statement of statements) handle.exec(statement)
  } finally {
    handle.close()
  }
}

const fingerprint = (db: string) => ({
  sha256: crypto.createHash("sha256").update(fs.readFileSync(db)).digest("hex"),
  mtimeMs: fs.statSync(db).mtimeMs
})

/** The four read commands, each as `run` runs it, with what each must print. */
const readEverything = (run: (args: ReadonlyArray<string>) => Effect.Effect<{ code: number | null; stdout: string; stderr: string }>, db: string) =>
  Effect.gen(function*() {
    const common = ["--db", db, "--tenant", "acme"]
    const listed = yield* run(["list-runs", ...common, "--format", "json"])
    expect(listed.code, listed.stderr).toBe(0)
    expect((JSON.parse(listed.stdout) as { runs: ReadonlyArray<{ runId: string }> }).runs.map((r) => r.runId).sort()).toEqual(["plan-ok", "root"])
    const shown = yield* run(["show-run", "root", ...common])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toContain("run root")
    const reported = yield* run(["report", "plan-ok", ...common])
    expect(reported.code, reported.stderr).toBe(0)
    expect(reported.stdout).toContain("2 steps: 2 ok")
    const verified = yield* run(["verify", "plan-ok", ...common])
    expect(verified.code, verified.stderr).toBe(0)
    expect(verified.stdout).toContain("hash chain intact")
  })

describe("the read commands on a database nobody may write", () => {
  it.live("on a read-only file system (its directory mounted read-only): list-runs, show-run, report and verify all read it", () =>
    Effect.gen(function*() {
      const { dir, db } = copy()
      const before = fingerprint(db)
      yield* readEverything((args) => artanaReadOnlyMount(dir, args, { cwd: dir }), db)
      expect(fs.readdirSync(dir)).toEqual(["runs.db"])
      expect(fingerprint(db)).toEqual(before)
    }))

  it.live("a read-only database file in a writable directory (the file alone mounted read-only) is read, and its bytes stay", () =>
    Effect.gen(function*() {
      const { dir, db } = copy()
      fs.chmodSync(db, 0o444)
      const before = fingerprint(db)
      yield* readEverything((args) => artanaReadOnlyMount(db, args, { cwd: dir }), db)
      expect(fingerprint(db)).toEqual(before)
    }))

  it.live("a writable database is not written either: no migration, no ledger, no user_version on a file from before them", () =>
    Effect.gen(function*() {
      const { dir, db } = copy()
      byHand(db, "DROP TABLE IF EXISTS event_store_migrations", "DROP TABLE IF EXISTS task_queue_migrations", "PRAGMA user_version = 0")
      const before = fingerprint(db)
      yield* readEverything((args) => artana(args, { cwd: dir }), db)
      expect(fingerprint(db)).toEqual(before)
    }))
})

describe("a database from a newer Artana", () => {
  it.live("is refused by the read commands at once, naming both versions and what to do (exit 7), and left as it was", () =>
    Effect.gen(function*() {
      const { dir, db } = copy()
      byHand(db, "PRAGMA user_version = 999")
      const before = fingerprint(db)
      const listed = yield* artana(["list-runs", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(listed.code).toBe(7)
      expect(listed.stderr).toContain("schema is at version 999, this Artana's at version 1")
      expect(listed.stderr).toContain("upgrade Artana")
      const json = yield* artana(["show-run", "root", "--db", db, "--tenant", "acme", "--format", "json"], { cwd: dir })
      expect(json.code).toBe(7)
      expect(JSON.parse(json.stderr)).toMatchObject({ error: { tag: "SchemaMismatch", exitCode: 7 } })
      expect(fingerprint(db).sha256).toBe(before.sha256)
    }))
})

describe("a run whose log was edited by hand", () => {
  it.live("show-run and report print it between loud marks, name the broken seq, and exit 6; JSON carries the chain", () =>
    Effect.gen(function*() {
      const { dir, db } = copy()
      byHand(db, "UPDATE events SET payload = json_set(payload, '$.result.echoed', 'forged') WHERE run_id = 'plan-ok' AND seq = 3")
      const common = ["--db", db, "--tenant", "acme"]

      const shown = yield* artana(["show-run", "plan-ok", ...common], { cwd: dir })
      expect(shown.code).toBe(6)
      const lines = shown.stdout.trim().split("\n")
      expect(lines[0]).toContain("✗ TAMPERED: run plan-ok's hash chain is broken at seq 3")
      expect(lines[lines.length - 2]).toContain("✗ TAMPERED")
      expect(shown.stdout).toMatch(/3\s+\+\d+ ms\s+\S+\s+ToolCompleted ✗ chain broken here/)
      const shownJson = yield* artanaJson(["show-run", "plan-ok", ...common], { cwd: dir })
      expect(shownJson.code).toBe(6)
      expect(shownJson.json).toMatchObject({ run: { runId: "plan-ok" }, chain: { ok: false, firstBrokenSeq: 3 } })

      const reported = yield* artana(["report", "plan-ok", ...common], { cwd: dir })
      expect(reported.code).toBe(6)
      expect(reported.stdout.split("\n")[0]).toContain("✗ TAMPERED: run plan-ok's hash chain is broken at seq 3")
      const reportJson = yield* artanaJson(["report", "plan-ok", ...common], { cwd: dir })
      expect(reportJson.code).toBe(6)
      expect(reportJson.json).toMatchObject({ runId: "plan-ok", chain: { ok: false, firstBrokenSeq: 3 } })

      // The intact run beside it is shown as before.
      const intact = yield* artanaJson(["show-run", "root", ...common], { cwd: dir })
      expect(intact.code).toBe(0)
      expect(intact.json).toMatchObject({ chain: { ok: true } })
      expect((yield* artana(["show-run", "root", ...common], { cwd: dir })).stdout).not.toContain("TAMPERED")
    }))

  it.live("an event whose type column was changed: show-run exits non-zero", () =>
    Effect.gen(function*() {
      const { dir, db } = copy()
      byHand(db, "UPDATE events SET type = 'ToolFailed' WHERE run_id = 'root' AND seq = 3")
      const shown = yield* artana(["show-run", "root", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(shown.code).not.toBe(0)
    }))
})
