// With `syncOffLoop` ("groups", "always"), at synchronous=FULL the store's group commits are synced off the event loop
// (src/internal/walFlush.ts): the loop runs while the disk flushes, a caller is answered only once its commit's sync
// ended, and a failed sync fails the appends that waited for it and every write after it until a checkpoint
// recovers. A child process runs the store on a disk under the test's control: a shim (flush/flushGate.c, compiled
// here with the system's `cc`, preloaded with LD_PRELOAD) holds or fails every sync of a -wal file while a file the
// test names exists.
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type Event, EventStore, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./flush/flushChild.ts", import.meta.url))
const SHIM = fileURLToPath(new URL("./flush/flushGate.c", import.meta.url))

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-wal-flush-"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
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

/** The children still running: killed when the file's tests end (a test that timed out leaves its child behind). */
const running = new Set<ChildProcess>()
afterAll(() => running.forEach((proc) => proc.kill("SIGKILL")))

/** Runs the child's `scenario` on a new database under the shim: its one line of JSON. */
const child = (scenario: "gate" | "gate-alone" | "fail", syncOffLoop: "groups" | "always" = "groups") =>
  Effect.async<Record<string, unknown>, Error>((resume) => {
    const dir = fs.mkdtempSync(path.join(root, `${scenario}-`))
    const env = { ...process.env, LD_PRELOAD: shim(), FLUSH_GATE: path.join(dir, "gate"), FLUSH_FAIL: path.join(dir, "fail") }
    const proc = spawn(process.execPath, ["--import", "tsx", CHILD, path.join(dir, "artana.db"), scenario, syncOffLoop], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
    running.add(proc)
    let out = ""
    let err = ""
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk))
    proc.once("error", (error) => resume(Effect.fail(error)))
    proc.once("close", (code) => {
      running.delete(proc)
      resume(code === 0 ? Effect.succeed(JSON.parse(out.trim().split("\n").pop() ?? "{}")) : Effect.fail(new Error(`the child failed (${code}): ${err}`)))
    })
    return Effect.sync(() => proc.kill("SIGKILL"))
  })

describe.runIf(process.platform === "linux")("SQLite store at synchronous=FULL, syncOffLoop: the -wal file synced off the event loop", () => {
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

  it.scoped("a group's sync does not wait for libuv's thread pool: answered while file reads hold every pool thread", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(root, "pool-"))
      const context = yield* Layer.build(SqliteStore.layer({ filename: path.join(dir, "artana.db"), syncOffLoop: "groups" }))
      const store = Context.get(context, EventStore.EventStore)
      const logs: Record<string, Array<Event.Event>> = { a: [], b: [] }
      const together = (payload: Event.EventPayload) =>
        Effect.forEach(["a", "b"], (runId) => {
          const events = TestLog.chain(runId, "acme", logs[runId]!, [payload])
          return Effect.tap(store.append({ runId, tenantId: "acme", expectedSeq: logs[runId]!.length, events }), () => logs[runId]!.push(...events))
        }, { concurrency: "unbounded", discard: true })
      yield* together({ _tag: "RunStarted", workflow: "w", input: null, tenant })
      // Every thread of the pool opens a FIFO no one writes to: each blocks until the FIFOs are opened for writing, once
      // the group is answered (or, on a store whose sync waits for the pool, after 10 s).
      const fifos = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE ?? 4) }, (_, i) => path.join(dir, `fifo-${i}`))
      for (const fifo of fifos) execFileSync("mkfifo", [fifo])
      const reads = fifos.map((fifo) => fs.promises.readFile(fifo))
      let released = false
      const release = () => {
        if (released) return
        released = true
        for (const fifo of fifos) fs.closeSync(fs.openSync(fifo, "w"))
      }
      const bound = setTimeout(release, 10_000)
      yield* together({ _tag: "StepCompleted", name: "s1", value: 1 })
      const answeredWhileHeld = !released
      clearTimeout(bound)
      release()
      yield* Effect.promise(() => Promise.all(reads))
      expect(answeredWhileHeld).toBe(true)
      expect((yield* store.readEvents("acme", "a")).length).toBe(2)
    }), 60_000)

  it.effect("a failed flush fails the appends that waited for it, and every write after it until a checkpoint recovers", () =>
    Effect.gen(function*() {
      const result = yield* child("fail")
      const flushFailed = expect.stringMatching(/^(StoreError|SqlError): flushing .*artana\.db-wal failed \(.*EIO/)
      expect(result.failed).toEqual([flushFailed, flushFailed])
      // While the disk fails, every write is refused: appends, in a transaction or not, the client's statements, and a
      // second store's on the file in the same process.
      expect(result.refused).toEqual({
        appends: [flushFailed, flushFailed],
        inTransaction: flushFailed,
        statement: flushFailed,
        returning: flushFailed,
        reopened: flushFailed
      })
      // A reader's snapshot keeps the checkpoint from emptying the -wal file: refused at once, not after a busy wait.
      expect(result.whileRead).toEqual(flushFailed)
      // Once it works, the next write checkpoints (the failed commits into the database file, synced) and goes on.
      expect(result.after).toEqual({ appends: ["ok", "ok"], statement: "ok" })
      // Opened again: whole, verified logs, the failed step in them (the checkpoint made it durable), then the next.
      expect(result.stored).toEqual([[1, 2, 3], [1, 2, 3]])
      expect(result.verified).toBe(true)
    }), 60_000)
})
