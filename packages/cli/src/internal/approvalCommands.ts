/**
 * `artana approvals`, `artana approve` and `artana reject`: the tenant's pending tool-call approvals, and a person's
 * decision on one. A decision is the kernel's `decideApproval` (one batch at the run's head: of two people deciding at
 * once, exactly one is written); a plan run then goes on at once, with the tools rebuilt from its logged policy, as
 * `artana run --run-id` would continue it. Any other run is left resumable by the application that runs its workflow.
 */
import { Approval, Errors, type Event, EventStore, Json, Kernel } from "@artana/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as os from "node:os"
import * as ExitCode from "../ExitCode.js"
import * as PlanRunner from "../PlanRunner.js"
import * as Database from "./database.js"
import * as Hints from "./hints.js"
import * as Out from "./output.js"
import type { Common } from "./planCommands.js"
import { parseTime } from "./readCommands.js"
import * as Services from "./services.js"
import * as T from "./terminal.js"
import * as Toolbox from "./toolbox.js"

export interface ApprovalsArgs extends Common {
  readonly run: string | undefined
  readonly tool: string | undefined
  /** `--older-than`: an age (`90m`, `24h`) or a time (`parseTime`): approvals requested before it. */
  readonly olderThan: string | undefined
  readonly limit: number
  /** `--after`: the cursor a page printed. */
  readonly after: string | undefined
}

/**
 * `artana approvals [--run RUN] [--tool NAME] [--older-than AGE] [--limit N] [--after CURSOR]`: the tenant's pending
 * approvals, the longest waiting first, a page at a time.
 */
export const approvals = (args: ApprovalsArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const before = args.olderThan === undefined ? undefined : yield* parseTime("--older-than", args.olderThan, now)
    if (args.limit < 1) return yield* new Errors.InvalidInput({ what: "--limit", reason: `${args.limit}: at least 1` })
    const store = Layer.succeedContext(yield* Layer.build(Database.layer(Database.parse(args.db), { create: false, readOnly: true })))
    const page = yield* Effect.flatMap(Kernel.Kernel, (kernel) =>
      kernel.approvalsPage({
        tenantId: args.tenant,
        runId: args.run,
        tool: args.tool,
        olderThan: before === undefined ? undefined : Math.max(0, now - before),
        limit: args.limit,
        after: args.after
      })).pipe(
        Effect.provide(Services.kernel({ store, auditKey: args.auditKey }))
      )
    const pending = page.approvals
    // The same command, one page on: every filter as given (an age as the time it meant), and the cursor.
    const nextCommand = page.next === undefined ? undefined : Hints.readOn(args, "approvals", undefined, [
      ["--run", args.run],
      ["--tool", args.tool],
      ["--older-than", before === undefined ? undefined : new Date(before).toISOString()],
      ["--limit", args.limit === 50 ? undefined : args.limit],
      ["--after", page.next]
    ])
    const unreadable = page.unreadable ?? []
    if (args.format === "json") {
      yield* Out.json({ tenantId: args.tenant, approvals: pending, next: page.next ?? null, ...(unreadable.length === 0 ? {} : { unreadable }) })
      return ExitCode.Ok
    }
    const s = Out.outStyle()
    // Paused runs whose log does not verify: their approvals can be neither listed nor decided.
    for (const u of unreadable) yield* Out.stderr(`run ${u.runId}: its log does not verify (${u.reason}, seq ${u.seq}); see artana verify ${u.runId}`)
    if (pending.length === 0) {
      yield* Out.stdout(`no ${args.after === undefined ? "" : "more "}pending approvals for tenant ${args.tenant}`)
      return ExitCode.Ok
    }
    const rows = pending.map((p) => [
      p.approvalId,
      p.tool,
      T.clip(p.arguments, 60),
      `waiting ${T.duration(now - p.requestedAt)}`,
      p.approvers === undefined ? "anyone" : p.approvers.join(", ")
    ])
    yield* Out.stdout(T.table(s, ["ID", "TOOL", "ARGUMENTS", "SINCE", "APPROVERS"], rows))
    const counted = `${pending.length} pending approval${pending.length === 1 ? "" : "s"} of tenant ${args.tenant}, the longest waiting first${args.after === undefined ? "" : ", after the cursor given"}`
    yield* Out.stdout(s.dim(nextCommand === undefined || page.next === undefined ? counted : `${counted}; more follow (next page cursor ${page.next}):\n  ${nextCommand}`))
    yield* Out.stdout(s.dim(`  artana approve ID [--args JSON]${Hints.options(args)}   |   artana reject ID --reason TEXT${Hints.options(args)}`))
    return ExitCode.Ok
  })))

