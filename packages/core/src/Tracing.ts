/**
 * What the kernel's spans carry. The kernel traces every execution of a run and its live steps with Effect's own
 * tracing (`Effect.withSpan`): with no tracer installed they go to Effect's built-in tracer and leave the process by no
 * route; `@artana/otel` exports them over OTLP. Span names and attributes are listed in the core README ("Tracing").
 *
 * Spans never carry prompt or tool content (messages, arguments, results, pause reasons) unless `CaptureContent` is
 * true in the kernel's services: content may hold personal data, and the PII scrubber only guards what leaves for
 * a model.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/**
 * Whether spans carry prompt and tool content (`gen_ai.input.messages`, `gen_ai.output.messages`,
 * `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, `artana.pause.reason`). Default false.
 *
 * @example
 * Artana.layer({ model, services: [Tracing.layerCaptureContent] })
 */
export class CaptureContent extends Context.Reference<CaptureContent>()("@artana/core/Tracing/CaptureContent", {
  defaultValue: (): boolean => false
}) {}

/** Turns content capture on (`CaptureContent`): for a trusted collector, never by default. */
export const layerCaptureContent: Layer.Layer<never> = Layer.succeedContext(Context.make(CaptureContent, true))
