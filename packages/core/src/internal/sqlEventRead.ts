/**
 * The read side of the SQL event store: a run's events, read as value arrays and decoded into `Event`s whose chain
 * (each event's prev_hash) is completed from the row before (see `eventValues`). Both dialects select a packed hash or
 * id as text made in SQL (see `eventColumnList`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import { RunNotFound, type StoreError } from "../Errors.js"
import { decodeStoredPayload, type Event, EVENT_TYPES } from "../Event.js"
import { storeError } from "../SqlErrors.js"
import { GENESIS_HASH, StoredEvent } from "./hash.js"
import * as Lazy from "./lazyPayload.js"
import type { Tables } from "./sqlAppend.js"
import * as Codec from "./sqlCodec.js"
import * as ReadWorker from "./readWorker.js"
import { span } from "./tracing.js"
import { CorruptRow, numberValue, textValue, toNumber, unpacked } from "./sqlRows.js"

/**
 * PostgreSQL's `readEvents` gives a stored value that is not packed (not 32 or 16 bytes) as this prefix and its bytes
 * in hex: a packed one is plain hex, so the prefix (a backslash, which hex has not) tells them apart.
 */
const PG_BYTES = "\\x"
const PG_BYTES_SQL = `'${PG_BYTES}'`

/** A hash or id `readEvents` selected (see `eventColumnList`), as `sqlCodec.unpack` reads it. */
const selected = (kind: typeof Codec.HASH, value: unknown, pg: boolean): unknown =>
  !pg ? sqliteText(kind, value) : typeof value === "string" && value.startsWith(PG_BYTES) ? Buffer.from(value.slice(PG_BYTES.length), "hex") : value

/**
 * The select list of `readEvents`, in order: seq, event_id, timestamp, type, step_key, payload, prev_hash, hash. Replay
 * reads them as value arrays (`sql.values`): the driver builds no object with named keys per row, which is a third of
 * a 10,000-event read on SQLite. Both dialects give a packed hash or id back as text made in SQL (`hex`, `encode`),
 * and anything else as bytes that `sqlCodec.unpack` reads (SQLite: as stored, which may be text). SQLite's driver
 * would make a Buffer of each blob (three a row, each its own allocation, which the garbage collector then tracks),
 * and a read of 10,000 events spent a third of its time collecting them; PostgreSQL sends bytea as hex text anyway,
 * which its driver would parse into a Buffer for the store to turn back into hex.
 */
const eventColumnList = (dialect: "pg" | "sqlite"): string => {
  if (dialect === "pg") {
    // Packed values as their text, anything else as `PG_BYTES` and its bytes in hex.
    const other = (c: string) => `${PG_BYTES_SQL} || encode(${c}, 'hex')`
    const hash = (c: string) => `CASE WHEN octet_length(${c}) = 32 THEN encode(${c}, 'hex') ELSE ${other(c)} END`
    const part = (from: number, length: number) => `substr(encode(event_id, 'hex'), ${from}, ${length})`
    const uuid = `CASE WHEN octet_length(event_id) = 16 THEN ${part(1, 8)} || '-' || ${part(9, 4)} || '-' || ${part(13, 4)} || '-' || ${
      part(17, 4)
    } || '-' || ${part(21, 12)} ELSE ${other("event_id")} END`
    // No type column since migration 12: the event's type is its payload's `_tag` (see `typeOf`).
    return `seq, ${uuid}, timestamp, NULL, step_key, payload, ${hash("prev_hash")}, ${hash("hash")}`
  }
  // A packed value as its bare `hex` (upper case: `sqliteText` writes it as `unpack` would), stored text as
  // `SQLITE_TEXT` and the text, any other blob as it is. Lower-casing and the UUID's dashes in SQL (five `substr`s) cost
  // a 10,000-event read more than the rest of its SQL.
  const packed = (c: string, bytes: number) =>
    `CASE WHEN typeof(${c}) = 'blob' AND length(${c}) = ${bytes} THEN hex(${c}) WHEN typeof(${c}) = 'text' THEN '${SQLITE_TEXT}' || ${c} ELSE ${c} END`
  return `seq, ${packed("event_id", Codec.UUID.bytes)}, timestamp, type, step_key, payload, ${packed("prev_hash", Codec.HASH.bytes)}, ${
    packed("hash", Codec.HASH.bytes)
  }`
}

