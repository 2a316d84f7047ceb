/**
 * Workflows tests of live runs share.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { user } from "./Chat.js"
import * as Workflow from "./Workflow.js"

/**
 * Chats once (the input is the prompt), then waits for a person: the run stays live, so its streamed deltas are
 * kept and a reader can reconnect inside them. Resumed with any response, it completes with the reply's text.
 */
export const chatThenPause = Workflow.make({
  name: "chat-then-pause",
  input: Schema.String,
  output: Schema.String,
  run: (prompt, ctx) =>
    Effect.gen(function*() {
      const reply = yield* ctx.chat({ messages: [user(prompt)] })
      yield* ctx.pauseForHuman({ reason: "check the answer" })
      return reply.output
    })
})
