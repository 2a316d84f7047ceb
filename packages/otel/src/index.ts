/**
 * @artana/otel: OpenTelemetry traces of Artana runs, exported over OTLP/HTTP.
 *
 * @since 0.1.0
 */
export * as ArtanaOtel from "./ArtanaOtel.js"
