/**
 * The hash of a model request: `SHA-256(canonical JSON of { model, messages, tools, outputFormat, maxOutputTokens })`
 * (`outputFormat` and `maxOutputTokens` null when absent), the `requestHash` a `ModelRequested` records and a replay
 * compares. Every model step computes it, live or replayed, so its text is built from parts: each message and tool is
 * rendered once across an execution's requests, and so is the output format (`renders.ts`: an agent's requests repeat most of their messages and all
 * of their tools, so replaying a run renders each of them once instead of once per turn). The text is exactly
 * `canonicalJson` of that object (tested against it).
 */
import type { ModelRequest } from "../ModelPort.js"
import { canonicalJson, sha256 } from "./hash.js"
import { Renders } from "./renders.js"

const canonical = (value: object): string => canonicalJson(value)

/** `canonicalJson` of each of `values`, as `canonicalJson` of the array writes them. */
const parts = (values: ReadonlyArray<unknown>, renders: Renders): string => {
  let out = "["
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    out += (i === 0 ? "" : ",") + (typeof value === "object" && value !== null ? renders.of(value, canonical) : value === undefined ? "null" : canonicalJson(value))
  }
  return out + "]"
}

/**
 * The canonical JSON a request's hash covers (keys in sorted order, as `canonicalJson` writes them). `renders`: the
 * execution's (a fresh one renders every part).
 */
export const requestText = (request: ModelRequest, renders: Renders = new Renders()): string => {
  const text = '{"maxOutputTokens":' + canonicalJson(request.maxOutputTokens ?? null) +
    ',"messages":' + parts(request.messages, renders) +
    ',"model":' + canonicalJson(request.model) +
    ',"outputFormat":' + (request.outputFormat === undefined ? "null" : renders.of(request.outputFormat, canonical)) +
    ',"tools":' + parts(request.tools, renders) + "}"
  renders.done()
  return text
}

/** The request's hash: SHA-256 of `requestText`, hex. */
export const requestHash = (request: ModelRequest, renders?: Renders): string => sha256(requestText(request, renders))