export interface DecideArgs extends Common {
  readonly id: string
  /** Who decides (`--approver`, `$ARTANA_APPROVER`, else the OS user). */
  readonly approver: string | undefined
}

export interface ApproveArgs extends DecideArgs {
  /** `--args`: edited arguments, as JSON text. */
  readonly args: string | undefined
}

export interface RejectArgs extends DecideArgs {
  readonly reason: string
}

const badInput = (what: string, reason: string) => new Errors.InvalidInput({ what, reason })

/** `artana approve ID [--args JSON]`: approves the call (with edited arguments), then continues a plan run. */
export const approve = (args: ApproveArgs) =>
  Effect.suspend(() => {
    if (args.args === undefined) return decide(args, { decision: "approve" })
    let parsed: unknown
    try {
      parsed = JSON.parse(args.args)
    } catch (e) {
      return Out.command(args, Effect.fail(badInput("--args", `not JSON (${e instanceof Error ? e.message : String(e)}); quote it for the shell, e.g. --args '{"amount":100}'`)))
    }
    const json = Json.fromUnknown(parsed)
    return json.ok ? decide(args, { decision: "approve", arguments: json.json }) : Out.command(args, Effect.fail(badInput("--args", json.error)))
  })

/** `artana reject ID --reason TEXT`: rejects the call (the run's model or plan sees the reason), then continues a plan run. */
export const reject = (args: RejectArgs) => decide(args, { decision: "reject", reason: args.reason })

export type Choice = { readonly decision: "approve"; readonly arguments?: Json.Json } | { readonly decision: "reject"; readonly reason: string }

export const approverOf = (args: { readonly approver: string | undefined }): string => {
  const given = args.approver ?? process.env.ARTANA_APPROVER
  if (given !== undefined && given.trim() !== "") return given.trim()
  try {
    return os.userInfo().username
  } catch {
    return ""
  }
}

/** What a decision did: the decision, and the plan run's outcome after it (absent for a run of another workflow). */
export interface Continued {
  readonly decided: Approval.Decided
  readonly outcome: PlanRunner.RunOutcome | undefined
}

/** What deciding and continuing may fail with. */
export type DecideFailure =
  | Approval.DecideError
  | Errors.InvalidInput
  | Effect.Effect.Error<ReturnType<typeof Toolbox.fromRecord>>
  | Effect.Effect.Error<ReturnType<typeof PlanRunner.run>>

/**
 * Decides an approval on an opened store and, for a plan run, goes on with the plan (its tools rebuilt from its logged
 * policy), as `artana run --run-id` would continue it: `outcome` is then the plan run's; absent for any other run,
 * which the application that runs its workflow resumes. `artana approve`/`reject` and `artana ui` decide through it.
 */