/** The mark SQLite's `readEvents` puts before a value stored as text (upper-case hex, a packed value's, has none). */
const SQLITE_TEXT = "~"

/** A hash or id SQLite's `readEvents` selected (see `eventColumnList`), as `sqlCodec.unpack` reads it. */
const sqliteText = (kind: typeof Codec.HASH, value: unknown): unknown => {
  if (typeof value !== "string") return value
  if (value.startsWith(SQLITE_TEXT)) return value.slice(SQLITE_TEXT.length)
  const hex = value.toLowerCase()
  if (kind !== Codec.UUID) return hex
  // Joined, not concatenated: a rope of nine parts would be flattened (copied) by every later use (the chain's hash).
  // From one array, refilled: no array per row.
  uuidParts[0] = hex.slice(0, 8)
  uuidParts[1] = hex.slice(8, 12)
  uuidParts[2] = hex.slice(12, 16)
  uuidParts[3] = hex.slice(16, 20)
  uuidParts[4] = hex.slice(20)
  return uuidParts.join("-")
}

/** The five groups of a UUID's digits, `sqliteText`'s scratch (filled and joined within one call). */
const uuidParts: Array<string> = ["", "", "", "", ""]

/**
 * The hash a row stores, as text (a read keeps it to complete the next row's prev_hash, see `eventFromValues`).
 */
const hashOf = (row: ReadonlyArray<unknown>, pg: boolean): string => unpacked(Codec.HASH, selected(Codec.HASH, row[7], pg), "hash")

/** The prev_hash a row stores, as text; NULL stands for `previousHash`, the row before's hash (see `eventValues`). */
const prevHashOf = (row: ReadonlyArray<unknown>, previousHash: string, pg: boolean): string =>
  row[6] === null ? previousHash : unpacked(Codec.HASH, selected(Codec.HASH, row[6], pg), "prev_hash")

/** The type of an event PostgreSQL stores (migration 12): its payload's `_tag`, which an append checks is its type. */
const typeOf = (json: unknown): string => {
  const tag = typeof json === "object" && json !== null && "_tag" in json ? json._tag : undefined
  if (typeof tag !== "string") throw new CorruptRow("payload", "no _tag (the event's type)")
  return tag
}

/**
 * An event from its row. `previousHash` is the hash of the run's row before it (the genesis hash before the first):
 * a NULL prev_hash stands for it (see `eventValues`). `lazy` (a replay's read on SQLite, whose rows name their type): a
 * `ModelRequested` written as the kernel writes it keeps its stored text only (`lazyPayload.ts`).
 */
const eventFromValues = (runId: string, tenantId: string, row: ReadonlyArray<unknown>, previousHash: string, pg: boolean, lazy: boolean): Event =>
  eventOf(
    unpacked(Codec.UUID, selected(Codec.UUID, row[1], pg), "event_id"),
    runId,
    tenantId,
    numberValue(row[0], "seq"),
    numberValue(row[2], "timestamp"),
    pg ? undefined : textValue(row[3], "type"),
    textValue(row[4], "step_key"),
    textValue(row[5], "payload"),
    prevHashOf(row, previousHash, pg),
    hashOf(row, pg),
    lazy
  )

/**
 * An event from its values, as stored: `type` undefined (PostgreSQL, migration 12) is its payload's `_tag`. The payload
 * text is parsed and guarded (`decodeStoredPayload`), or, `lazy`, a `ModelRequested` written as the kernel writes it
 * keeps its stored text only (`lazyPayload.ts`).
 */
