/**
 * `artana export RUN [--format jsonl] [--out FILE]`: a run's verified events as JSON lines (`EventLines`), read,
 * checked and written a page at a time. Read-only, as the other read commands.
 */
import { Errors, EventLines, Kernel } from "@artana/core"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ExitCode from "../ExitCode.js"
import * as Database from "./database.js"
import * as Out from "./output.js"
import * as Services from "./services.js"

export interface ExportArgs {
  readonly db: string
  readonly tenant: string
  readonly verbose: boolean
  readonly auditKey: Redacted.Redacted<string> | undefined
  readonly run: string
  readonly format: "jsonl"
  /** `--out FILE`; stdout when absent. */
  readonly out: string | undefined
}

const cannotWrite = (file: string) => (cause: unknown) =>
  new Errors.InvalidInput({ what: "--out", reason: `cannot write ${file}: ${cause instanceof Error ? cause.message : String(cause)}` })

/**
 * Where the lines go: stdout, paced by its reader; or a file written beside `out` and renamed over it once every line
 * is written (`commit`), removed when the export fails, so `out` is never a part of a log.
 */
const sinkOf = (out: string | undefined) =>
  out === undefined
    ? Effect.succeed({ write: Out.stdoutPaced, commit: Effect.void })
    : Effect.acquireRelease(
      Effect.try({
        try: () => {
          const partial = path.join(path.dirname(out), `.${path.basename(out)}.${process.pid}.partial`)
          return { partial, fd: fs.openSync(partial, "w") }
        },
        catch: cannotWrite(out)
      }),
      ({ fd, partial }) =>
        Effect.sync(() => {
          fs.closeSync(fd)
          // Renamed by `commit` when the export succeeded; else the part written goes.
          fs.rmSync(partial, { force: true })
        })
    ).pipe(Effect.map(({ fd, partial }) => ({
      write: (text: string) => Effect.try({ try: () => void fs.writeSync(fd, text), catch: cannotWrite(out) }),
      commit: Effect.try({ try: () => fs.renameSync(partial, out), catch: cannotWrite(out) })
    })))

export const exportRun = (args: ExportArgs) =>
  Out.command({ format: "console", verbose: args.verbose }, Effect.scoped(Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const sink = yield* sinkOf(args.out)
    let count = 0
    let head = { seq: 0, hash: "" }
    // Each page is verified before it is emitted (`Kernel.events`), and written as one write.
    yield* Stream.runForEachChunk(kernel.events({ tenantId: args.tenant, runId: args.run }), (page) => {
      const events = Chunk.toReadonlyArray(page)
      const last = events[events.length - 1]
      if (last === undefined) return Effect.void
      count += events.length
      head = { seq: last.seq, hash: last.hash }
      return sink.write(events.map((e) => `${EventLines.encode(e)}\n`).join(""))
    })
    yield* sink.commit
    yield* Out.stderr(`exported ${count} events of run ${args.run}, verified, head ${head.seq}:${head.hash}${args.out === undefined ? "" : ` to ${args.out}`}`)
    return ExitCode.Ok
  })).pipe(Effect.provide(Services.kernel({ store: Database.layer(Database.parse(args.db), { create: false, readOnly: true }), auditKey: args.auditKey }))))
