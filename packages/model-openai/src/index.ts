/**
 * @artana/model-openai: Artana's `ModelPort` over the official `openai` SDK.
 *
 * @since 0.1.0
 */
export * as OpenAiModel from "./OpenAiModel.js"
