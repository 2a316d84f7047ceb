/** How the server runs an effect on the store's services: opened once when `artana ui` starts, shared by requests. */
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Services from "../services.js"

/** The services the pages read with (the kernel, its store, its tools). */
export type UiServices = Services.Services

/** Runs an effect on the opened store and settles with how it ended. */
export type Run = <A, E>(effect: Effect.Effect<A, E, UiServices>) => Promise<Exit.Exit<A, E>>
