/**
 * The hash of a model request: `SHA-256(canonical JSON of { model, messages, tools, outputFormat, maxOutputTokens })`
 * (`outputFormat` and `maxOutputTokens` null when absent), the `requestHash` a `ModelRequested` records and a replay
 * compares. Every model step computes it, live or replayed, so its text is built from parts: each message, tool and
 * output format is rendered once across an execution's requests (`renders.ts`). An agent's requests repeat most of
 * their messages (the system prompt, the task, the recent window) and all of their tools, so replaying a run renders
 * each of them once instead of once per turn. The text is exactly `canonicalJson` of that object (tested against it).
 */
import type { ModelRequest } from "../ModelPort.js"
import { canonicalJson, sha256 } from "./hash.js"
import { Renders } from "./renders.js"

/** `canonicalJson(value)` as an element of an array writes it ("null" for undefined), an object's from `renders`. */
export const part = (value: unknown, renders: Renders): string => {
  if (typeof value !== "object" || value === null) return value === undefined ? "null" : canonicalJson(value)
  return renders.of(value).canonical
}

/** `canonicalJson` of an array of request objects (messages, tools), each object's from `renders`. */
export const parts = (values: ReadonlyArray<unknown>, renders: Renders): string => {
  let out = "["
  for (let i = 0; i < values.length; i++) out += (i === 0 ? "" : ",") + part(values[i], renders)
  return out + "]"
}

/** What `requestText` writes before the messages of a request without an output format or a token cap. */
export const PLAIN_HEAD = '{"maxOutputTokens":null,"messages":'

/** What `requestText` writes after the messages of a request without an output format (`model`: its canonical JSON). */
export const plainTail = (model: string, tools: ReadonlyArray<unknown>, renders: Renders): string =>
  ',"model":' + model + ',"outputFormat":null,"tools":' + parts(tools, renders) + "}"

/**
 * The canonical JSON a request's hash covers (keys in sorted order, as `canonicalJson` writes them). `renders`: the
 * execution's (see `renders.ts`); without, every part is rendered.
 */
export const requestText = (request: ModelRequest, renders: Renders = new Renders()): string => {
  const text = '{"maxOutputTokens":' + canonicalJson(request.maxOutputTokens ?? null) +
    ',"messages":' + parts(request.messages, renders) +
    ',"model":' + canonicalJson(request.model) +
    ',"outputFormat":' + part(request.outputFormat ?? null, renders) +
    ',"tools":' + parts(request.tools, renders) + "}"
  renders.done()
  return text
}

/** The request's hash: SHA-256 of `requestText`, hex. */
export const requestHash = (request: ModelRequest, renders?: Renders): string => sha256(requestText(request, renders))