const eventOf = (
  eventId: string,
  runId: string,
  tenantId: string,
  seq: number,
  timestamp: number,
  storedType: string | undefined,
  stepKey: string,
  source: string,
  prevHash: string,
  hash: string,
  lazy: boolean
): Event => {
  if (lazy && storedType === Lazy.LAZY_TYPE && source.startsWith(Lazy.LAZY_PREFIX)) {
    return new Lazy.LazyRequested(eventId, runId, tenantId, seq, timestamp, stepKey, prevHash, hash, source)
  }
  let json: unknown
  try {
    json = JSON.parse(source)
  } catch (cause) {
    throw new CorruptRow("payload", Lazy.notJson(cause))
  }
  const type = storedType ?? typeOf(json)
  if (!EVENT_TYPES.has(type)) throw new CorruptRow("type", `unknown event type ${JSON.stringify(type)}`)
  const decoded = decodeStoredPayload(type, json)
  if (Either.isLeft(decoded)) throw new CorruptRow("payload", decoded.left)
  // The stored text goes with the event: the chain covers the bytes as stored, so a field added to the stored payload,
  // which decoding drops, still breaks it.
  return new StoredEvent(eventId, runId, tenantId, seq, timestamp, type, stepKey, decoded.right, prevHash, hash, source)
}

/**
 * The events of a page the read-ahead worker read (`readWorker.ts`), its `count` first rows: their fields sliced out
 * of the page's texts, each made into its event as `readEvents` makes it from its row. A row that does not decode fails
 * as in `readEvents`.
 */
export const eventsOfPage = (runId: string, tenantId: string, page: ReadWorker.Page, lazy: boolean): Effect.Effect<Array<Event>, StoreError> =>
  Effect.suspend(() => {
    const out = new Array<Event>(page.count)
    const { ends, firsts, numbers, texts } = page
    let chunk = -1
    let text = ""
    let start = 0
    let n = 0
    try {
      for (; n < page.count; n++) {
        if (chunk + 1 < firsts.length && n === firsts[chunk + 1]) {
          chunk++
          text = texts[chunk]!
          start = 0
        }
        const at = n * ReadWorker.FIELDS
        const eventId = text.slice(start, ends[at])
        const type = text.slice(ends[at]!, ends[at + 1])
        const stepKey = text.slice(ends[at + 1]!, ends[at + 2])
        const source = text.slice(ends[at + 2]!, ends[at + 3])
        const prevHash = text.slice(ends[at + 3]!, ends[at + 4])
        start = ends[at + 5]!
        const hash = text.slice(ends[at + 4]!, start)
        out[n] = eventOf(eventId, runId, tenantId, numbers[n * 2]!, numbers[n * 2 + 1]!, type, stepKey, source, prevHash, hash, lazy)
      }
    } catch (cause) {
      if (!(cause instanceof CorruptRow)) return Effect.die(cause)
      return Effect.fail(Lazy.corruptRow(runId, numbers[n * 2], cause.column, cause.reason))
    }
    return Effect.succeed(out)
  })

/**
 * A dialect's own read (`SqlEventStore.ReadDialect`): runs the read-only statement `text` (`?` placeholders) with
 * `params`, on the driver's own prepared statement, and gives its rows as arrays of values. `inTransaction`: the
 * caller's transaction holds the connection (the read runs in it).
 */
export type ReadValues = (
  text: string,
  params: ReadonlyArray<unknown>,
  inTransaction: boolean
) => Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>

/**
 * The statement of a page on SQLite, for a `ReadValues`: run id, tenant id, first seq, limit (-1: none, which SQLite
 * reads as no limit).
 */
const sqlitePageText = (t: Tables): string =>
  `SELECT ${eventColumnList("sqlite")} FROM ${t.events} WHERE run_id = ? AND tenant_id = ? AND seq >= ? ORDER BY seq LIMIT ?`

/**
 * `readEvents` of the store on `sql`'s tables `t`. With `values` (a SQLite store package's own read) its pages run on
 * the driver's prepared statement: through `SqlClient` each page cost a span, a compile, a cache lookup and a few fibers.
 */
