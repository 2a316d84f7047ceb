// Workflows, tools and the kernel layer shared by the child programs (which import @artana/core's build) and
// the recovery tests (which import its sources through vitest's aliases). Both sides must run the same code,
// or a resumed run would diverge from its log for reasons the tests do not intend.
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { type Errors, EventStore, Kernel, Middleware, ModelPort, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { SqliteStore } from "../../src/index.js"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** Who ends a process at its crash point. */
export type Killer = "self" | "parent"

export interface Hooks {
  /** The test's work dir: side-effect files, the crash marker, barrier files. */
  readonly dir: string
  /** The crash point at which this process dies; none when absent. */
  readonly crashAt?: string | undefined
  /** "self": the process SIGKILLs itself; "parent": it writes the marker file and waits for the parent's SIGKILL. */
  readonly killer?: Killer | undefined
  /** "B" is the changed code: the order of its steps differs from "A"'s. */
  readonly variant?: "A" | "B" | undefined
  /** How the kernel logs idempotent tools' calls (`Kernel.Options.idempotentToolDurability`). */
  readonly durability?: Tool.Durability | undefined
}

/** The files of a work dir. */
export const paths = (dir: string) => ({
  /** One line per tool side effect: `record <idempotencyKey>` or `send <idempotencyKey>`. */
  effects: join(dir, "effects.log"),
  /** One line per execution of a memoized step's effect: `step <name>`. */
  steps: join(dir, "steps.log"),
  /** Written by a process that reached its crash point and waits to be killed. */
  crashMarker: join(dir, "crash-point"),
  /** Created by the parent to release the processes waiting at the barrier. */
  go: join(dir, "go"),
  ready: (name: string) => join(dir, `${name}.ready`)
})

const readLines = (file: string): ReadonlyArray<string> =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : []

/** How many lines of `file` are exactly `line`. */
export const countLines = (file: string, line: string): number => readLines(file).filter((l) => l === line).length

/** Every line of `file`. */
export const lines = readLines

const makePoint = (hooks: Hooks) => (label: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (label !== hooks.crashAt) return Effect.void
    if ((hooks.killer ?? "self") === "self") {
      process.kill(process.pid, "SIGKILL")
    } else {
      // Written aside and renamed: the parent, polling for the file, must never read it empty.
      const marker = paths(hooks.dir).crashMarker
      writeFileSync(`${marker}.tmp`, label)
      renameSync(`${marker}.tmp`, marker)
    }
    // Nothing after a crash point may run: wait for the signal.
    return Effect.never
  })

export const RecordResult = Schema.Struct({ key: Schema.String, line: Schema.String, fresh: Schema.Boolean })

/** The tools: `record` is idempotent (it skips a key it has written), `send` is not (it appends blindly). */
export const makeTools = (hooks: Hooks) => {
  const point = makePoint(hooks)
  const { effects } = paths(hooks.dir)
  const record = Tool.make({
    name: "record",
    description: "Records a line in the ledger; a line whose idempotency key is already there is not written again",
    parameters: Schema.Struct({ line: Schema.String }),
    success: RecordResult,
    idempotent: true,
    handler: ({ line }, ctx) =>
      Effect.gen(function*() {
        yield* point(`record:${line}:start`)
        const entry = `record ${ctx.idempotencyKey}`
        const fresh = !readLines(effects).includes(entry)
        if (fresh) appendFileSync(effects, `${entry}\n`)
        yield* point(`record:${line}:after-effect`)
        return { key: ctx.idempotencyKey, line, fresh }
      })
  })
  const send = Tool.make({
    name: "send",
    description: "Sends a message (not idempotent: every call sends one)",
    parameters: Schema.Struct({ line: Schema.String }),
    success: Schema.Literal("sent"),
    handler: ({ line }, ctx) =>
      Effect.gen(function*() {
        yield* point(`send:${line}:start`)
        appendFileSync(effects, `send ${ctx.idempotencyKey}\n`)
        yield* point(`send:${line}:after-effect`)
        return "sent" as const
      })
  })
  return { record, send }
}

export type Tools = ReturnType<typeof makeTools>

