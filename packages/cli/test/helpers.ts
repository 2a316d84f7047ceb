import { Errors, type Event, EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel, TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Effect, Layer, Schema } from "effect"
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { inject } from "vitest"

/** Made on first use, so a test file that imports these helpers for something else leaves no empty directory. */
let root: string | undefined
const rootDir = (): string => (root ??= fs.mkdtempSync(path.join(os.tmpdir(), "artana-cli-")))
export const cleanup = () => {
  if (root !== undefined) fs.rmSync(root, { recursive: true, force: true })
  root = undefined
}
/** A fresh directory of its own. */
export const tempDir = () => fs.mkdtempSync(path.join(rootDir(), "t-"))

/** A fresh workspace for `artana run`: `workspace/notes.txt`, an empty `workspace/out`, `policy.yaml` and `plan.yaml`. */
export const planWorkspace = (plan: string, policy: string) => {
  const dir = tempDir()
  fs.mkdirSync(path.join(dir, "workspace/out"), { recursive: true })
  fs.writeFileSync(path.join(dir, "workspace/notes.txt"), "Q3 revenue: 1.2M EUR\n")
  fs.writeFileSync(path.join(dir, "policy.yaml"), policy)
  fs.writeFileSync(path.join(dir, "plan.yaml"), plan)
  return dir
}

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const TSCONFIG = fileURLToPath(new URL("./bin/tsconfig.json", import.meta.url))
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

/**
 * Node's arguments before the command's: the `artana` built from src/bin.ts for this test run (see artanaBin.ts: a
 * command costs a fifth of the CPU of src/bin.ts under tsx).
 */
export const ARTANA: ReadonlyArray<string> = [inject("artanaBin")]
/**
 * The same command as src/bin.ts under tsx, for a command that loads the application's own modules (`replay-test
 * --workflows`): they import @artana/core and effect, which must resolve to the very modules the command runs on.
 */
export const ARTANA_TSX: ReadonlyArray<string> = ["--import", TSX, BIN]

export interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of a child: no ARTANA_* or colour settings inherited from the test runner's shell. */
const baseEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG }
  for (const key of ["ARTANA_DB", "ARTANA_TENANT", "ARTANA_AUDIT_KEY", "FORCE_COLOR", "NO_COLOR"]) delete env[key]
  return env
}

/** The real `artana` command as a process to start (for a client that speaks to it, as an MCP client does). */
export const artanaProcess = (args: ReadonlyArray<string>) => ({
  command: process.execPath,
  args: [...ARTANA, ...args],
  env: Object.fromEntries(Object.entries(baseEnv()).flatMap(([k, v]) => (v === undefined ? [] : [[k, v] as const])))
})

/**
 * Runs the real `artana` command (built from src/bin.ts; `node` takes `bin`, by default `ARTANA`) as a child process
 * in `cwd`, to its end.
 */
