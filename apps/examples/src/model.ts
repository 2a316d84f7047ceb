// Which model the examples talk to: OpenAI (or any compatible server) when configured, else the scripted one.
import type { Layer } from "effect"
import type { ModelPort } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { OpenAiModel } from "@artana/model-openai"

export interface ModelChoice {
  readonly layer: Layer.Layer<ModelPort.ModelPort, unknown>
  /** What to tell the person running the example. */
  readonly label: string
  readonly live: boolean
}

/**
 * OpenAI when `OPENAI_API_KEY` (or `OPENAI_BASE_URL`, for a local compatible server) is set; otherwise the
 * scripted model, priced as gpt-4o-mini so budgets and spend still mean something offline.
 */
export const chooseModel = (script: ReadonlyArray<ScriptedModel.Reply>): ModelChoice => {
  const key = process.env.OPENAI_API_KEY
  const baseURL = process.env.OPENAI_BASE_URL
  if ((key !== undefined && key !== "") || (baseURL !== undefined && baseURL !== "")) {
    const model = process.env.OPENAI_MODEL ?? "gpt-4o-mini"
    return { layer: OpenAiModel.layerConfig(), label: `${model} via the openai SDK at ${baseURL ?? "api.openai.com"}`, live: true }
  }
  return {
    layer: ScriptedModel.layer(script, { model: "gpt-4o-mini" }),
    label: "ScriptedModel (offline; set OPENAI_API_KEY to use OpenAI; it plays a recorded conversation, priced as gpt-4o-mini)",
    live: false
  }
}
