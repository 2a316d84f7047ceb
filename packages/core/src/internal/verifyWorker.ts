/**
 * The verified read's hashing on a worker thread, a page ahead of the replay: the main thread sends a page's events
 * (their fields and payloads' stored text, end to end) and reads the next page while the worker builds each event's
 * chain material and hashes it. The material is \`hash.ts\`'s own code (\`materialBuilder\`, run from its source text).
 * When the page is to be given, the worker is told to stop, and says how many of its first events hash to their stored
 * hash (a counter they share); \`Verify\` makes every other check and hashes itself the events the worker did not reach
 * (or found broken, or of the earlier hash scheme): the worker can only spare work, never a check, and nothing ever
 * waits for it. One worker per process, started by the first long read and always \`unref\`ed (it never keeps a
 * process alive); replaced by the next long read if it dies, not started again if it died before it was ready.
 */
import { availableParallelism } from "node:os"
import { Worker } from "node:worker_threads"
import type { Event } from "../Event.js"
import { storedPayload, WORKER_HASHING } from "./hash.js"

/** A page's state, shared with the worker: how many of its first events hash to theirs, whether to stop, taken, done. */
const HASHED = 0
const STOP = 1
const TAKEN = 2
/** Set by the worker once it is done with the page (all hashed, a hash that differs, or asked to stop). */
const DONE = 3

/**
 * The worker's code (CommonJS, evaluated: it loads the same from the sources under vitest or tsx and from the built
 * `dist`). A page (see `pageOf`): how many of its first events hash to their stored hash, over the material `hash.ts`
 * builds (`WORKER_HASHING`).
 */
const SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
${WORKER_HASHING}
parentPort.on("message", (page) => {
  const { runId, tenantId, texts, firsts, ends, numbers, hashes, key, state } = page
  Atomics.store(state, ${TAKEN}, 1)
  const material = builder(constants.stored, new RegExp(constants.escaped))
  const event = { eventId: "", prevHash: page.prevHash, runId, seq: 0, stepKey: "", tenantId, timestamp: 0, type: "" }
  let n = 0
  let start = 0
  let chunk = 0
  let text = texts[0]
  for (; n < numbers.length / 2 && Atomics.load(state, ${STOP}) === 0; n++) {
    if (chunk + 1 < firsts.length && n === firsts[chunk + 1]) {
      chunk++
      text = texts[chunk]
      start = 0
    }
    const at = n * 4
    event.eventId = text.slice(start, ends[at])
    event.stepKey = text.slice(ends[at], ends[at + 1])
    event.type = text.slice(ends[at + 1], ends[at + 2])
    const payload = text.slice(ends[at + 2], ends[at + 3])
    event.seq = numbers[n * 2]
    event.timestamp = numbers[n * 2 + 1]
    const m = material(event, payload, true)
    const digest = hashOf(m, key)
    const hash = hashes.slice(n * 64, n * 64 + 64)
    if (digest !== hash) break
    event.prevHash = hash
    start = ends[at + 3]
    Atomics.store(state, ${HASHED}, n + 1)
  }
  Atomics.store(state, ${DONE}, 1)
})
Atomics.store(workerData, 0, 1)
parentPort.postMessage("ready")
`

/**
 * A page as the worker takes it: the fields of its events end to end in a few texts (each event's id, step key, type
 * and payload text; `firsts`: the first event of each text, `ends`: where each field ends in its text), their seq and
 * timestamp, their stored hashes end to end. Only the events before the first of another run or tenant, or whose hash
 * is not 64 characters, are sent (`Verify` checks those itself).
 */
interface Page {
  readonly runId: string
  readonly tenantId: string
  readonly prevHash: string
  readonly texts: ReadonlyArray<string>
  readonly firsts: Int32Array
  readonly ends: Int32Array
  readonly numbers: Float64Array
  readonly hashes: string
}

/**
 * The characters of a page's text at which the next event starts another: a page's fields joined into one text
 * (~140 KB for 512 events of an agent's log) went to V8's large-object space, which cost the join four times what
 * texts below its 128 KB threshold do (20 pages: 5.3 against 1.3 ms).
 */
const TEXT_CHARS = 32_768

/** The page of `events` the worker checks; `prevHash`: the hash the first one links to (checked by `Verify`). */
export const pageOf = (events: ReadonlyArray<Event>, prevHash: string, runId: string, tenantId: string): Page => {
  let n = 0
  while (n < events.length && events[n]!.hash.length === 64 && events[n]!.runId === runId && events[n]!.tenantId === tenantId) n++
  const texts: Array<string> = []
  const firsts: Array<number> = []
  let parts: Array<string> = []
  const hashes: Array<string> = new Array(n)
  const ends = new Int32Array(n * 4)
  const numbers = new Float64Array(n * 2)
  let end = 0
  for (let i = 0; i < n; i++) {
    const event = events[i]!
    const payload = storedPayload(event)
    if (end > TEXT_CHARS) {
      texts.push(parts.join(""))
      parts = []
      end = 0
    }
    // A text starts here (not "nothing written yet": an event whose fields are all empty writes nothing).
    if (parts.length === 0) firsts.push(i)
    const at = i * 4
    parts.push(event.eventId, event.stepKey, event.type, payload)
    ends[at] = end += event.eventId.length
    ends[at + 1] = end += event.stepKey.length
    ends[at + 2] = end += event.type.length
    ends[at + 3] = end += payload.length
    numbers[i * 2] = event.seq
    numbers[i * 2 + 1] = event.timestamp
    hashes[i] = event.hash
  }
  if (parts.length > 0) texts.push(parts.join(""))
  return { runId, tenantId, prevHash, texts, firsts: Int32Array.from(firsts), ends, numbers, hashes: hashes.join("") }
}

interface Running {
  readonly worker: Worker
  /** Set (to 1) by the worker once it listens. */
  readonly ready: Int32Array
  dead: boolean
  /** The state of the page sent last (see \`SOURCE\`): whether the worker took it yet. */
  last: Int32Array | undefined
}

let running: Running | undefined
/** Whether long reads use the worker (\`use\`): unless the environment says \`ARTANA_VERIFY_WORKER=0\`. */
let enabled = process.env["ARTANA_VERIFY_WORKER"] !== "0"
/** A worker that died before it was ready is not started again in this process. */
let failed = false
/** Events the worker found hashing to their stored hash, since the process started (tests and benches read it). */
let hashedByWorker = 0

const start = (): Running | undefined => {
  const ready = new Int32Array(new SharedArrayBuffer(4))
  let worker: Worker
  try {
    worker = new Worker(SOURCE, { eval: true, workerData: ready })
  } catch {
    // A worker that cannot be made (a permission model, no threads) is not tried again in this process.
    failed = true
    return undefined
  }
  const self: Running = { worker, ready, dead: false, last: undefined }
  // Nothing waits for the worker: it never keeps the process alive.
  worker.unref()
  const stopped = () => {
    if (Atomics.load(ready, 0) !== 1) failed = true
    self.dead = true
    if (running === self) running = undefined
  }
  worker.on("error", stopped)
  worker.on("exit", stopped)
  return self
}

const parallel = availableParallelism() > 1

/**
 * Whether a read of this many events is to use the worker: when it is longer than its first page (a shorter one would
 * not gain what sending its page costs), on a machine with more than one core.
 */
export const worthIt = (events: number, firstPage: number): boolean => enabled && !failed && parallel && events > firstPage

/** Whether long reads use the worker from now on (tests and benches compare both ways; on by default). */
export const use = (on: boolean): void => {
  enabled = on
}

/**
 * Starts the worker if it is not running, and resolves once it is ready (true), or died (false). The worker keeps the
 * process alive while this waits. Long reads need not call it (they start the worker, and hash on the main thread
 * until it is ready); tests do, to read through it from the first page.
 */
export const ready = (): Promise<boolean> => {
  if (!enabled || failed || !parallel) return Promise.resolve(false)
  const self = running ?? (running = start())
  if (self === undefined || self.dead) return Promise.resolve(false)
  if (Atomics.load(self.ready, 0) === 1) return Promise.resolve(true)
  const { worker } = self
  worker.ref()
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => () => {
      worker.off("message", onReady)
      worker.off("exit", onExit)
      worker.unref()
      resolve(ok)
    }
    const onReady = done(true)
    const onExit = done(false)
    worker.on("message", onReady)
    worker.on("exit", onExit)
  })
}

/** Events the worker found hashing to their stored hash since the process started. */
export const hashedSoFar = (): number => hashedByWorker

/** How many of a page's first events hash to their stored hash; the worker stops checking the page once asked. */
export type Hashed = () => number

export const none: Hashed = () => 0

/**
 * Sends a page to the worker; returns what tells, when the page is to be given, how many of its first events the
 * worker found hashing to their stored hash (and stops it there). Nothing waits for the worker: the events it did not
 * reach are hashed by \`Verify\` on the main thread. None when the worker is not ready (it is started for the pages
 * after), is still to take the page sent before (at most one page waits for it), or died.
 */
export const submit = (page: Page, auditKey: string | undefined): Hashed => {
  // A read already going when its worker died before it was ready does not start one for each of its pages.
  if (running === undefined && failed) return none
  const self = running ?? (running = start())
  if (self === undefined || self.dead || Atomics.load(self.ready, 0) !== 1 || page.ends.length === 0) return none
  if (self.last !== undefined && Atomics.load(self.last, TAKEN) === 0) return none
  const state = new Int32Array(new SharedArrayBuffer(16))
  try {
    self.worker.postMessage({ ...page, state, key: auditKey })
  } catch {
    return none
  }
  self.last = state
  return () => {
    Atomics.store(state, STOP, 1)
    const hashed = Atomics.load(state, HASHED)
    hashedByWorker += hashed
    return hashed
  }
}

/**
 * Resolves once the worker is done with the last page sent to it (tests: a read that waits for it between two pages
 * knows the worker hashed that page as far as it could, whatever the scheduling). At once when no page waits for it.
 */
export const idle = async (): Promise<void> => {
  const self = running
  const state = self?.last
  if (self === undefined || state === undefined) return
  self.worker.ref()
  try {
    while (!self.dead && Atomics.load(state, DONE) === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  } finally {
    self.worker.unref()
  }
}

/** Stops the worker (tests; a process needs not: the worker never keeps it alive). */
export const shutdown = (): Promise<void> => {
  const self = running
  if (self === undefined) return Promise.resolve()
  self.dead = true
  running = undefined
  return self.worker.terminate().then(() => undefined)
}