export const artana = (
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: Record<string, string>; readonly bin?: ReadonlyArray<string> }
) =>
  Effect.async<Result>((resume) => {
    const child = execFile(
      process.execPath,
      [...(options.bin ?? ARTANA), ...args],
      { cwd: options.cwd, env: { ...baseEnv(), ...options.env }, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resume(Effect.succeed({ code, stdout, stderr }))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/**
 * Runs `artana` as `artana` does, its stdout written to the file `out` (for output larger than a buffer); the result's
 * `stdout` is empty.
 */
export const artanaToFile = (args: ReadonlyArray<string>, out: string, options: { readonly cwd: string; readonly env?: Record<string, string> }) =>
  Effect.async<Result>((resume) => {
    const fd = fs.openSync(out, "w")
    const child = spawn(process.execPath, [...ARTANA, ...args], { cwd: options.cwd, env: { ...baseEnv(), ...options.env }, stdio: ["ignore", fd, "pipe"] })
    let stderr = ""
    child.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
    child.on("close", (code) => {
      fs.closeSync(fd)
      resume(Effect.succeed({ code, stdout: "", stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`

/**
 * Runs `artana` with `mounted` (a directory or a file) made read-only by the kernel, as a read-only file system or
 * a backup mounted read-only is: a read-only bind mount in a mount namespace of the child's own (util-linux
 * `unshare`; root, as in CI, or an unprivileged user namespace), so no write reaches it, whoever asks.
 */
export const artanaReadOnlyMount = (mounted: string, args: ReadonlyArray<string>, options: { readonly cwd: string }) =>
  Effect.async<Result>((resume) => {
    const script = `mount --bind ${quote(mounted)} ${quote(mounted)} && mount -o remount,bind,ro ${quote(mounted)} && exec "$@"`
    const namespace = process.getuid?.() === 0 ? ["-m"] : ["-rm"]
    const child = execFile(
      "unshare",
      [...namespace, "sh", "-c", script, "sh", process.execPath, ...ARTANA, ...args],
      { cwd: options.cwd, env: baseEnv(), timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resume(Effect.succeed({ code, stdout, stderr }))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/**
 * `artana ARGS | reader`: the command's stdout piped into another process that reads it slowly (a pause after each
 * chunk, so the pipe fills while the command ends), as a program consuming `--format json` may. The reader passes on
 * everything it got: `stdout` is what reached the other end of the pipe; `code` is artana's exit code.
 */
export const artanaPipedToSlowReader = (args: ReadonlyArray<string>, options: { readonly cwd: string }) =>
  Effect.async<Result>((resume) => {
    const reader = "process.stdin.on('data', (d) => { process.stdout.write(d); process.stdin.pause(); setTimeout(() => process.stdin.resume(), 5) })"
    const artanaLine = [process.execPath, ...ARTANA, ...args].map(quote).join(" ")
    const line = `${artanaLine} | ${quote(process.execPath)} -e ${quote(reader)}; exit \${PIPESTATUS[0]}`
    const child = execFile("bash", ["-c", line], { cwd: options.cwd, env: baseEnv(), timeout: 90_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/**
 * Runs `artana` on a pseudo-terminal (util-linux `script`), as a person at a terminal would: stdout and stderr are
 * both the terminal, so they come back merged, with `\r\n` line ends.
 */
export const artanaTty = (args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env?: Record<string, string> }) =>
  Effect.async<Result>((resume) => {
    const line = [process.execPath, ...ARTANA, ...args].map(quote).join(" ")
    const child = execFile("script", ["-qec", line, "/dev/null"], { cwd: options.cwd, env: { ...baseEnv(), ...options.env }, timeout: 90_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/**
 * Starts `artana` in the background (its own process group) and returns a way to signal the whole group: SIGKILL
 * (`kill`: the command and whatever tool process it started die at once, as in a power cut) or SIGINT (`interrupt`:
 * Ctrl-C at a terminal, which signals the foreground group). `output` is what it printed so far.
 */
export const artanaStarted = (args: ReadonlyArray<string>, options: { readonly cwd: string }) => {
  // What a killed command leaves in its temp folder (a shell.run's home, never removed) lands under this file's root.
  const tmp = path.join(rootDir(), "tmp")
  fs.mkdirSync(tmp, { recursive: true })
  const child = spawn(process.execPath, [...ARTANA, ...args], { cwd: options.cwd, env: { ...baseEnv(), TMPDIR: tmp }, stdio: ["ignore", "pipe", "pipe"], detached: true })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d: Buffer) => void (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => void (stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on("close", (code, signal) => resolve(signal === null ? code : null)))
  const signal = (name: NodeJS.Signals) => {
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, name)
    return exited
  }
  return {
    exited,
    kill: () => signal("SIGKILL"),
    interrupt: () => signal("SIGINT"),
    output: () => ({ stdout, stderr })
  }
}

/** `artana` with `--format json`, its stdout parsed (fails the test with the output when it is not JSON). */
export const artanaJson = (args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env?: Record<string, string> }) =>
  Effect.map(artana([...args, "--format", "json"], options), (result) => {
    let json: unknown
    try {
      json = JSON.parse(result.stdout)
    } catch {
      throw new Error(`artana ${args.join(" ")} printed no JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`)
    }
    return { ...result, json }
  })

/**
 * The events of a run as its SQLite file holds them now, read in this process through a read-only store (as a
 * second reader of a file an `artana` process is writing): for a test that must see what is durable, or count what
 * a command wrote, without starting another process.
 */
export const loggedEvents = (filename: string, tenantId: string, runId: string): Effect.Effect<ReadonlyArray<Event.Event>, unknown> =>
  Effect.flatMap(EventStore.EventStore, (store) => store.readEvents(tenantId, runId)).pipe(
    Effect.provide(SqliteStore.layer({ filename, readOnly: true }))
  )

/**
 * Polls `check` every 100 ms until it holds; fails the test, naming `what`, after `seconds` (generous: a child
 * process on a busy machine takes many seconds to start).
 */
export const eventually = <E, R>(what: string, seconds: number, check: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + seconds * 1000
    while (Date.now() < deadline) {
      if (yield* check) return
      yield* Effect.sleep("100 millis")
    }
    return yield* Effect.dieMessage(`timed out after ${seconds}s waiting until ${what}`)
  })

// --- runs written in-process, for the commands that read ---------------------------------------------------------

export const tenant = (tenantId: string) => Tenant.TenantContext.make({ tenantId, capabilities: [], budgetUsdLimit: 0 })

export const echo = Tool.make({
  name: "echo",
  description: "returns its text",
  parameters: Schema.Struct({ text: Schema.String }),
  handler: ({ text }) => Effect.succeed({ echoed: text })
})
export const boom = Tool.make({
  name: "boom",
  description: "always fails",
  parameters: Schema.Struct({}),
  handler: () => Effect.fail(new Errors.ToolError({ tool: "boom", reason: "exploded" }))
})
export const secret = Tool.make({ name: "secret", description: "denied", parameters: Schema.Struct({}), handler: () => Effect.succeed("leaked") })

/** A stand-in for a policy middleware: denies `secret`. */
export const denySecret: Middleware.Interceptor = {
  name: "test-policy",
  beforeTool: (call) => call.tool === "secret" ? Effect.fail(new Errors.PolicyDenied({ tool: call.tool, reason: "secret is not allowed" })) : Effect.succeed(call)
}

/** A kernel on a SQLite file with the test tools. */
export const sqliteKernel = (filename: string): Layer.Layer<Kernel.Kernel | EventStore.EventStore | ToolRegistry.ToolRegistry, Errors.StoreUnavailable | Errors.SchemaMismatch> =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([echo, boom, secret]), Middleware.layer([denySecret]))
  )

/** A plain workflow (not a plan) that calls `echo` once. */
export const greet = Workflow.make({
  name: "greet",
  input: Schema.Struct({ name: Schema.String }),
  output: Schema.String,
  run: ({ name }, ctx) => Effect.map(ctx.tool(echo, { text: name }), (r) => JSON.stringify(r))
})

export { EventStore }

// --- a long run, built fast ---------------------------------------------------------------------------------------

/**
 * Writes a run of `events` events (a start, memoized steps, a completion) into the SQLite file, hash-chained as the
 * kernel writes them, appended through the store in batches of 1,000: a run of 100,000 events in seconds. Each step's
 * value holds a note of `valueBytes` characters.
 */
export const longRun = (filename: string, runId: string, tenantId: string, events: number, valueBytes = 24) =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const log: Array<Event.Event> = []
    const who = tenant(tenantId)
    const note = "a memoized step's value ".repeat(Math.ceil(valueBytes / 24))
    while (log.length < events) {
      const from = log.length
      const payloads = Array.from({ length: Math.min(1000, events - from) }, (_, i): Event.EventPayload => {
        const seq = from + i + 1
        if (seq === 1) return { _tag: "RunStarted", workflow: "long", input: { steps: events }, tenant: who }
        if (seq === events) return { _tag: "RunCompleted", output: { steps: events - 2 } }
        return { _tag: "StepCompleted", name: `step-${seq}`, value: { seq, note: note.slice(0, valueBytes) } }
      })
      const batch = TestLog.chain(runId, tenantId, log, payloads)
      yield* store.append({ runId, tenantId, expectedSeq: from, events: batch })
      log.push(...batch)
    }
  }).pipe(Effect.provide(SqliteStore.layer({ filename })))
