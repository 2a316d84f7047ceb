/**
 * A SQL store's long reads on a worker thread that owns a read-only connection of its own (`SqlEventStore.ReadAhead`,
 * which `@artana/store-sqlite` provides for a database file): a page of a run's events is read there and its values
 * made the text the store's read would make (`sqlEventRead.ts`); the page is sent, then its events are hashed over the
 * chain's material (`hash.ts`'s own code, from its source text) until the main thread takes it. The main thread asks
 * for the next page as soon as a page comes (its seqs and hashes say where the read stands), so the worker reads it
 * while the main thread parses and replays the one before; a read asked for comes before any hashing (the worker hashes
 * the pages sent, oldest first, only while no message waits). The main thread then only slices the page's fields out
 * of a few texts, parses the payloads, makes the events and hashes what the worker did not reach: the driver's rows and
 * most of the hashing leave it.
 *
 * The worker only spares work, never a check: a page it could not read (not open yet, died, an error of the driver) is
 * read by the main thread as before, and `Verify` makes every check but the hashes the worker vouched for. It reads
 * only what is committed (its own connection): a read inside a transaction is never sent to it. One worker per process,
 * started by the first store that reads ahead, with a connection per store opened on its first long read (nothing waits
 * for either: pages are read on the main thread until then) and closed, awaited, when the store's scope closes; always
 * `unref`ed but while a read or a close waits for it.
 */
import { Worker } from "node:worker_threads"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { WORKER_HASHING } from "./hash.js"
import type { RequestAhead } from "./sqlEventRead.js"

/**
 * What opens the worker's connection: the source text of a self-contained function (CommonJS: it may `require`) that
 * takes `config` and returns `{ rows(text, params): Array<Array<unknown>>, close(): void }`, rows as arrays of values.
 */
export interface Opener {
  readonly source: string
  readonly config: unknown
}

/**
 * A page as the worker gives it: its events' fields end to end in a few texts (for each event: id, type, step key,
 * payload text, prev hash, hash; `firsts`: the first event of each text, `ends`: where each field ends in its text),
 * their seq and timestamp (`numbers`), and the rows the statement gave (`rows`): the worker makes `count` events of
 * them, and stops before a row whose values are not what it reads (a value stored in another form: the main thread
 * reads from there). `hashed`: how many of its first events hash to their stored hash, as far as the worker got (it
 * hashes the page after sending it, and stops when asked: see `Hashed`).
 */
export interface Page {
  readonly texts: ReadonlyArray<string>
  readonly firsts: Int32Array
  readonly ends: Int32Array
  readonly numbers: Float64Array
  readonly count: number
  readonly rows: number
  readonly hashed: Hashed
}

/** Stops the worker's hashing of a page and says how many of its first events hash to their stored hash. */
export type Hashed = () => number

/**
 * Pages the worker keeps to hash at most (each holds its events' fields): two a read at most (the page given next and
 * the one after it), so four reads at once; beyond that the oldest is dropped unhashed.
 */
const QUEUED = 8

/** Fields per event in `Page.ends`. */
export const FIELDS = 6

/** A page asked for: its page, or undefined when the worker did not read it (the main thread reads it then). */
export type Pending = Effect.Effect<Page | undefined>

/** A store's read-ahead worker. */
export interface ReadAhead {
  /**
   * Asks for the rows of `text` with `params` (a page of a run's events, the store's select list: its run and tenant
   * first), made text and hashed from `prevHash` (the hash of the event before the page) with `auditKey`. Undefined
   * when the worker cannot take it now (starting, died, the store's connection there not open): nothing is sent.
   */
  readonly request: (text: string, params: ReadonlyArray<unknown>, prevHash: string, auditKey: string | undefined) => Pending | undefined
  /**
   * Starts the worker and opens the store's connection there if need be; resolves once it is open (true) or could not
   * be (false). Reads need not call it (they read on the main thread until then); tests do, to read through it.
   */
  readonly ready: () => Promise<boolean>
  /**
   * Whether the worker may read the store's pages (now or once started): not when read-ahead is off, no worker can run
   * in this process, the store's connection could not be opened there, or the store closed.
   */
  readonly usable: () => boolean
}