export const CrashyOutput = Schema.Struct({
  prepared: Schema.Number,
  first: RecordResult,
  stamp: Schema.Number,
  sent: Schema.String,
  third: RecordResult,
  total: Schema.Number
})
export type CrashyOutput = typeof CrashyOutput.Type

/**
 * Steps and tools with crash points between and inside them. Step keys (variant A): step:0 "prepare",
 * tool:1 record "first", now:2, tool:3 send "second", tool:4 record "third", step:5 "total".
 * Variant B calls send before record.
 */
export const crashy = (hooks: Hooks, tools: Tools): Workflow.Workflow<{ readonly order: string }, CrashyOutput, Workflow.ToolCallError> => {
  const point = makePoint(hooks)
  const { steps } = paths(hooks.dir)
  const counted = (name: string, value: number, inside?: string) =>
    Effect.gen(function*() {
      appendFileSync(steps, `step ${name}\n`)
      if (inside !== undefined) yield* point(inside)
      return value
    })
  return Workflow.make({
    name: "recovery.crashy",
    input: Schema.Struct({ order: Schema.String }),
    output: CrashyOutput,
    run: (_input, ctx) =>
      Effect.gen(function*() {
        yield* point("start")
        const prepared = yield* ctx.step("prepare", counted("prepare", 41, "prepare:inside"), Schema.Number)
        yield* point("before-first-tool")
        const sendSecond = ctx.tool(tools.send, { line: "second" }).pipe(
          Effect.catchTag("ToolError", (e) => Effect.succeed(`not sent: ${e.reason}`))
        )
        let first: typeof RecordResult.Type
        let sent = ""
        if (hooks.variant === "B") {
          sent = yield* sendSecond
          first = yield* ctx.tool(tools.record, { line: "first" })
        } else {
          first = yield* ctx.tool(tools.record, { line: "first" })
        }
        yield* point("after-first-tool")
        const stamp = yield* ctx.now()
        yield* point("after-now")
        if (hooks.variant !== "B") sent = yield* sendSecond
        yield* point("after-send")
        const third = yield* ctx.tool(tools.record, { line: "third" })
        const total = yield* ctx.step("total", counted("total", prepared + 1), Schema.Number)
        yield* point("before-complete")
        return { prepared, first, stamp, sent, third, total }
      })
  })
}

/** The pages a chained run works, one run each: pages 0, 1 and 2 (`chain`, `chain::continued::1`, `::2`). */
export const CHAIN_PAGES = 3

/**
 * One page per run, continued as new: a memoized step and an idempotent tool per page, then the handover (crash
 * points: `page:<n>:start`, the first thing a run's code does, so right after the handover that started it, and
 * `page:<n>:handover`, before the handover).
 */
export const chained = (hooks: Hooks, tools: Tools): Workflow.Workflow<{ readonly page: number; readonly total: number }, number, Workflow.ToolCallError> => {
  const point = makePoint(hooks)
  const { steps } = paths(hooks.dir)
  return Workflow.make({
    name: "recovery.chained",
    input: Schema.Struct({ page: Schema.Number, total: Schema.Number }),
    output: Schema.Number,
    run: ({ page, total }, ctx) =>
      Effect.gen(function*() {
        yield* point(`page:${page}:start`)
        const items = yield* ctx.step("work", Effect.sync(() => (appendFileSync(steps, `step work:${page}\n`), page + 1)), Schema.Number)
        yield* ctx.tool(tools.record, { line: `page-${page}` })
        yield* point(`page:${page}:handover`)
        if (page + 1 < CHAIN_PAGES) return yield* ctx.continueAsNew({ page: page + 1, total: total + items })
        return total + items
      })
  })
}

export const Approval = Schema.Struct({
  approved: Schema.Boolean,
  by: Schema.NonEmptyString,
  /** Sent as text ("250"), decoded to a number: the workflow sees the decoded value. */
  limit: Schema.NumberFromString
})

export const ApprovalOutput = Schema.Struct({ decision: Schema.String, by: Schema.String, quote: Schema.Number, limit: Schema.Number })
export type ApprovalOutput = typeof ApprovalOutput.Type

