/**
 * @artana/model-anthropic: Artana's `ModelPort` over the official `@anthropic-ai/sdk`.
 *
 * @since 0.1.0
 */
export * as AnthropicModel from "./AnthropicModel.js"
