/**
 * The `ModelRequested` a model step logs for the request it sent, and its text as the kernel stores it
 * (`JSON.stringify` of that payload). A replay compares a lazily read `ModelRequested`'s stored text with the text of
 * its own request's (`modelRecorded.ts`, `lazyPayload.ts`): the same text is the same payload, which the replay then
 * neither parses nor guards. The text is built from parts: each message is rendered once per object (a `WeakMap` by
 * identity, as `requestHash.ts` does for the canonical text), and an agent's requests repeat most of their messages.
 */
import type { EventPayload } from "../Event.js"
import type * as ModelPort from "../ModelPort.js"

/** The `ModelRequested` of the request `sent`. */
export const requestedOf = (sent: ModelPort.ModelRequest, requestHash: string): EventPayload => ({
  _tag: "ModelRequested",
  model: sent.model,
  messages: sent.messages,
  tools: sent.tools.map((t) => t.name),
  requestHash,
  ...(sent.outputFormat === undefined ? {} : { outputSchema: sent.outputFormat.schema }),
  ...(sent.maxOutputTokens === undefined ? {} : { maxOutputTokens: sent.maxOutputTokens })
})

const rendered = new WeakMap<object, string>()

/** An element of an array as `JSON.stringify` of the array writes it, remembered for an object. */
const element = (value: object, render: () => string | undefined): string => {
  let text = rendered.get(value)
  if (text === undefined) {
    text = render() ?? "null"
    rendered.set(value, text)
  }
  return text
}

const messagesText = (messages: ReadonlyArray<ModelPort.ModelRequest["messages"][number]>): string => {
  let out = "["
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    out += (i === 0 ? "" : ",") + (typeof message === "object" && message !== null ? element(message, () => JSON.stringify(message)) : JSON.stringify(message) ?? "null")
  }
  return out + "]"
}

/**
 * `JSON.stringify(requestedOf(sent, requestHash))`: what a model step stores for the request it sent (tested against
 * it). A request with an output format or a token cap, or a model that is not a string, is rendered whole.
 */
export const requestedText = (sent: ModelPort.ModelRequest, requestHash: string): string => {
  if (sent.outputFormat !== undefined || sent.maxOutputTokens !== undefined || typeof sent.model !== "string") {
    return JSON.stringify(requestedOf(sent, requestHash))
  }
  const tools = element(sent.tools, () => JSON.stringify(sent.tools.map((t) => t.name)))
  return '{"_tag":"ModelRequested","model":' + JSON.stringify(sent.model) + ',"messages":' + messagesText(sent.messages) + ',"tools":' + tools +
    ',"requestHash":' + JSON.stringify(requestHash) + "}"
}
