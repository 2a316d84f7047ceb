/**
 * Composing a step's answer without an effect per stage when it is known already. A replayed step is answered from
 * the log at once: its answer is an `Exit` (a success is an `Effect` too), and what follows it (decoding a tool's
 * result, shaping a model step's result) runs on the value there and then, where `Effect.flatMap` / `Effect.map`
 * would add two or three nodes to run, and closures to collect, per step of a replay. Anything else (a page still to
 * read, a live call) is composed as usual.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** Whether `self` is already a success (an `Exit`): its value may be used at once. */
const succeeded = <A, E, R>(self: Effect.Effect<A, E, R>): self is Exit.Success<A, E> & Effect.Effect<A, E, R> =>
  Exit.isExit(self) && Exit.isSuccess(self)

/** `Effect.flatMap(self, f)`: `f` applied at once when `self` succeeded already. */
export const flatMap = <A, E, R, B, E2, R2>(self: Effect.Effect<A, E, R>, f: (a: A) => Effect.Effect<B, E2, R2>): Effect.Effect<B, E | E2, R | R2> =>
  succeeded(self) ? f(self.value) : Effect.flatMap(self, f)

/** `Effect.map(self, f)`: `f` applied at once when `self` succeeded already. */
export const map = <A, E, R, B>(self: Effect.Effect<A, E, R>, f: (a: A) => B): Effect.Effect<B, E, R> =>
  succeeded(self) ? Exit.succeed(f(self.value)) : Effect.map(self, f)