export const make = (sql: SqlClient.SqlClient, t: Tables, values?: ReadValues) => {
  const runs = sql(t.runs)
  const events = sql(t.events)
  const runExists = (tenantId: string, runId: string) =>
    Effect.map(
      sql`SELECT 1 AS found FROM ${runs} WHERE run_id = ${runId} AND tenant_id = ${tenantId}`,
      (rows) => rows.length > 0
    )

  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const eventColumns = sql.literal(eventColumnList(pg ? "pg" : "sqlite"))
  // PostgreSQL keys events by the run's surrogate key (migration 12), found by the run's own key.
  const ofRun = (tenantId: string, runId: string) =>
    pg ? sql`run_key = (SELECT run_key FROM ${runs} WHERE run_id = ${runId} AND tenant_id = ${tenantId})` : sql`run_id = ${runId} AND tenant_id = ${tenantId}`
  const pageText = values === undefined || pg ? undefined : sqlitePageText(t)
  /** The rows of a page from seq `from`, `limit` of them at most (all when undefined). */
  const select = (tenantId: string, runId: string, from: number, limit: number | undefined): Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError> => {
    if (values !== undefined && pageText !== undefined) {
      return Effect.contextWithEffect((context) =>
        values(pageText, [runId, tenantId, from, limit ?? -1], Context.getOption(context, SqlClient.TransactionConnection)._tag === "Some")
      )
    }
    const page = limit === undefined ? sql`` : sql`LIMIT ${limit}`
    return sql`SELECT ${eventColumns} FROM ${events} WHERE ${ofRun(tenantId, runId)} AND seq >= ${from} ORDER BY seq ${page}`.values
  }
  // A page from seq N > 1 reads the row before it too: a NULL prev_hash is that row's hash.
  const readEvents = (tenantId: string, runId: string, fromSeq = 1, limit?: number): Effect.Effect<ReadonlyArray<Event>, RunNotFound | StoreError> =>
    Effect.gen(function*() {
      const from = Math.max(1, fromSeq)
      const before = from > 1 ? 1 : 0
      const rows = yield* select(tenantId, runId, from - before, limit === undefined ? undefined : Math.max(0, Math.floor(limit)) + before)
      const lazy = !pg && (yield* FiberRef.get(Lazy.replayRead))
      return yield* Effect.suspend(() => {
        const out: Array<Event> = []
        let previousHash = GENESIS_HASH
        let i = 0
        let row: ReadonlyArray<unknown> | undefined
        try {
          // The row before the page: its hash only (its own seq is below `from`; a run whose row there is gone
          // starts the page with the genesis hash, and `Verify` reports the gap).
          if (before === 1 && rows.length > 0 && toNumber(rows[0]![0]) === from - 1) {
            row = rows[0]!
            previousHash = hashOf(row, pg)
            i = 1
          }
          const end = limit === undefined ? rows.length : Math.min(rows.length, i + Math.max(0, Math.floor(limit)))
          for (; i < end; i++) {
            row = rows[i]!
            const event = eventFromValues(runId, tenantId, row, previousHash, pg, lazy)
            out.push(event)
            previousHash = event.hash
          }
        } catch (cause) {
          if (!(cause instanceof CorruptRow)) return Effect.die(cause)
          return Effect.fail(Lazy.corruptRow(runId, row?.[0], cause.column, cause.reason))
        }
        return Effect.succeed(out)
      }).pipe(Effect.flatMap((out) =>
        out.length > 0 ? Effect.succeed(out) : Effect.flatMap(runExists(tenantId, runId), (exists) => exists ? Effect.succeed(out) : Effect.fail(new RunNotFound({ runId, tenantId })))
      ))
    }).pipe(
      Effect.catchTag("SqlError", (error) => Effect.fail(storeError("readEvents", error))),
      // Opened only under a tracer that exports (as the kernel's spans). A span keeps its effect's exit, here the
      // page: under Effect's built-in tracer the span outlived young collections and, once old, held every page it
      // ended with through the next ones (a replay of 10,000 events promoted 10-15 MB, 50-65 ms of young GC).
      (read) => span("SqlEventStore.readEvents", { runId, fromSeq, limit }, read)
    )

  return readEvents
}

