/**
 * The `ModelRequested` a model step logs for the request it sent, and its text as the kernel stores it
 * (`JSON.stringify` of that payload). A replay compares a lazily read `ModelRequested`'s stored text with the text of
 * its own request's (`modelRecorded.ts`, `lazyPayload.ts`): the same text is the same payload, which the replay then
 * neither parses nor guards. The text is built from parts: each message is rendered once across an execution's requests
 * (`renders.ts`, as `requestHash.ts` does for the canonical text), and an agent's requests repeat most of their messages.
 */
import type { EventPayload } from "../Event.js"
import type * as ModelPort from "../ModelPort.js"
import { Renders } from "./renders.js"

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

const stringified = (value: object): string => JSON.stringify(value) ?? "null"

const messagesText = (messages: ReadonlyArray<ModelPort.ModelRequest["messages"][number]>, renders: Renders): string => {
  let out = "["
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    out += (i === 0 ? "" : ",") + (typeof message === "object" && message !== null ? renders.of(message, stringified) : JSON.stringify(message) ?? "null")
  }
  return out + "]"
}

const toolNames = (tools: ModelPort.ModelRequest["tools"]): string => JSON.stringify(tools.map((t) => t.name))

/**
 * `JSON.stringify(requestedOf(sent, requestHash))`: what a model step stores for the request it sent (tested against
 * it). A request with an output format or a token cap, or a model that is not a string, is rendered whole.
 */
export const requestedText = (sent: ModelPort.ModelRequest, requestHash: string, renders: Renders = new Renders()): string => {
  if (sent.outputFormat !== undefined || sent.maxOutputTokens !== undefined || typeof sent.model !== "string") {
    return JSON.stringify(requestedOf(sent, requestHash))
  }
  const text = '{"_tag":"ModelRequested","model":' + JSON.stringify(sent.model) + ',"messages":' + messagesText(sent.messages, renders) + ',"tools":' +
    renders.of(sent.tools, toolNames) + ',"requestHash":' + JSON.stringify(requestHash) + "}"
  renders.done()
  return text
}