export const decideAndContinue = (options: {
  readonly store: Layer.Layer<EventStore.EventStore>
  readonly tenant: string
  readonly id: string
  readonly approver: string
  readonly choice: Choice
  readonly auditKey: Redacted.Redacted<string> | undefined
  /**
   * The application's kernel (the inspector served by an application): a run that is no plan run is decided through
   * it, with its tools (an edit is checked against the tool's schema), middleware and audit key.
   */
  readonly application?: Kernel.Service | undefined
}): Effect.Effect<Continued, DecideFailure, Scope.Scope> =>
  Effect.gen(function*() {
    const { store, tenant: tenantId, id, approver, choice, auditKey, application } = options
    // A plan run's tools are rebuilt from its logged policy: edits are checked against them, and the plan goes on.
    const runId = Approval.runIdOf(id)
    const readFirst = Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenantId, runId ?? "", 1, 1)).pipe(
      Effect.catchTag("RunNotFound", () => Effect.succeed<ReadonlyArray<Event.Event>>([])),
      Effect.provide(store)
    )
    const first = runId === undefined ? [] : yield* readFirst
    const input = PlanRunner.loggedInput(first)
    if (input === undefined && application !== undefined) {
      return { decided: yield* application.decideApproval({ tenantId, approvalId: id, approver, ...choice }), outcome: undefined }
    }
    const toolbox = input === undefined ? undefined : yield* Toolbox.fromRecord(input.policy, input.mcp)
    const tools = toolbox?.tools ?? []
    const registry = { get: (name: string) => tools.find((t) => t.name === name), list: () => tools }
    const kernel = Services.kernel({ store, tools, middleware: toolbox?.middleware, workflows: [PlanRunner.workflow({ tools: registry })], auditKey })
    const decided = yield* Effect.flatMap(Kernel.Kernel, (k) => k.decideApproval({ tenantId, approvalId: id, approver, ...choice })).pipe(Effect.provide(kernel))
    if (input === undefined) return { decided, outcome: undefined }
    const tenant = yield* Services.tenant(tenantId, tools)
    const outcome = yield* PlanRunner.run({ runId: decided.runId, tenant, input }).pipe(Effect.provide(kernel))
    return { decided, outcome }
  })

const decide = (args: DecideArgs, choice: Choice) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const approver = approverOf(args)
    if (approver === "") return yield* badInput("--approver", "say who decides (it is logged): --approver NAME, or $ARTANA_APPROVER")
    const store = Layer.succeedContext(yield* Layer.build(Database.layer(Database.parse(args.db), { create: false })))
    const { decided, outcome } = yield* decideAndContinue({ store, tenant: args.tenant, id: args.id, approver, choice, auditKey: args.auditKey }).pipe(
      // An edit its tool refuses is the command line's fault: bad input, not a failing tool.
      Effect.catchTag("InvalidToolArguments", (e) => Effect.fail(badInput("--args", e.message)))
    )
    const s = Out.outStyle()
    const verb = decided.decision === "approved" ? s.green("approved") : s.yellow("rejected")
    if (outcome === undefined) {
      if (args.format === "json") {
        yield* Out.json({ ...decided, approver, status: "running" })
      } else {
        yield* Out.stdout(`${s.green("✓")} ${decided.tool} at step ${decided.stepKey} of run ${s.bold(decided.runId)} ${verb} by ${approver}`)
        yield* Out.stdout(s.dim(`  the run is resumable: continue it with the application that runs its workflow`))
      }
      return ExitCode.Ok
    }
    if (args.format === "json") {
      yield* Out.json({ ...decided, approver, status: outcome.status, ...(outcome.approval === undefined ? {} : { next: outcome.approval }) })
    } else {
      yield* Out.stdout(`${s.green("✓")} ${decided.tool} at step ${Hints.stepName(decided.stepKey)} of run ${s.bold(decided.runId)} ${verb} by ${approver}`)
      yield* Out.stdout(`${T.icon(s, outcome.status)} run ${s.bold(outcome.runId)} ${outcome.status}${outcome.failure === undefined ? "" : `: ${outcome.failure.message}`}`)
      if (outcome.approval !== undefined) yield* Out.stdout(Hints.approval(args, outcome.approval))
    }
    return outcome.status === "completed" ? ExitCode.ofSteps(outcome.steps.map((st) => st.status)) : outcome.status === "failed" ? ExitCode.ofTag(outcome.failure?.tag ?? "") : ExitCode.NeedsAttention
  })))