/** A page's state, shared with the worker: how many of its first events hash to theirs, whether to stop. */
const HASHED = 0
const STOP = 1

/** A store's connection in the worker: not open yet, open, or not to be opened (its opener failed). */
const OPENING = 0
const OPEN = 1
const REFUSED = 2

/**
 * The worker's code (CommonJS, evaluated). Messages: `open` (a store's connection, by its opener's source text; its
 * state set in `opened`), `close`, `read`. A read: the rows, each made the texts `sqlEventRead` would make of it (a
 * packed hash or id's upper-case hex lower-cased, an id's dashes; a value stored as text after its `~` mark; a NULL
 * prev_hash the hash before it; a row with a value of any other form ends the page's events), sent; then the events
 * hashed, while they hash to their stored hash and the main thread has not taken the page (`state`).
 */
const SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
${WORKER_HASHING}
const material = builder(constants.stored, new RegExp(constants.escaped))
const TEXT_CHARS = 32768
const uuid = (v) => {
  if (typeof v !== "string") return undefined
  if (v.charCodeAt(0) === 126) return v.slice(1)
  const h = v.toLowerCase()
  return h.length === 32 ? h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20) : h
}
const digest = (v) => typeof v !== "string" ? undefined : v.charCodeAt(0) === 126 ? v.slice(1) : v.toLowerCase()
const readers = new Map()
const read = ({ store, id, text, params, prevHash, key, state }) => {
  const reader = readers.get(store)
  let rows
  try {
    if (reader === undefined) throw new Error("no connection")
    rows = reader.rows(text, params)
  } catch (error) {
    parentPort.postMessage({ id, error: String(error) })
    return
  }
  const texts = []
  const firsts = []
  const ends = new Int32Array(rows.length * ${FIELDS})
  const numbers = new Float64Array(rows.length * 2)
  const fields = []
  let parts = []
  let end = 0
  let count = 0
  let before = prevHash
  for (; count < rows.length; count++) {
    const row = rows[count]
    const seq = row[0]
    const timestamp = row[2]
    const type = row[3]
    const stepKey = row[4]
    const payload = row[5]
    const eventId = uuid(row[1])
    const hash = digest(row[7])
    const prev = row[6] === null ? before : digest(row[6])
    if (typeof seq !== "number" || typeof timestamp !== "number" || typeof type !== "string" || typeof stepKey !== "string" ||
      typeof payload !== "string" || eventId === undefined || hash === undefined || prev === undefined) break
    if (end > TEXT_CHARS) {
      texts.push(parts.join(""))
      parts = []
      end = 0
    }
    if (parts.length === 0) firsts.push(count)
    const at = count * ${FIELDS}
    parts.push(eventId, type, stepKey, payload, prev, hash)
    fields.push(eventId, type, stepKey, payload, prev, hash)
    ends[at] = end += eventId.length
    ends[at + 1] = end += type.length
    ends[at + 2] = end += stepKey.length
    ends[at + 3] = end += payload.length
    ends[at + 4] = end += prev.length
    ends[at + 5] = end += hash.length
    numbers[count * 2] = seq
    numbers[count * 2 + 1] = timestamp
    before = hash
  }
  if (parts.length > 0) texts.push(parts.join(""))
  parentPort.postMessage({ id, page: { texts, firsts: Int32Array.from(firsts), ends, numbers, count, rows: rows.length } })
  const event = { eventId: "", prevHash: "", runId: params[0], seq: 0, stepKey: "", tenantId: params[1], timestamp: 0, type: "" }
  // The pages taken (or all hashed) leave the queue whatever waits; at most QUEUED stay, the oldest dropped (a page
  // never taken, of a read given up, is not hashed for ever; the main thread hashes what the worker did not).
  queue = queue.filter((page) => page.n < page.count && Atomics.load(page.state, ${STOP}) === 0)
  if (queue.length >= ${QUEUED}) queue.shift()
  queue.push({ fields, numbers, count, key, state, event, n: 0 })
}
// Whether the next event of a page sent hashes to its stored hash (then counted in its state) or not.
const hashNext = (page) => {
  const { fields, numbers, event, n } = page
  const at = n * ${FIELDS}
  event.eventId = fields[at]
  event.type = fields[at + 1]
  event.stepKey = fields[at + 2]
  event.prevHash = fields[at + 4]
  event.seq = numbers[n * 2]
  event.timestamp = numbers[n * 2 + 1]
  const hash = fields[at + 5]
  if (hash.length !== 64 || event.prevHash.length !== 64) return false
  if (hashOf(material(event, fields[at + 3], true), page.key) !== hash) return false
  page.n = n + 1
  Atomics.store(page.state, ${HASHED}, page.n)
  return true
}
// Hashes the pages sent, oldest first, each until it is all hashed, a hash differs or the main thread took it; never
// while a message waits (the main thread counts what it sends in \`inbox\`, this thread what it began): a read waited
// for comes before the hashes of pages read before it.
const inbox = new Int32Array(workerData.inbox)
let begun = 0 // as \`inbox\`, an int32 that wraps
const hashQueued = () => {
  while (queue.length > 0 && Atomics.load(inbox, 0) === begun) {
    const page = queue[0]
    if (page.n >= page.count || Atomics.load(page.state, ${STOP}) !== 0 || !hashNext(page)) queue.shift()
  }
}
let queue = []
const handle = (message) => {
  if (message.kind === "read") return read(message)
  if (message.kind === "open") {
    try {
      readers.set(message.store, new Function("require", "return (" + message.source + ")")(require)(message.config))
      Atomics.store(message.opened, 0, ${OPEN})
    } catch {
      Atomics.store(message.opened, 0, ${REFUSED})
    }
    return
  }
  if (message.kind === "close") {
    const reader = readers.get(message.store)
    readers.delete(message.store)
    try {
      if (reader !== undefined) reader.close()
    } catch {}
    parentPort.postMessage({ id: message.id })
  }
}
parentPort.on("message", (message) => {
  begun = (begun + 1) | 0
  handle(message)
  hashQueued()
})
parentPort.postMessage({ id: -1 })
`

interface Running {
  readonly worker: Worker
  /** Messages sent to the worker, counted before each is sent: it hashes only while it began them all. */
  readonly inbox: Int32Array
  dead: boolean
  /** Whether the worker ran its code (it says so first thing): one that died before is not started again. */
  started: boolean
  /** How many fibers wait for a page: while any does, the worker keeps the process alive (as any read would). */
  awaiting: number
  /** The requests sent and not answered, by id. */
  readonly waiting: Map<number, (page: Page | undefined) => void>
}

/** The answer of the worker to a read: its page (without `hashed`), or why it could not read it. */
interface Answer {
  readonly id: number
  readonly page?: Omit<Page, "hashed">
  readonly error?: string
}

const isAnswer = (message: unknown): message is Answer =>
  typeof message === "object" && message !== null && "id" in message && typeof message.id === "number"

/**
 * The worker's young generation, in MB (V8 lets a worker's grow to 32 MB, as the main thread's): a long resume's pages
 * grew it to its most. At 8 MB a 100,000-step resume peaked ~14 MB lower (medians of 5 alternated runs: 230 against
 * 244 MB), and replays cost no more wall time that the runs could tell (replay / floor 0.98 and 1.00 against 0.99 and
 * 1.03, two alternated 8-round runs of `bench/kernel/replayWorker.ts`). See bench/scale/README.md.
 */
const YOUNG_GENERATION_MB = 8

/** The process's worker (every store's connection is there), started by the first store that reads ahead. */
let running: Running | undefined
/** Set when a worker could not be made, or died before it ran: no store of this process tries again. */
let noWorker = false
/** Whether stores read ahead on the worker (`use`): on unless the environment says \`ARTANA_READ_AHEAD=0\`. */
let enabled = process.env["ARTANA_READ_AHEAD"] !== "0"
/** Pages the worker read since the process started (tests and benches read it). */
let pagesRead = 0
/** Events the worker found hashing to their stored hash, in the pages taken since the process started. */
let hashedByWorker = 0
let ids = 0
let stores = 0

/** Whether stores read ahead on the worker from now on (tests and benches compare both ways; on by default). */
export const use = (on: boolean): void => {
  enabled = on
}

/** Pages the read-ahead worker read since the process started. */
export const pagesSoFar = (): number => pagesRead

/** Events of the pages taken since the process started that the worker hashed (the main thread hashed the rest). */
export const hashedSoFar = (): number => hashedByWorker

/** Ends the read-ahead worker, as a worker that died would (tests: reads go on on the main thread). */
export const terminateAll = (): Promise<void> => (running === undefined ? Promise.resolve() : running.worker.terminate().then(() => undefined))

const stop = (self: Running) => {
  self.dead = true
  if (running === self) running = undefined
  if (!self.started) noWorker = true
  for (const answer of self.waiting.values()) answer(undefined)
  self.waiting.clear()
}

const start = (): Running | undefined => {
  let worker: Worker
  const inbox = new Int32Array(new SharedArrayBuffer(4))
  try {
    worker = new Worker(SOURCE, { eval: true, workerData: { inbox: inbox.buffer }, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } })
  } catch {
    // A worker that cannot be made (a permission model, no threads) is not tried again in this process.
    noWorker = true
    return undefined
  }
  const self: Running = { worker, inbox, dead: false, started: false, awaiting: 0, waiting: new Map() }
  // Nothing waits for the worker unless a read waits for its page: it never keeps the process alive otherwise.
  worker.unref()
  worker.on("message", (message: unknown) => {
    if (!isAnswer(message)) return
    self.started = true
    const answer = self.waiting.get(message.id)
    if (answer === undefined) return
    self.waiting.delete(message.id)
    if (message.page === undefined) return answer(undefined)
    pagesRead++
    answer({ ...message.page, hashed: () => 0 })
  })
  worker.on("error", () => stop(self))
  worker.on("exit", () => stop(self))
  return self
}

/** Sends `message` to the worker, counted first (see `SOURCE`'s `hashQueued`); throws as `postMessage` does. */
const send = (self: Running, message: unknown): void => {
  Atomics.add(self.inbox, 0, 1)
  try {
    self.worker.postMessage(message)
  } catch (cause) {
    Atomics.sub(self.inbox, 0, 1)
    throw cause
  }
}

/**
 * One more (`by` 1) or one fewer (-1) fiber waits for the worker: while any does, it keeps the process alive (as any
 * read or close would); else it never does.
 */
const waits = (self: Running, by: number) => {
  self.awaiting += by
  if (self.awaiting === 1 && by > 0) self.worker.ref()
  if (self.awaiting === 0) self.worker.unref()
}

/** The worker, started if none runs; undefined when none can run. */
const worker = (): Running | undefined => {
  if (!enabled || noWorker) return undefined
  const self = running ?? (running = start())
  return self === undefined || self.dead ? undefined : self
}

/**
 * A store's read-ahead over the connection `opener` opens in the process's worker (started by the first store that
 * reads ahead), closed when `scope` closes. Where threads cannot be made (a permission model), every page is read on
 * the main thread.
 */
export const make = (opener: Opener): Effect.Effect<ReadAhead, never, Scope.Scope> =>
  Effect.gen(function*() {
    const store = stores++
    // The worker the store's connection was opened in, and that connection's state (`OPENING`, `OPEN`, `REFUSED`).
    let openedIn: Running | undefined
    let opened = new Int32Array(new SharedArrayBuffer(4))
    let closed = false
    /** The worker, once the store's connection is open there (opened on first use: nothing waits for it). */
    const open = (): Running | undefined => {
      if (closed) return undefined
      const self = worker()
      if (self === undefined) return undefined
      if (openedIn !== self) {
        openedIn = self
        opened = new Int32Array(new SharedArrayBuffer(4))
        try {
          send(self, { kind: "open", store, source: opener.source, config: opener.config, opened })
        } catch {
          return undefined
        }
      }
      return Atomics.load(opened, 0) === OPEN ? self : undefined
    }
    // The store's connection there is closed before the store's own (this finalizer runs first): SQLite checkpoints a
    // WAL file into the database, and removes it, only when the last connection to the file closes, so a close that
    // did not wait left the last commits in the WAL file.
    yield* Effect.addFinalizer(() =>
      Effect.async<void>((done) => {
        closed = true
        const self = openedIn
        if (self === undefined || self.dead) return done(Effect.void)
        const id = ids++
        self.waiting.set(id, () => {
          waits(self, -1)
          done(Effect.void)
        })
        waits(self, 1)
        try {
          send(self, { kind: "close", store, id })
        } catch {
          self.waiting.delete(id)
          waits(self, -1)
          done(Effect.void)
        }
      })
    )
    const request: ReadAhead["request"] = (text, params, prevHash, auditKey) => {
      const self = open()
      if (self === undefined) return undefined
      const id = ids++
      const state = new Int32Array(new SharedArrayBuffer(8))
      try {
        send(self, { kind: "read", store, id, text, params, prevHash, key: auditKey, state })
      } catch {
        return undefined
      }
      // Asked for when the page is given: stops the worker's hashing there.
      let vouched: number | undefined
      const hashed: Hashed = () => {
        Atomics.store(state, STOP, 1)
        if (vouched === undefined) hashedByWorker += vouched = Atomics.load(state, HASHED)
        return vouched
      }
      // The answer may come before anything waits for it: kept here until it is asked for.
      let answered = false
      let page: Page | undefined
      let resume: ((page: Page | undefined) => void) | undefined
      self.waiting.set(id, (got) => {
        answered = true
        page = got === undefined ? undefined : { ...got, hashed }
        if (resume !== undefined) resume(page)
      })
      return Effect.async<Page | undefined>((done) => {
        if (answered) return done(Effect.succeed(page))
        waits(self, 1)
        resume = (got) => {
          resume = undefined
          waits(self, -1)
          done(Effect.succeed(got))
        }
        return Effect.sync(() => {
          if (resume === undefined) return
          resume = undefined
          waits(self, -1)
          // Not taken: the worker need not hash it.
          Atomics.store(state, STOP, 1)
        })
      })
    }
    const ready = (): Promise<boolean> => {
      if (open() !== undefined) return Promise.resolve(true)
      const self = openedIn
      if (self === undefined || closed) return Promise.resolve(false)
      // Polled: the worker says the connection is open through shared memory only.
      waits(self, 1)
      return new Promise<boolean>((resolve) => {
        const poll = () => {
          const state = Atomics.load(opened, 0)
          // Open, and the worker's word that it runs (a message, read on this thread) heard too.
          if ((state === OPENING || (state === OPEN && !self.started)) && !self.dead) return void setTimeout(poll, 5)
          waits(self, -1)
          resolve(state === OPEN && !self.dead)
        }
        poll()
      })
    }
    const usable = () => enabled && !noWorker && !closed && !(openedIn !== undefined && !openedIn.dead && Atomics.load(opened, 0) === REFUSED)
    return { request, ready, usable }
  })

/** Each store's read-ahead (see `attach`), by the store's own `readEvents`. */
const aheads = new WeakMap<object, RequestAhead>()

/**
 * Gives the store `service` its read-ahead, which `verifiedPages` uses for a long read. Kept by the store's own
 * `readEvents`, which the read-ahead stands in for: a store that wraps this one and keeps its reads (`{ ...store,
 * append }`, to time or notify its appends) keeps it; one with a `readEvents` of its own (to trace or change its reads)
 * has none: its reads go through its own `readEvents`, never around it.
 */
export const attach = <S extends { readonly readEvents: object }>(service: S, ahead: RequestAhead): S => {
  aheads.set(service.readEvents, ahead)
  return service
}

/** The read-ahead of `store`, if it has one (see `attach`). */
export const aheadOf = (store: { readonly readEvents: object }): RequestAhead | undefined => aheads.get(store.readEvents)
