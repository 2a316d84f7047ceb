/**
 * The chat loop `ctx.chat` runs, for workflows that build each turn's prompt themselves (an agent renders its
 * context and compacts its history each turn): one model step a turn, the tool calls it asks for, an answer that
 * does not decode asked for again. It ends with a tagged result, `Answered` or `GaveUp` (with
 * `OutputDecodeError` or `MaxTurnsExceeded`), so the caller decides what giving up does.
 *
 * ```ts
 * const end = yield* ChatLoop.run({
 *   maxTurns: 10,
 *   maxDecodeRetries: 2,
 *   push: (message) => void history.push(message),
 *   modelStep: (turn) => ctx.modelStep({ messages: [...history], key: `turn:${turn}` }),
 *   toolCalls: (step, turn) =>
 *     Effect.forEach(step.toolCalls, (call, i) =>
 *       Effect.map(ctx.toolCall(call, { key: `turn:${turn}/tool:${i}` }), (o) => void history.push(o.message)), { discard: true })
 * })
 * ```
 *
 * @since 0.1.0
 */
export { account, decodeRetryMessage, type LoopEnd, type LoopOptions, run, type Tally, tally } from "./internal/chatLoop.js"
