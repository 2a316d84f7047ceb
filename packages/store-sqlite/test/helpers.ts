// Child processes, temp dirs and log inspection for the recovery tests.
import { type ChildProcess, spawn } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Schema, type Scope } from "effect"
import { type Errors, type Event, EventStore, Kernel, type Verify } from "@artana/core"
import { type Fixture, makeFixture, tenant } from "./child/workflows.js"

/** The repo root: children start there so that `--import tsx` resolves from its node_modules. */
const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD_MAIN = fileURLToPath(new URL("./child/main.ts", import.meta.url))
const OPEN_STORE = fileURLToPath(new URL("./child/open-store.ts", import.meta.url))

/** Root bypasses file permissions: as root, the permission tests open the store as `nobody` (see openAsNobody). */
export const isRoot = process.getuid?.() === 0
const NOBODY = { uid: 65534, gid: 65534 }

/** As root, gives the paths to `nobody`, who opens the store; otherwise they are already this process's. */
export const ownedByProcessUser = (...paths: ReadonlyArray<string>) => {
  if (isRoot) for (const p of paths) chownSync(p, NOBODY.uid, NOBODY.gid)
}

const OpenOutput = Schema.Union(
  Schema.Struct({ outcome: Schema.Literal("opened"), runs: Schema.Array(Schema.String) }),
  Schema.Struct({
    outcome: Schema.Literal("error"),
    error: Schema.Struct({
      _tag: Schema.String,
      message: Schema.String,
      store: Schema.optional(Schema.String),
      location: Schema.optional(Schema.String),
      reason: Schema.String
    })
  }),
  Schema.Struct({ outcome: Schema.Literal("defect"), cause: Schema.String })
)
export type OpenOutput = typeof OpenOutput.Type

/**
 * Runs child/open-store.ts (`FILENAME [--read-only]`: opens the store, lists tenant acme's runs) as `nobody` when
 * this process is root, else as this process's user, and decodes the JSON line it prints.
 */
export const openAsNobody = (filename: string, options: { readonly readOnly?: boolean } = {}) =>
  Effect.tryPromise({
    try: () =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", OPEN_STORE, filename, ...(options.readOnly === true ? ["--read-only"] : [])], {
          cwd: REPO_ROOT,
          ...(isRoot ? NOBODY : {}),
          // HOME of `nobody` does not exist; tsx keeps its cache under the temp dir, per uid.
          env: { ...process.env, HOME: tmpdir() },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let stdout = ""
        let stderr = ""
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
        child.once("error", reject)
        child.once("close", (code) => resolve({ code, stdout, stderr }))
      }),
    catch: (cause) => new Error(`cannot start the child as nobody: ${String(cause)}`)
  }).pipe(
    Effect.flatMap(({ code, stdout, stderr }) =>
      Effect.try({
        try: () => Schema.decodeUnknownSync(OpenOutput)(JSON.parse(stdout.trim().split("\n").pop() ?? "")),
        catch: () => new Error(`the child as nobody exited with ${code} and printed no result\nstdout: ${stdout}\nstderr: ${stderr}`)
      })
    ),
    Effect.orDie
  )

/** A fresh temp dir for one test, removed when the test's scope closes. */
export const workDir: Effect.Effect<{ readonly dir: string; readonly db: string }, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "artana-recovery-"))
    return { dir, db: join(dir, "artana.db") }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const RunResultJson = Schema.Union(
  Schema.Struct({ status: Schema.Literal("completed"), runId: Schema.String, output: Schema.Unknown }),
  Schema.Struct({ status: Schema.Literal("paused"), runId: Schema.String, ticket: Schema.String, reason: Schema.String }),
  Schema.Struct({ status: Schema.Literal("needs_reconciliation"), runId: Schema.String, stepKey: Schema.String, tool: Schema.String })
)
export type RunResultJson = typeof RunResultJson.Type

