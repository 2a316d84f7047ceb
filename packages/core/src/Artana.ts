/**
 * A Promise facade for code that does not use Effect. It holds no logic of its own: each method runs the
 * matching `Kernel` operation on a runtime built from the same layers an Effect user would provide.
 *
 * ```ts
 * const artana = Artana.create({ store: SqliteStore.layer({ filename: "artana.db" }), model, tools: [getBalance] })
 * const result = await artana.chat({ tenant, messages: [Chat.user("Balance of acc-1?")] })
 * await artana.close()
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import type * as Schema from "effect/Schema"
import type { Event, RunInfo } from "./Event.js"
import * as EventStore from "./EventStore.js"
import * as Kernel from "./Kernel.js"
import * as Middleware from "./Middleware.js"
import type * as Pricing from "./Pricing.js"
import type { ModelPort } from "./ModelPort.js"
import type { TenantContext } from "./Tenant.js"
import type { Tool } from "./Tool.js"
import * as ToolRegistry from "./ToolRegistry.js"
import type { VerifyReport } from "./Verify.js"
import * as Workflow from "./Workflow.js"

/** The client's options; pricing (`prices`, `unknownModelPrice`, ...) and `enforceBudget` as in `Kernel.Options`. */
export interface Options extends Pricing.Options {
  /** Where the log lives; in memory when absent. */
  readonly store?: Layer.Layer<EventStore.EventStore, unknown> | undefined
  readonly model: Layer.Layer<ModelPort, unknown>
  readonly tools?: ReadonlyArray<Tool> | undefined
  readonly workflows?: ReadonlyArray<Workflow.Any> | undefined
  /** The middleware chain, in order; an entry may be an Effect that needs the ModelPort (a quota). */
  readonly middleware?: ReadonlyArray<Middleware.Interceptor | Effect.Effect<Middleware.Interceptor, never, ModelPort>> | undefined
  readonly auditKey?: string | undefined
  /** `false` turns the budget off (see `Kernel.Options.enforceBudget`). */
  readonly enforceBudget?: boolean | undefined
}

/** The durable context of a Promise workflow: every method is one logged step. */
export interface PromiseContext {
  readonly runId: string
  readonly tenant: TenantContext
  readonly chat: <A = string, I = unknown>(options: Workflow.ChatOptions<A, I>) => Promise<Workflow.ChatResult<A>>
  readonly tool: <Args, Result>(tool: Tool<Args, Result> | string, args: Args, options?: { readonly key?: string }) => Promise<Result>
  readonly step: <A, I>(name: string, run: () => Promise<A>, schema: Schema.Schema<A, I>, options?: { readonly key?: string }) => Promise<A>
  readonly now: () => Promise<number>
  readonly random: () => Promise<number>
  readonly sleep: (millis: number) => Promise<void>
  readonly pauseForHuman: <A = unknown, I = unknown>(options: Workflow.PauseOptions<A, I>) => Promise<A>
}

/**
 * A workflow written with async/await. Each `ctx` call is a durable step; do not catch the errors they
 * throw when the run pauses (`await ctx.pauseForHuman(...)` ends the execution).
 */
export const workflow = <I, II, O, OI>(options: {
  readonly name: string
  readonly input: Schema.Schema<I, II>
  readonly output: Schema.Schema<O, OI>
  readonly run: (input: I, context: PromiseContext) => Promise<O>
}): Workflow.Workflow<I, O, unknown> =>
  Workflow.make({
    name: options.name,
    input: options.input,
    output: options.output,
    run: (input, ctx) =>
      Effect.flatMap(Effect.runtime<never>(), (runtime) => {
        const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
          Runtime.runPromiseExit(runtime)(effect).then((exit) => (Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))))
        const context: PromiseContext = {
          runId: ctx.runId,
          tenant: ctx.tenant,
          chat: (o) => run(ctx.chat(o)),
          tool: (tool, args, o) => run(ctx.tool(tool, args, o)),
          step: (name, f, schema, o) => run(ctx.step(name, Effect.tryPromise({ try: f, catch: (e) => e }), schema, o)),
          now: () => run(ctx.now()),
          random: () => run(ctx.random()),
          sleep: (millis) => run(ctx.sleep(millis)),
          pauseForHuman: (o) => run(ctx.pauseForHuman(o))
        }
        return Effect.tryPromise({ try: () => options.run(input, context), catch: (e) => e })
      })
  })

