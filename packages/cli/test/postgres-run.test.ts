// `artana run` and `artana replay` against PostgreSQL (`--db postgres://...`), with the real sandbox: the same plan
// run, report and replay as on SQLite, in a fresh database of the test server.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { PgTest } from "@artana/store-postgres/testing"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { inject } from "vitest"
import { artana, artanaJson, cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const pg = PgTest.server(inject("artanaPg"))

describe.skipIf(pg.url === undefined)(`artana run on PostgreSQL (${pg.description})`, () => {
  it.live("runs a plan under a policy, reports its decisions and replays it bit-exactly", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const cwd = tempDir()
      fs.mkdirSync(path.join(cwd, "workspace/out"), { recursive: true })
      fs.writeFileSync(path.join(cwd, "workspace/notes.txt"), "notes")
      fs.writeFileSync(path.join(cwd, "policy.yaml"), "default: deny\ntools:\n  fs.read: { allow: true, paths: [\"workspace/**\"] }\n  fs.write: { allow: true, paths: [\"workspace/out/**\"] }\n")
      fs.writeFileSync(path.join(cwd, "plan.yaml"), "on_error: continue\nsteps:\n  - { id: read, tool: fs.read, args: { path: workspace/notes.txt } }\n  - { id: sneak, tool: fs.write, args: { path: workspace/notes.txt, content: x } }\n  - { id: save, tool: fs.write, args: { path: workspace/out/copy.txt, content: notes } }\n")
      const run = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "pg-run", "--db", url], { cwd })
      expect(run.json).toEqual({ runId: "pg-run", status: "completed" })
      expect(run.code).toBe(3)
      const report = yield* artanaJson(["report", "pg-run", "--db", url], { cwd })
      expect(report.json).toMatchObject({ steps: [{ id: "read", decision: "allowed" }, { id: "sneak", decision: "denied" }, { id: "save", decision: "allowed" }] })
      const replay = yield* artanaJson(["replay", "pg-run", "--db", url], { cwd })
      expect(replay.code).toBe(0)
      expect(replay.json).toMatchObject({ matches: true })
      expect((yield* artana(["verify", "pg-run", "--db", url], { cwd })).code).toBe(0)
      // On the console, the next command it suggests names the database without its password (the throwaway
      // cluster's URL carries one; a server given by ARTANA_TEST_PG_URL gets one added, which trust auth ignores).
      const withPassword = new URL(url)
      if (withPassword.password === "") withPassword.password = "s3cret-pw"
      const shown = yield* artana(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "pg-run-2", "--db", withPassword.toString()], { cwd })
      expect(shown.code).toBe(3)
      expect(shown.stdout).not.toContain(withPassword.password)
      expect(shown.stdout).toMatch(/artana report pg-run-2 --db 'postgres:\/\/[^':]*:\*\*\*@[^']+'/)
      // Nothing was written to SQLite on the side.
      expect(fs.existsSync(path.join(cwd, "artana.db"))).toBe(false)
    }).pipe(Effect.scoped), 180_000)
})
