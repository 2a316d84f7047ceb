/**
 * @artana/model-openai/testing: `FakeOpenAi`, a local OpenAI-compatible server driven by a script, for tests
 * and offline examples that run the real `openai` SDK over HTTP.
 *
 * @since 0.1.0
 */
export * as FakeOpenAi from "./FakeOpenAi.js"
