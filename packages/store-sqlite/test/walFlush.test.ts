// At synchronous=FULL the store's group commits are synced off the event loop (src/internal/walFlush.ts): the loop
// runs while the disk flushes, a caller is answered only once its commit's sync ended, and a failed sync fails the
// appends that waited for it and every write after it until a checkpoint recovers. A child process runs the store on a disk under the test's control: a shim
// (flush/flushGate.c, compiled here with the system's `cc`, preloaded with LD_PRELOAD) holds or fails every sync of a
// -wal file while a file the test names exists.
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./flush/flushChild.ts", import.meta.url))
const SHIM = fileURLToPath(new URL("./flush/flushGate.c", import.meta.url))

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-wal-flush-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

/** The shim, built once for the file's tests (a C compiler is part of what the tests need: `.ci/run` installs one). */
const shim = (() => {
  let built: string | undefined
  return () => {
    if (built === undefined) {
      const out = path.join(root, "flushGate.so")
      execFileSync("cc", ["-shared", "-fPIC", "-O2", "-o", out, SHIM, "-ldl"], { stdio: "pipe" })
      built = out
    }
    return built
  }
})()

/** Runs the child's `scenario` on a new database under the shim: its one line of JSON. */
const child = (scenario: "gate" | "gate-alone" | "fail", syncOffLoop: "groups" | "always" = "groups") =>
  Effect.promise(() =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const dir = fs.mkdtempSync(path.join(root, `${scenario}-`))
      const env = { ...process.env, LD_PRELOAD: shim(), FLUSH_GATE: path.join(dir, "gate"), FLUSH_FAIL: path.join(dir, "fail") }
      const proc = spawn(process.execPath, ["--import", "tsx", CHILD, path.join(dir, "artana.db"), scenario, syncOffLoop], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      let err = ""
      proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
      proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk))
      proc.once("error", reject)
      proc.once("close", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").pop() ?? "{}")) : reject(new Error(`the child failed (${code}): ${err}`))))
    })
  )

describe.runIf(process.platform === "linux")("SQLite store at synchronous=FULL: the -wal file synced off the event loop", () => {
  it.effect("the event loop runs while the disk flushes a group: a callback run once the group committed opens the gate, before the appends are answered", () =>
    Effect.gen(function*() {
      // The gate opens only from the loop, after the commit: on a loop a flush blocks, that flush gives up waiting
      // (after the shim's 10 s bound), and the appends may be answered first.
      expect(yield* child("gate")).toEqual({ openedBeforeAnswer: true, flushGaveUp: false, outcomes: ["ok", "ok"] })
    }), 60_000)

  it.effect("with syncOffLoop \"always\", a run appending alone is synced off the loop too", () =>
    Effect.gen(function*() {
      expect(yield* child("gate-alone", "always")).toEqual({ openedBeforeAnswer: true, flushGaveUp: false, outcomes: ["ok"] })
    }), 60_000)

  it.effect("a failed flush fails the appends that waited for it, and every write after it until a checkpoint recovers", () =>
    Effect.gen(function*() {
      const result = yield* child("fail")
      const flushFailed = expect.stringMatching(/^(StoreError|SqlError): flushing .*artana\.db-wal failed \(.*EIO/)
      expect(result.failed).toEqual([flushFailed, flushFailed])
      // While the disk fails, every write is refused: appends, in a transaction or not, the client's statements, and a
      // second store's on the file in the same process.
      expect(result.refused).toEqual({ appends: [flushFailed, flushFailed], inTransaction: flushFailed, statement: flushFailed, reopened: flushFailed })
      // Once it works, the next write checkpoints (the failed commits into the database file, synced) and goes on.
      expect(result.after).toEqual({ appends: ["ok", "ok"], statement: "ok" })
      // Opened again: whole, verified logs, the failed step in them (the checkpoint made it durable), then the next.
      expect(result.stored).toEqual([[1, 2, 3], [1, 2, 3]])
      expect(result.verified).toBe(true)
    }), 60_000)
})
