/**
 * Extensions: what another package plugs into an agent without the agent knowing it — context sections, tools, and
 * an `onFinish` hook that runs durable steps through the kernel after the run's outcome is known (before the run
 * completes or fails). `@artana/experience` is built this way: a section that renders the rules learned for the
 * task, and a hook that reflects on the run in a model step of its own and saves what it learned.
 *
 * @example
 * const audit: Extension.Extension = {
 *   name: "audit",
 *   onFinish: ({ ctx, outcome, key }) =>
 *     Effect.asVoid(ctx.step("audit", Effect.sync(() => log(outcome._tag)), Schema.Void, { key: key("audit") }))
 * }
 * AutonomousAgent.make({ name: "analyst", instructions, extensions: [audit] })
 *
 * @since 0.1.0
 */
import type { Chat, Errors, Tool, Workflow } from "@artana/core"
import type * as Effect from "effect/Effect"
import type { ExtensionError } from "./AgentErrors.js"
import type { ContextSection } from "./ContextBuilder.js"

/** How the run ended, as a hook learns it. */
export type Outcome =
  | {
    readonly _tag: "success"
    /** The final answer's text, as the model gave it. */
    readonly answer: string
    /** The answer decoded with the run's output schema (the text without one). */
    readonly output: unknown
  }
  | {
    readonly _tag: "failure"
    /** The error's tag (`MaxTurnsExceeded`, `OutputDecodeError`, `ContextOverflow`) and message. */
    readonly errorTag: string
    readonly message: string
  }

/** What an `onFinish` hook is given. */
export interface FinishInput {
  /** The run's durable context: the hook's model calls, tool calls and writes go through it. */
  readonly ctx: Workflow.WorkflowContext
  readonly agent: string
  readonly task: string
  /** The model of the run. */
  readonly model: string
  readonly outcome: Outcome
  /** The conversation as the agent holds it at the end: the task, the compaction summary if any, the rest. */
  readonly messages: ReadonlyArray<Chat.ChatMessage>
  /** Model steps taken (compaction summaries excluded). */
  readonly turns: number
  /** A step key for this extension: `finish:<extension>:<name>`, so its steps never collide with the loop's. */
  readonly key: (name: string) => string
}

/** Errors a hook may fail with: the run then fails with them. A hook that must not fail the run catches its own. */
export type FinishError = ExtensionError | Errors.StoreError | Workflow.ModelStepError

/** What a `runTools` hook is given. */
export interface ToolsInput {
  /** The run's durable context: list tools in a logged step (`ctx.step`), so a resume or a replay reads the list. */
  readonly ctx: Workflow.WorkflowContext
  readonly agent: string
  readonly task: string
  /** The model of the run. */
  readonly model: string
  /** A step key for this extension: `tools:<extension>:<name>`, so its steps never collide with the loop's. */
  readonly key: (name: string) => string
}

export interface Extension {
  /** Names the extension (in step keys and errors); unique within an agent. */
  readonly name: string
  /** Sections added to the agent's context builder, after its own. */
  readonly sections?: ReadonlyArray<ContextSection> | undefined
  /** Tools added to the agent's tools (skills, with progressive skills). */
  readonly tools?: ReadonlyArray<Tool.Tool> | undefined
  /**
   * Tools of one run, known only once it runs (an MCP server's, listed when the run starts): called once at the start
   * of each run (a continued run calls it again), before the first turn; the tools join the agent's (skills too, with
   * progressive skills). Whatever it learns from the world must be logged (a `ctx.step`), so a resumed or replayed run
   * gets the same tools without asking again. A tool named like another fails the run (`ExtensionError`), and so does a
   * failure of the hook, with its message.
   *
   * @example
   * runTools: ({ ctx, key }) => Effect.map(McpTools.load(ctx, { key: key("list") }), (mcp) => mcp.tools)
   */
  readonly runTools?: ((input: ToolsInput) => Effect.Effect<ReadonlyArray<Tool.Tool>, Error>) | undefined
  /**
   * Runs once the run's outcome is known: after the final answer decoded, or after the loop failed with
   * `MaxTurnsExceeded`, `OutputDecodeError` or `ContextOverflow` (not after a budget stop or a kernel fault, where
   * nothing more may run). Hooks run in the order of the extensions, each step keyed with `key(...)`.
   */
  readonly onFinish?: ((input: FinishInput) => Effect.Effect<void, FinishError>) | undefined
}
