/**
 * The tool handlers an execution is running, each with the logging of its outcome. Branches of one run may run
 * concurrently (under explicit keys): when one of them suspends the execution (a pause, a call in doubt, a
 * continue-as-new), the others' handlers end and their outcomes are logged before the execution stops, instead of
 * being cut off mid-call (a call that acted would be left in doubt, or, idempotent, made again, with no crash at all).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"

/** The execution whose handler the current fiber runs, if any. */
const inHandler = FiberRef.unsafeMake<object | undefined>(undefined)

/**
 * `forked`: whether the workflow's code has a forked fiber alive (`execution.ts`'s supervisor). With none, the calling
 * fiber is the workflow's only one: no other branch can be in a handler or start one while this one runs, so its
 * handler is not tracked (the sequential step pays nothing for the concurrent case).
 */
export const make = (forked: () => boolean = () => true) => {
  const self = {}
  let running = 0
  // Handlers that are suspending the execution themselves: they wait for the others, not for each other.
  let halting = 0
  let waiting: Array<Deferred.Deferred<void>> = []
  const wake = Effect.suspend(() => {
    const woken = waiting
    waiting = []
    return Effect.forEach(woken, (d) => Deferred.succeed(d, undefined), { discard: true })
  })
  const ended = Effect.suspend(() => {
    running--
    return wake
  })
  return {
    /**
     * Runs a handler and the logging of its outcome, counted until it ends (however it ends). Decides when called:
     * call it as the handler is about to run (the sequential step pays no node for it).
     */
    handler: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      forked()
        ? Effect.flatMap(FiberRef.get(inHandler), (own) =>
          // Counted once: a call's request and its handler are one (`toolRequest.ts`).
          own === self ? effect : Effect.ensuring(
            Effect.suspend(() => {
              running++
              return Effect.locally(effect, inHandler, self)
            }),
            ended
          ))
        : effect,
    /** Waits until no other fiber runs a handler of this execution (a handler suspending it does not wait for itself). */
    othersEnded: Effect.flatMap(FiberRef.get(inHandler), (own) => {
      const loop: Effect.Effect<void> = Effect.suspend(() => {
        if (running - halting <= 0) return Effect.void
        const d = Deferred.unsafeMake<void>(FiberId.none)
        waiting.push(d)
        return Effect.zipRight(Deferred.await(d), loop)
      })
      if (own !== self) return loop
      // This handler no longer runs: it is stopping the execution (two branches halting at once wait for neither).
      return Effect.suspend(() => {
        halting++
        return Effect.zipRight(wake, loop)
      })
    })
  }
}
