/**
 * OpenTelemetry traces of Artana runs: the kernel's spans (`artana.run`, `artana.model`, `artana.tool`, ...) exported
 * over OTLP/HTTP by `@effect/opentelemetry`'s own exporter (no OpenTelemetry SDK needed), configured by the standard
 * `OTEL_*` variables, read through Effect's `Config` (the environment by default).
 *
 * @since 0.1.0
 */
import { Tracing } from "@artana/core"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

/** How spans go on the wire: OTLP's protobuf (the specification's default) or its JSON encoding. */
export type Protocol = "http/protobuf" | "http/json"

/** The exporter's settings; each one given here wins over its `OTEL_*` variable. */
export interface Options {
  /**
   * The traces endpoint, used as it is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; else `OTEL_EXPORTER_OTLP_ENDPOINT` +
   * `/v1/traces`; else `http://localhost:4318/v1/traces`).
   */
  readonly url?: string | undefined
  /** Headers of every export, e.g. an API key (`OTEL_EXPORTER_OTLP_TRACES_HEADERS`, `OTEL_EXPORTER_OTLP_HEADERS`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL`; default `http/protobuf`. */
  readonly protocol?: Protocol | undefined
  /** `service.name` (`OTEL_SERVICE_NAME`, or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`); default `artana`. */
  readonly serviceName?: string | undefined
  readonly serviceVersion?: string | undefined
  /** More resource attributes (on top of `OTEL_RESOURCE_ATTRIBUTES`). */
  readonly resourceAttributes?: Readonly<Record<string, unknown>> | undefined
  /**
   * Spans carry prompt and tool content (messages, arguments, results, pause reasons): only for a collector trusted
   * with personal data. Default false (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` turns it on).
   */
  readonly captureContent?: boolean | undefined
  /** How often spans are sent (they are sent on shutdown too); default 5 seconds. */
  readonly exportInterval?: Duration.DurationInput | undefined
  /** False exports nothing and installs no tracer (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`). */
  readonly enabled?: boolean | undefined
}

/** The settings as resolved from the options and the environment. */
export interface Settings {
  readonly enabled: boolean
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly protocol: Protocol
  readonly serviceName: string | undefined
  readonly serviceVersion: string | undefined
  readonly resourceAttributes: Readonly<Record<string, unknown>>
  readonly captureContent: boolean
  readonly exportInterval: Duration.DurationInput | undefined
}

/** `k1=v1,k2=v2` with URL-encoded values, as `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES` write it. */
export const parsePairs = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim())
  }
  return out
}

const optional = (name: string) => Config.option(Config.nonEmptyString(name))
const flag = (name: string) => Config.withDefault(Config.boolean(name), false)
const protocolOf = (name: string) =>
  Config.option(Config.mapOrFail(Config.string(name), (value): Either.Either<Protocol, ConfigError.ConfigError> =>
    value === "http/protobuf" || value === "http/json"
      ? Either.right(value)
      : Either.left(ConfigError.InvalidData([name], `${value} is not supported by @artana/otel: use http/protobuf or http/json`))))

/** The `OTEL_*` variables @artana/otel reads. */
const environment = Config.all({
  disabled: flag("OTEL_SDK_DISABLED"),
  tracesExporter: Config.withDefault(Config.string("OTEL_TRACES_EXPORTER"), "otlp"),
  tracesEndpoint: optional("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  endpoint: optional("OTEL_EXPORTER_OTLP_ENDPOINT"),
  tracesHeaders: Config.option(Config.redacted("OTEL_EXPORTER_OTLP_TRACES_HEADERS")),
  headers: Config.option(Config.redacted("OTEL_EXPORTER_OTLP_HEADERS")),
  tracesProtocol: protocolOf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
  protocol: protocolOf("OTEL_EXPORTER_OTLP_PROTOCOL"),
  serviceName: optional("OTEL_SERVICE_NAME"),
  resourceAttributes: optional("OTEL_RESOURCE_ATTRIBUTES"),
  captureContent: flag("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
})

/** The settings from `options` over the `OTEL_*` variables (read with the current `ConfigProvider`). */
export const settings = (options: Options = {}): Effect.Effect<Settings, ConfigError.ConfigError> =>
  Effect.map(environment, (env) => {
    const base = Option.map(env.endpoint, (e) => `${e.replace(/\/+$/, "")}/v1/traces`)
    const headerText = Option.orElse(env.tracesHeaders, () => env.headers)
    const fromResource = Option.match(env.resourceAttributes, { onNone: () => ({}), onSome: parsePairs })
    return {
      enabled: options.enabled ?? !(env.disabled || env.tracesExporter === "none"),
      url: options.url ?? Option.getOrElse(Option.orElse(env.tracesEndpoint, () => base), () => "http://localhost:4318/v1/traces"),
      headers: options.headers ?? Option.match(headerText, { onNone: () => ({}), onSome: (h) => parsePairs(Redacted.value(h)) }),
      protocol: options.protocol ?? Option.getOrElse(Option.orElse(env.tracesProtocol, () => env.protocol), (): Protocol => "http/protobuf"),
      // `service.name` in OTEL_RESOURCE_ATTRIBUTES is the exporter's own reading: left to it when set there.
      serviceName: options.serviceName ?? Option.getOrUndefined(env.serviceName) ?? ("service.name" in fromResource ? undefined : "artana"),
      serviceVersion: options.serviceVersion,
      resourceAttributes: options.resourceAttributes ?? {},
      captureContent: options.captureContent ?? env.captureContent,
      exportInterval: options.exportInterval
    }
  })

/** The tracer (and content capture, when asked) for resolved settings; nothing at all when disabled. */
export const layerSettings = (s: Settings): Layer.Layer<never> => {
  if (!s.enabled) return Layer.empty
  const tracer = OtlpTracer.layer({
    url: s.url,
    headers: s.headers,
    resource: { serviceName: s.serviceName, serviceVersion: s.serviceVersion, attributes: { ...s.resourceAttributes } },
    ...(s.exportInterval === undefined ? {} : { exportInterval: s.exportInterval })
  }).pipe(
    Layer.provide(s.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer)
  )
  return s.captureContent ? Layer.merge(tracer, Tracing.layerCaptureContent) : tracer
}

/**
 * Exports the kernel's spans over OTLP/HTTP. Give it to `Artana.layer`/`Artana.create` in `services`, or provide it to
 * your program; without it (or with `OTEL_SDK_DISABLED=true`) the kernel opens no span. Spans are sent in batches and
 * on shutdown (closing the client, disposing the runtime).
 *
 * @example
 * const artana = Artana.create({ model, store, services: [ArtanaOtel.layer({ serviceName: "billing-agent" })] })
 */
export const layer = (options: Options = {}): Layer.Layer<never, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(settings(options), layerSettings))
