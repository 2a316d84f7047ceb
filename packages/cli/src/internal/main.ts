/**
 * The `artana` command on Node: runs `Cli.main` and ends the process with its exit code, once stdout and stderr
 * have drained.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Cli from "../Cli.js"
import { whenDrained } from "./drain.js"

export const run = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(Effect.provide(Cli.main(argv), NodeContext.layer), {
    disableErrorReporting: true,
    // Interrupted (Ctrl-C, SIGTERM): 130, as shells report it; the run stays resumable with --run-id.
    // The process ends only once its output has left it: a pipe to a slow reader gets the whole JSON document.
    teardown: (exit, onExit) =>
      whenDrained(() =>
        onExit(Exit.isSuccess(exit) && typeof exit.value === "number" ? exit.value : Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
      )
  })
