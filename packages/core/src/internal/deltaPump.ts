/**
 * A provider's streamed answer pushed straight to a `DeltaSink` (the push path of `ModelPort.streamTo`), written once
 * for every adapter: the request is retried until the server starts answering; from then on a plain loop reads the
 * SDK's events and hands each one's deltas to the sink as it arrives, with no Effect work between the server's answer
 * and its first delta, nor per event.
 *
 * Deltas are coalesced: a delta that comes when none is held is pushed at once, and the pump then lets the event loop
 * turn (`setImmediate`) before reading on, so that the consumer's work for it (the kernel keeps it, its readers get it)
 * runs first rather than after the SDK parsed every other event of the same network read. What the SDK yields from then
 * until the end of the next turn is held and pushed together, so a burst costs the consumer one step per turn, not one
 * per delta; a stream whose events come one per turn pushes each at once.
 */
import * as Effect from "effect/Effect"
import { ModelError } from "../Errors.js"
import type { DeltaSink, ModelDelta, ProviderNote } from "../ModelPort.js"
import { type Failure, failure, type RetryPolicy, retrying } from "./retrying.js"

/** Resolves in the next turn of the event loop, once the microtasks queued before it ran. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** How a pump ended: the SDK's iterator finished, or threw. */
type Ended = { readonly _tag: "Done" } | { readonly _tag: "Threw"; readonly error: unknown }

/** A streamed call once the server started answering: its events pumped as deltas, and the reply they fold into. */
export interface Opened<R> {
  /** Reads the events, pushing their deltas to `sink`, until they end or `signal` is aborted; never rejects. */
  readonly pump: (sink: DeltaSink, signal: AbortSignal, onEvent: () => void) => Promise<Ended>
  /** The reply the events folded into, once they ended (or why there is none). */
  readonly reply: () => R | Failure
}

/** Pumps `events` (each folded in by `push`, which returns the deltas it adds) into `sink`; see the module's comment. */
const pump = <E>(
  events: AsyncIterable<E>,
  push: (event: E) => ReadonlyArray<ModelDelta>,
  sink: DeltaSink,
  signal: AbortSignal,
  onEvent: () => void
): Promise<Ended> => {
  let held: Array<ModelDelta> = []
  let holding = false
  // The sink wants no more: nothing more is read.
  let stopped = false
  const release = () => {
    holding = false
    if (held.length === 0) return
    const out = held
    held = []
    if (!sink(out)) stopped = true
  }
  return (async (): Promise<Ended> => {
    try {
      for await (const event of events) {
        if (signal.aborted || stopped) break
        onEvent()

        const deltas = push(event)
        if (deltas.length === 0) continue

        if (holding) {
          for (const d of deltas) held.push(d)
          continue
        }
        if (!sink(deltas)) break
        holding = true
        // The consumer's work for the delta (queued by the sink as a microtask: the reader's fiber) runs before the
        // turn is even asked for: nothing of the pump's stands between the sink and the reader.
        await Promise.resolve()
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

/** A streamed call's events, opened: `push` folds each event in and returns its deltas; `reply` is the fold. */
export const opened = <E, R>(
  events: AsyncIterable<E>,
  push: (event: E) => ReadonlyArray<ModelDelta>,
  reply: () => R | Failure
): Opened<R> => ({ pump: (sink, signal, onEvent) => pump(events, push, sink, signal, onEvent), reply })

/** One streamed call of an adapter. */
export interface Call<R> {
  /** Sends the request; resolves once the server started answering (the SDK's stream object). */
  readonly open: (signal: AbortSignal) => Promise<Opened<R>>
  /** What the SDK threw, as a failure (retryable or not). */
  readonly classify: (e: unknown) => Failure
  readonly policy: RetryPolicy
  /** The deadline: for the answer to start, then between events. */
  readonly timeoutMs: number
  /** Named in a timeout's reason. */
  readonly baseURL: string
}

/**
 * Runs `call`, pushing its deltas to `sink`: retried (as a whole reply is) until the server starts answering; once it
 * answered, a failure ends the call (its deltas are out: a retry would show them twice). One timer per attempt is the
 * deadline: for the answer to start, then between events (a server that stops sending for `timeoutMs` fails the
 * call). Succeeds with the folded reply and the notes of the retries. Interrupted (a budget crossed, a caller gone),
 * the HTTP request is aborted; after a whole answer it is not (its connection goes back to the pool).
 */
export const streamed = <R>(call: Call<R>, sink: DeltaSink): Effect.Effect<{ readonly value: R; readonly notes: ReadonlyArray<ProviderNote> }, ModelError> =>
  Effect.suspend(() => {
    const { baseURL, timeoutMs } = call
    let reading: AbortController | undefined
    let whole = false
    let deadline: ReturnType<typeof setTimeout> | undefined
    // Whether the last attempt's deadline fired (the SDK ends an aborted stream quietly: that is no reply).
    let idle = false
    /**
     * One attempt, as a promise: it rejects when the server does not answer, else resolves once its events ended. An
     * event notes when it came (a clock read, not a timer's reinsertion per event); the timer, when it fires, sleeps on
     * for what is left of the deadline after the last event.
     */
    const attempt = (signal: AbortSignal) => {
      const controller = new AbortController()
      signal.addEventListener("abort", () => controller.abort())
      idle = false
      clearTimeout(deadline)
      let last = performance.now()
      const expire = () => {
        const left = last + timeoutMs - performance.now()
        if (left > 0) return void (deadline = setTimeout(expire, left))
        idle = true
        controller.abort()
      }
      deadline = setTimeout(expire, timeoutMs)
      return call.open(controller.signal).then((events) => {
        reading = controller
        last = performance.now()
        return events.pump(sink, controller.signal, () => void (last = performance.now())).then((end) => {
          clearTimeout(deadline)
          return { events, end }
        })
      })
    }
    const open = Effect.tryPromise({
      try: attempt,
      catch: (e) => (idle ? failure("timeout", `no answer from ${baseURL} within ${timeoutMs} ms`, true) : call.classify(e))
    })
    return Effect.gen(function*() {
      const { notes, value: { end, events } } = yield* Effect.mapError(retrying(open, call.policy), (f) => f.error)
      if (idle) return yield* failure("timeout", `no part of the answer from ${baseURL} within ${timeoutMs} ms`, true).error
      if (end._tag === "Threw") return yield* call.classify(end.error).error
      const folded = events.reply()
      if (isFailure(folded)) return yield* folded.error
      whole = true
      return { value: folded, notes }
    }).pipe(
      Effect.ensuring(Effect.sync(() => {
        clearTimeout(deadline)
        if (!whole) reading?.abort()
      }))
    )
  })

const isFailure = <R>(value: R | Failure): value is Failure =>
  typeof value === "object" && value !== null && "error" in value && value.error instanceof ModelError
