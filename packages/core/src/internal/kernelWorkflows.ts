/**
 * The kernel's built-in workflows: `chat` is a run of one chat over the messages it is given, `callTool` a run of one
 * call of a registered tool. Both are ordinary workflows, logged and replayed as any other.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AssistantMessage, ChatMessage, Usage } from "../Chat.js"
import * as Json from "../Json.js"
import type { ChatRunOptions, KernelError, RunResult, Service } from "../Kernel.js"
import * as Workflow from "../Workflow.js"

const chatOutput = <A, I>(outputSchema: Schema.Schema<A, I> | undefined) =>
  Schema.Struct({
    output: outputSchema ?? Schema.Unknown,
    message: AssistantMessage,
    messages: Schema.Array(ChatMessage),
    usage: Usage,
    costUsd: Schema.Number
  })

/** The workflow of `Kernel.chat`: one chat over the messages it is given. */
const chatWorkflow = <A, I>(chatOptions: Workflow.ChatOptions<A, I>) =>
  Workflow.make({
    name: "artana.chat",
    input: Schema.Struct({ messages: Schema.Array(ChatMessage) }),
    output: chatOutput(chatOptions.outputSchema),
    run: (input, ctx) => ctx.chat({ ...chatOptions, messages: input.messages })
  })

/** The workflow of `Kernel.callTool`: one call of a registered tool. */
const callToolWorkflow = Workflow.make({
  name: "artana.callTool",
  input: Schema.Struct({ tool: Schema.String, args: Json.Json }),
  output: Json.Json,
  run: (input, ctx) => Effect.map(ctx.tool(input.tool, input.args), (r) => r as Json.Json)
})

/** The kernel's `chat` and `callTool`, each a run of its workflow by `execute`. */
export const make = (execute: Service["execute"]): Pick<Service, "chat" | "callTool"> => ({
  chat: <A, I>(options: ChatRunOptions<A, I>) => {
    const { runId, tenant, ...chatOptions } = options
    // The workflow's input is the whole conversation (logged in its RunStarted); the prompt is part of it.
    const { messages: _messages, prompt: _prompt, ...rest } = chatOptions
    return execute(chatWorkflow(rest), { runId, tenant, input: { messages: Workflow.conversation(chatOptions) } }) as Effect.Effect<
      RunResult<Workflow.ChatResult<A>>,
      Workflow.ChatError | KernelError
    >
  },
  callTool: (options) =>
    execute(callToolWorkflow, { runId: options.runId, tenant: options.tenant, input: { tool: options.tool, args: options.args } })
})