/** A step, a pause for a human (step keys step:0, pause:1), then a non-idempotent send (tool:2). */
export const approval = (
  hooks: Hooks,
  tools: Tools
): Workflow.Workflow<{ readonly amount: number }, ApprovalOutput, Workflow.ToolCallError> =>
  Workflow.make({
    name: "recovery.approval",
    input: Schema.Struct({ amount: Schema.Number }),
    output: ApprovalOutput,
    run: ({ amount }, ctx) =>
      Effect.gen(function*() {
        const quote = hooks.variant === "B"
          ? yield* ctx.step("estimate", Effect.succeed(amount * 3), Schema.Number)
          : yield* ctx.step("quote", Effect.succeed(amount * 2), Schema.Number)
        const answer = yield* ctx.pauseForHuman({ reason: `approve a payment of ${amount}`, schema: Approval })
        if (!answer.approved) return { decision: "rejected", by: answer.by, quote, limit: answer.limit }
        yield* ctx.tool(tools.send, { line: "approved" })
        return { decision: "approved", by: answer.by, quote, limit: answer.limit }
      })
  })

/**
 * An `EventStore` whose first append waits at a barrier: it writes `<name>.ready` and waits for the `go`
 * file. Every read a kernel does before its first write (the run, its log) is done by then, so two processes
 * released together have both read the same log before either writes.
 */
const barrierStore = (dir: string, name: string) =>
  Layer.effect(
    EventStore.EventStore,
    Effect.gen(function*() {
      const store = yield* EventStore.EventStore
      const files = paths(dir)
      let passed = false
      const barrier = Effect.gen(function*() {
        writeFileSync(files.ready(name), String(process.pid))
        while (!existsSync(files.go)) yield* Effect.sleep("5 millis")
      })
      const service: EventStore.Service = {
        ...store,
        append: (request) =>
          Effect.suspend(() => {
            if (passed) return store.append(request)
            passed = true
            return Effect.zipRight(barrier, store.append(request))
          })
      }
      return service
    })
  )

export interface LayerOptions {
  /** Hold the first append at a barrier named so (see `barrierStore`). */
  readonly barrier?: string | undefined
  /** The model; by default one that dies when called (these workflows call none). */
  readonly model?: ModelPort.Service | undefined
}

// These workflows call no model: one that is called anyway dies loudly.
const noModel = ModelPort.make({
  defaultModel: "none",
  generate: (request) => Effect.dieMessage(`these workflows call no model, but a request for ${request.model} was made`)
})

/** What a process's kernel layer provides. */
export type Services = Kernel.Kernel | EventStore.EventStore | ModelPort.ModelPort | ToolRegistry.ToolRegistry | Middleware.Middleware

export interface Fixture {
  readonly tools: Tools
  readonly workflows: {
    readonly crashy: ReturnType<typeof crashy>
    readonly approval: ReturnType<typeof approval>
    readonly chained: ReturnType<typeof chained>
  }
  readonly layer: (db: string, options?: LayerOptions) => Layer.Layer<Services, Errors.StoreUnavailable | Errors.SchemaMismatch>
}

/** The workflows and the kernel layer of one process, on the SQLite file `db`. */
export const makeFixture = (hooks: Hooks): Fixture => {
  const tools = makeTools(hooks)
  const workflows = { crashy: crashy(hooks, tools), approval: approval(hooks, tools), chained: chained(hooks, tools) }
  const layer = (db: string, options: LayerOptions = {}) => {
    const sqlite = SqliteStore.layer({ filename: db })
    const store: Layer.Layer<EventStore.EventStore, Errors.StoreUnavailable | Errors.SchemaMismatch> = options.barrier === undefined ? sqlite : barrierStore(hooks.dir, options.barrier).pipe(Layer.provide(sqlite))
    return Layer.provideMerge(
      Kernel.layer({ workflows: [workflows.crashy, workflows.approval, workflows.chained], idempotentToolDurability: hooks.durability }),
      Layer.mergeAll(store, Layer.succeed(ModelPort.ModelPort, options.model ?? noModel), ToolRegistry.layer([tools.record, tools.send]), Middleware.layer([]))
    )
  }
  return { tools, workflows, layer }
}
