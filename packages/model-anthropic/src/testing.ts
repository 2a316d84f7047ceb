/**
 * @artana/model-anthropic/testing: `FakeAnthropic`, a local Anthropic-compatible server driven by a script, for tests
 * and offline examples that run the real `@anthropic-ai/sdk` over HTTP.
 *
 * @since 0.1.0
 */
export * as FakeAnthropic from "./FakeAnthropic.js"
