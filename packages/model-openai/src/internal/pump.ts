/**
 * A provider's streamed answer pumped straight into an Effect `Stream`: once the server answered (the SDK's promise
 * resolved), a plain loop reads the SDK's events and pushes their deltas into the stream's buffer as they arrive,
 * without waiting for the Effect side (the retry schedule) to notice that the request succeeded, and without an Effect
 * stage per event.
 *
 * Deltas are coalesced: a delta that comes when none is held is pushed at once, and the pump then lets the event loop
 * turn (`setImmediate`) before reading on, so that the consumer's work for it (microtasks: the kernel keeps it, its
 * readers get it) runs first rather than after the SDK parsed every other event of the same network read. What the
 * SDK yields from then until the end of the next turn is held and pushed together, so a burst costs the consumer one
 * step per turn, not one per delta; a stream whose events come one per turn pushes each at once.
 */
import type * as StreamEmit from "effect/StreamEmit"
import type { ModelPort } from "@artana/core"

/** Resolves in the next turn of the event loop, once the microtasks queued before it ran. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** A streamed answer once the server started it: its events, and what each adds. */
export interface Events<E> {
  readonly events: AsyncIterable<E>
  /** The deltas an event adds (it also folds the event into the reply). */
  readonly push: (event: E) => ReadonlyArray<ModelPort.ModelDelta>
}

/** How a pump ended: the SDK's iterator finished, or threw. */
export type Ended = { readonly _tag: "Done" } | { readonly _tag: "Threw"; readonly error: unknown }

/**
 * Pumps `opened`'s events into `emit` (deltas only; the caller emits the end) until they end or `signal` is aborted.
 * `onEvent` is called as each event arrives (an idle deadline). Every delta is pushed before the promise resolves;
 * it never rejects.
 */
export const pump = <E>(
  opened: Events<E>,
  emit: StreamEmit.EmitOpsPush<never, ModelPort.StreamPart>,
  signal: AbortSignal,
  onEvent: () => void
): Promise<Ended> => {
  let held: Array<ModelPort.ModelDelta> = []
  let holding = false
  const release = () => {
    holding = false
    if (held.length === 0) return
    const out = held
    held = []
    emit.array(out)
  }
  return (async (): Promise<Ended> => {
    try {
      for await (const event of opened.events) {
        if (signal.aborted) break
        onEvent()
        const deltas = opened.push(event)
        if (deltas.length === 0) continue
        if (holding) {
          for (const d of deltas) held.push(d)
          continue
        }
        emit.array(deltas)
        holding = true
        await nextTurn()
        setImmediate(release)
      }
      return { _tag: "Done" }
    } catch (error) {
      return { _tag: "Threw", error }
    } finally {
      release()
    }
  })()
}