export interface Client {
  readonly run: <I, O, E>(workflow: Workflow.Workflow<I, O, E>, options: Kernel.StartOptions<I>) => Promise<Kernel.RunResult<O>>
  readonly chat: <A = string, I = unknown>(options: Kernel.ChatRunOptions<A, I>) => Promise<Kernel.RunResult<Workflow.ChatResult<A>>>
  readonly callTool: (options: Parameters<Kernel.Service["callTool"]>[0]) => Promise<Kernel.RunResult<unknown>>
  readonly resume: (run: Kernel.RunRef & { readonly response?: unknown }) => Promise<Kernel.RunResult<unknown>>
  /** Settles a call in doubt; refused while it may still be running unless `force` (see `Kernel.reconcile`). */
  readonly reconcile: (
    run: Kernel.RunRef & { readonly outcome: Kernel.ReconcileOutcome; readonly stepKey?: string | undefined; readonly force?: boolean | undefined }
  ) => Promise<void>
  readonly verify: (run: Kernel.RunRef & { readonly head?: { readonly seq: number; readonly hash: string } }) => Promise<VerifyReport>
  readonly getRun: (run: Kernel.RunRef) => Promise<RunInfo>
  readonly listRuns: (tenantId: string, filter?: EventStore.ListRunsFilter) => Promise<ReadonlyArray<RunInfo>>
  readonly readEvents: (run: Kernel.RunRef) => Promise<ReadonlyArray<Event>>
  /** Releases the store (closes the database). */
  readonly close: () => Promise<void>
}

/** Builds a client. Errors reject with the kernel's typed errors (`error._tag` tells which). */
export const create = (options: Options): Client => {
  const base = Layer.mergeAll(
    options.store ?? EventStore.layerMemory,
    options.model,
    ToolRegistry.layer(options.tools ?? []),
    // The same model layer object twice: Effect builds it once and shares it.
    Middleware.layer(options.middleware ?? []).pipe(Layer.provide(options.model))
  )
  const kernel = Kernel.layer({
    workflows: options.workflows,
    auditKey: options.auditKey === undefined ? undefined : Redacted.make(options.auditKey),
    prices: options.prices,
    unknownModelPrice: options.unknownModelPrice,
    defaultMaxOutputTokens: options.defaultMaxOutputTokens,
    enforceBudget: options.enforceBudget
  })
  const runtime = ManagedRuntime.make(Layer.provideMerge(kernel, base))
  const run = <A, E>(effect: Effect.Effect<A, E, Kernel.Kernel | EventStore.EventStore>): Promise<A> =>
    runtime.runPromiseExit(effect).then((exit) => (Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))))
  const withKernel = <A, E>(f: (k: Kernel.Service) => Effect.Effect<A, E>) => run(Effect.flatMap(Kernel.Kernel, f))
  const withStore = <A, E>(f: (s: EventStore.Service) => Effect.Effect<A, E>) => run(Effect.flatMap(EventStore.EventStore, f))
  return {
    run: (w, o) => withKernel((k) => k.execute(w, o)),
    chat: (o) => withKernel((k) => k.chat(o)),
    callTool: (o) => withKernel((k) => k.callTool(o)),
    resume: (o) => withKernel((k) => k.resume(o)),
    reconcile: (o) => withKernel((k) => k.reconcile(o)),
    verify: (o) => withKernel((k) => k.verify(o)),
    getRun: (r) => withStore((s) => s.getRun(r.tenantId, r.runId)),
    listRuns: (tenantId, filter) => withStore((s) => s.listRuns(tenantId, filter)),
    readEvents: (r) => withKernel((k) => k.readEvents(r)),
    close: () => runtime.dispose()
  }
}

