/**
 * The `artana` command on Node: runs `Cli.main` and ends the process with its exit code, once stdout and stderr
 * have drained.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Cli from "../Cli.js"
import { whenDrained } from "./drain.js"

/**
 * Traces of the command's runs, exported over OTLP/HTTP (`@artana/otel`, loaded only then) when an OTLP endpoint is
 * set in the environment (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); the other `OTEL_*`
 * variables configure it. A setting it cannot use is said on stderr, and the command runs untraced.
 */
const tracing = (env: NodeJS.ProcessEnv): Layer.Layer<never> =>
  env.OTEL_EXPORTER_OTLP_ENDPOINT === undefined && env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT === undefined
    ? Layer.empty
    : Layer.unwrapEffect(Effect.map(Effect.promise(() => import("@artana/otel")), ({ ArtanaOtel }) => ArtanaOtel.layer())).pipe(
      Layer.catchAll((error) => Layer.effectDiscard(Effect.sync(() => process.stderr.write(`artana: traces are not exported: ${error.message}\n`))))
    )

export const run = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(Effect.provide(Cli.main(argv), Layer.merge(NodeContext.layer, tracing(process.env))), {
    disableErrorReporting: true,
    // Interrupted (Ctrl-C, SIGTERM): 130, as shells report it; the run stays resumable with --run-id.
    // The process ends only once its output has left it: a pipe to a slow reader gets the whole JSON document.
    teardown: (exit, onExit) =>
      whenDrained(() =>
        onExit(Exit.isSuccess(exit) && typeof exit.value === "number" ? exit.value : Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
      )
  })