const ErrorJson = Schema.Struct(
  { _tag: Schema.String, message: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
export type ErrorJson = typeof ErrorJson.Type

/** The JSON line a child prints (see child/main.ts). */
const ChildOutput = Schema.Union(
  Schema.Struct({ outcome: Schema.Literal("result"), result: RunResultJson }),
  Schema.Struct({ outcome: Schema.Literal("error"), error: ErrorJson }),
  Schema.Struct({ outcome: Schema.Literal("defect"), cause: Schema.String })
)
export type ChildOutput = typeof ChildOutput.Type

export interface ChildExit {
  readonly args: ReadonlyArray<string>
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  /** The last stdout line, decoded; undefined when the child printed none (it was killed). */
  readonly output: ChildOutput | undefined
}

const parseOutput = (stdout: string): ChildOutput | undefined => {
  const last = stdout.trim().split("\n").pop()
  if (last === undefined || last === "") return undefined
  try {
    return Schema.decodeUnknownSync(ChildOutput)(JSON.parse(last))
  } catch {
    return undefined
  }
}

const describeExit = (e: ChildExit) =>
  `child [${e.args.join(" ")}] exited with ${e.signal ?? e.code}\nstdout: ${e.stdout}\nstderr: ${e.stderr}`

const live = new Set<ChildProcess>()

/** Kills every child still running (called after each test, in case a test ended before its children). */
export const killChildren = () => {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  }
  live.clear()
}

export interface Child {
  readonly pid: number | undefined
  readonly kill: () => void
  readonly running: () => boolean
  /** The child's exit; fails when it does not exit within the timeout. */
  readonly exit: Effect.Effect<ChildExit, Error>
}

/** Another child program than child/main.ts, and node's own flags (`--max-old-space-size=N`). */
export interface ChildOptions {
  readonly script?: string | undefined
  readonly nodeArgs?: ReadonlyArray<string> | undefined
}

/**
 * Spawns `node --import tsx child/main.ts ...args` (or `options.script`) from the repo root. The child is SIGKILLed
 * when the scope closes if it still runs.
 */
export const spawnChild = (args: ReadonlyArray<string>, timeoutMs = 300_000, options: ChildOptions = {}): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync((): Child => {
      const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), "--import", "tsx", options.script ?? CHILD_MAIN, ...args], {
        cwd: REPO_ROOT,
        stdio: ["ignore", "pipe", "pipe"]
      })
      live.add(proc)
      let stdout = ""
      let stderr = ""
      proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
      proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
      const closed = new Promise<ChildExit>((resolve, reject) => {
        proc.once("error", reject)
        proc.once("close", (code, signal) => {
          live.delete(proc)
          resolve({ args, code, signal, stdout, stderr, output: parseOutput(stdout) })
        })
      })
      const running = () => proc.exitCode === null && proc.signalCode === null
      return {
        pid: proc.pid,
        running,
        kill: () => {
          if (running()) proc.kill("SIGKILL")
        },
        exit: Effect.tryPromise({ try: () => closed, catch: (e) => new Error(`spawn failed: ${String(e)}`) }).pipe(
          Effect.timeoutFail({
            duration: timeoutMs,
            onTimeout: () => new Error(`child [${args.join(" ")}] did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`)
          })
        )
      }
    }),
    (child) => Effect.sync(() => child.kill())
  )

/** The last line a child printed, parsed as JSON; fails with the child's output when it did not exit with 0. */
export const lastJsonLine = (e: ChildExit): unknown => {
  const line = e.stdout.trim().split("\n").pop()
  if (e.code !== 0 || line === undefined) throw new Error(`child exited with ${e.signal ?? e.code}\nstdout: ${e.stdout}\nstderr: ${e.stderr.slice(-4000)}`)
  return JSON.parse(line)
}

/** Runs a child to its end. */
export const runChild = (args: ReadonlyArray<string>, timeoutMs?: number, options?: ChildOptions) =>
  Effect.flatMap(spawnChild(args, timeoutMs, options), (child) => child.exit)

/** The arguments every command takes. */
export const baseArgs = (command: string, options: { readonly db: string; readonly dir: string; readonly runId: string }) => [
  command,
  "--db",
  options.db,
  "--dir",
  options.dir,
  "--run",
  options.runId
]

/** The run result a child printed; fails the test (with the child's output) when it printed something else. */
export const resultOf = (e: ChildExit): RunResultJson => {
  if (e.code !== 0 || e.output?.outcome !== "result") throw new Error(`expected a run result; ${describeExit(e)}`)
  return e.output.result
}

/** The typed error a child printed; fails the test (with the child's output) when it printed something else. */
export const errorOf = (e: ChildExit): ErrorJson => {
  if (e.code !== 3 || e.output?.outcome !== "error") throw new Error(`expected a typed error; ${describeExit(e)}`)
  return e.output.error
}

/** Asserts that a child died by SIGKILL without printing a result. */
export const killedOf = (e: ChildExit): ChildExit => {
  if (e.signal !== "SIGKILL" || e.output !== undefined) throw new Error(`expected a SIGKILLed child; ${describeExit(e)}`)
  return e
}

/** Waits until `file` exists; fails if the child exits first or the time runs out. */
export const waitForFile = (file: string, child: Child, timeoutMs = 300_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!existsSync(file)) {
      if (!child.running()) {
        const e = yield* child.exit
        return yield* Effect.fail(new Error(`waiting for ${file}: ${describeExit(e)}`))
      }
      if (Date.now() > deadline) return yield* Effect.fail(new Error(`waiting for ${file}: timed out after ${timeoutMs} ms`))
      yield* Effect.sleep("10 millis")
    }
  })

export interface RunSnapshot {
  readonly info: Event.RunInfo
  readonly events: ReadonlyArray<Event.Event>
  readonly report: Verify.VerifyReport
}

/** The run's row, its events and its verification, read in this process through a fresh connection. */
export const inspectRun = (
  dir: string,
  db: string,
  runId: string
): Effect.Effect<RunSnapshot, Errors.RunNotFound | Errors.StoreError | Errors.StoreUnavailable | Errors.SchemaMismatch> =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(tenant.tenantId, runId)
    const events = yield* store.readEvents(tenant.tenantId, runId)
    const report = yield* kernel.verify({ tenantId: tenant.tenantId, runId })
    return { info, events, report }
  }).pipe(Effect.provide(makeFixture({ dir }).layer(db)))

/** Runs `effect` against an in-process kernel on `db` (no crash points). */
export const inProcess = <A, E>(
  dir: string,
  db: string,
  f: (fixture: Fixture) => Effect.Effect<A, E, Kernel.Kernel | EventStore.EventStore>
): Effect.Effect<A, E | Errors.StoreUnavailable | Errors.SchemaMismatch> => {
  const fixture = makeFixture({ dir })
  return f(fixture).pipe(Effect.provide(fixture.layer(db)))
}
