// How the standard OTEL_* variables configure the exporter (read through Effect's ConfigProvider, here from a map).
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { ArtanaOtel } from "@artana/otel"

const withEnv = (env: Record<string, string>, options: ArtanaOtel.Options = {}) =>
  ArtanaOtel.settings(options).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

describe("ArtanaOtel.settings", () => {
  it.effect("defaults: the local collector, protobuf, service artana, no content, enabled", () =>
    Effect.gen(function*() {
      expect(yield* withEnv({})).toMatchObject({
        enabled: true,
        url: "http://localhost:4318/v1/traces",
        protocol: "http/protobuf",
        serviceName: "artana",
        captureContent: false,
        headers: {}
      })
    }))

  it.effect("OTEL_EXPORTER_OTLP_ENDPOINT gets /v1/traces; the traces endpoint is used as it is and wins", () =>
    Effect.gen(function*() {
      expect((yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example.com:4318/" })).url).toBe("https://otel.example.com:4318/v1/traces")
      const both = yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://a.example.com", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://b.example.com/custom" })
      expect(both.url).toBe("https://b.example.com/custom")
    }))

  it.effect("headers, protocol, service name and content capture from their variables; options win over them", () =>
    Effect.gen(function*() {
      const env = {
        OTEL_EXPORTER_OTLP_HEADERS: "api-key=s%3Dcret, x-team = billing",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "billing-agent",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true"
      }
      expect(yield* withEnv(env)).toMatchObject({
        headers: { "api-key": "s=cret", "x-team": "billing" },
        protocol: "http/json",
        serviceName: "billing-agent",
        captureContent: true
      })
      expect(yield* withEnv(env, { serviceName: "mine", captureContent: false, headers: {} })).toMatchObject({ serviceName: "mine", captureContent: false, headers: {} })
      // A service.name in OTEL_RESOURCE_ATTRIBUTES is left to the exporter, which reads that variable itself.
      expect((yield* withEnv({ OTEL_RESOURCE_ATTRIBUTES: "service.name=from-resource" })).serviceName).toBeUndefined()
    }))

  it.effect("OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none turn it off; grpc is refused with a message", () =>
    Effect.gen(function*() {
      expect((yield* withEnv({ OTEL_SDK_DISABLED: "true" })).enabled).toBe(false)
      expect((yield* withEnv({ OTEL_TRACES_EXPORTER: "none" })).enabled).toBe(false)
      const grpc = yield* Effect.flip(withEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }))
      expect(String(grpc)).toContain("grpc is not supported by @artana/otel")
    }))
})