/**
 * A page the store's read-ahead worker read, before its payloads are parsed: the seq and stored hash of each of its
 * events and their payloads' length (where a read stands after them: the next page can be asked for at once), then its
 * events; what stops the worker's hashing of them and says how many of the first hash to their stored hash (`hashed`);
 * and whether the worker stopped before the end of the page's rows (`cut`: the rows after its events are to be read
 * here).
 */
export interface AheadPage {
  /** How many events the worker made of the page's rows. */
  readonly count: number
  /** The seq of the page's `n`th event (from 0). */
  readonly seqAt: (n: number) => number
  /** The hash the page's `n`th event stores, as its event gives it. */
  readonly hashAt: (n: number) => string
  /** The characters of the stored payload text of the page's first `n` events. */
  readonly payloadChars: (n: number) => number
  /** The page's events, their payloads parsed (a row that does not decode fails as in `readEvents`). */
  readonly events: Effect.Effect<Array<Event>, StoreError>
  readonly hashed: ReadWorker.Hashed
  readonly cut: boolean
}

/** `page` as an `AheadPage` of run `runId`: its fields read off its texts, its events made on demand. */
const aheadPage = (runId: string, tenantId: string, page: ReadWorker.Page, lazy: boolean): AheadPage => {
  const { ends, firsts, texts } = page
  const F = ReadWorker.FIELDS
  return {
    count: page.count,
    seqAt: (n) => page.numbers[n * 2]!,
    hashAt: (n) => {
      let chunk = 0
      while (chunk + 1 < firsts.length && firsts[chunk + 1]! <= n) chunk++
      return texts[chunk]!.slice(ends[n * F + 4], ends[n * F + 5])
    },
    payloadChars: (n) => {
      let chars = 0
      for (let i = 0; i < n; i++) chars += ends[i * F + 3]! - ends[i * F + 2]!
      return chars
    },
    events: eventsOfPage(runId, tenantId, page, lazy),
    hashed: page.hashed,
    cut: page.count < page.rows
  }
}

/**
 * Sends a page of a run's events, from seq `from`, `limit` of them, to the store's read-ahead worker, which hashes them
 * from `prevHash` (the hash of the event before) with `auditKey`. Gives what resolves to the page (or undefined: the
 * worker did not read it), or undefined when the page is not sent: inside a transaction (the worker's connection sees
 * only what is committed) or when the worker cannot take it now.
 */
export interface RequestAhead {
  readonly request: (
    tenantId: string,
    runId: string,
    from: number,
    limit: number,
    prevHash: string,
    auditKey: string | undefined
  ) => Effect.Effect<Effect.Effect<AheadPage | undefined, StoreError> | undefined>
  /** Starts the worker; resolves once it is ready (true) or could not be (false). */
  readonly ready: () => Promise<boolean>
  /** Whether the worker may read pages (now or once started). */
  readonly usable: () => boolean
}

/** The read-ahead of the SQLite store on tables `t`, through `ahead` (see `readWorker.ts`). */
export const makeAhead = (t: Tables, ahead: ReadWorker.ReadAhead): RequestAhead => {
  const text = sqlitePageText(t)
  const request: RequestAhead["request"] = (tenantId, runId, from, limit, prevHash, auditKey) =>
    Effect.contextWithEffect((context) => {
      if (Context.getOption(context, SqlClient.TransactionConnection)._tag === "Some") return Effect.succeed(undefined)
      return Effect.map(FiberRef.get(Lazy.replayRead), (lazy) => {
        const pending = ahead.request(text, [runId, tenantId, from, limit], prevHash, auditKey)
        if (pending === undefined) return undefined
        return Effect.map(pending, (page) => page === undefined ? undefined : aheadPage(runId, tenantId, page, lazy))
          .pipe((read) => span("SqlEventStore.readEvents", { runId, fromSeq: from, limit, readAhead: true }, read))
      })
    })
  return { request, ready: ahead.ready, usable: ahead.usable }
}
