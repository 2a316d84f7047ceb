/**
 * Worker logging: info and above to the console, and errors as JSON lines to a file rotated by size (10 MB x
 * 5 files by default) through `rotating-file-stream`, so a worker left running for months never fills its disk.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as path from "node:path"
import * as rfs from "rotating-file-stream"

/** Options of `layer`. */
export interface Options {
  /** Directory of the error log (must exist). */
  readonly directory: string
  /** Default `artana-worker-errors.log`; rotated files get `.1`, `.2`, ... (`.1` the newest). */
  readonly fileName?: string | undefined
  /** Size at which the file rotates, e.g. `"10M"` (default), `"500K"`. */
  readonly maxSize?: rfs.FileSize | undefined
  /** Rotated files kept besides the current one. Default 5. */
  readonly maxFiles?: number | undefined
  /** The lowest level written to the console. Default Info; `None` turns the console off. */
  readonly consoleLevel?: LogLevel.LogLevel | undefined
}

/** One structured line per entry: time, level, message, annotations (task, run, worker), spans and cause. */
const jsonLine = (write: (line: string) => void) =>
  Logger.map(Logger.structuredLogger, (entry) => {
    write(`${JSON.stringify(entry)}\n`)
  })

/**
 * Replaces the default logger for the worker: console from `consoleLevel`, errors to the rotating file.
 *
 * @example
 * Worker.run({ workflows, concurrency: 4 }).pipe(Effect.provide(WorkerLog.layer({ directory: "./logs" })))
 */
export const layer = (options: Options): Layer.Layer<never> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const fileName = options.fileName ?? "artana-worker-errors.log"
    const stream = yield* Effect.acquireRelease(
      Effect.sync(() =>
        // Classic numbered rotation (`rotate`): the generator gets the file's number, or null for the current file;
        // .1 is the newest rotated file, older ones shift up and the one past `rotate` is dropped.
        rfs.createStream((index) => (typeof index === "number" ? `${fileName}.${index}` : fileName), {
          path: `${path.resolve(options.directory)}${path.sep}`,
          size: options.maxSize ?? "10M",
          rotate: options.maxFiles ?? 5
        })
      ),
      (stream) => Effect.async<void>((resume) => {
        stream.end(() => resume(Effect.void))
      })
    )
    const file = Logger.filterLogLevel(jsonLine((line) => stream.write(line)), LogLevel.greaterThanEqual(LogLevel.Error))
    const consoleLevel = options.consoleLevel ?? LogLevel.Info
    const console = Logger.filterLogLevel(Logger.logfmtLogger.pipe(Logger.withConsoleLog), LogLevel.greaterThanEqual(consoleLevel))
    return Layer.merge(Logger.replace(Logger.defaultLogger, console), Logger.add(file))
  }))
