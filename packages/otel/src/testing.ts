/**
 * @artana/otel/testing: a local OTLP/HTTP receiver, to assert in a test what a process exported.
 *
 * @since 0.1.0
 */
export * as OtlpReceiver from "./OtlpReceiver.js"
