/**
 * @artana/worker: durable task workers, the scheduler (repeating and delayed tasks) and the `ArtanaSession` API.
 *
 * @since 0.1.0
 */
export * as Worker from "./Worker.js"
export * as ArtanaSession from "./ArtanaSession.js"
export * as WorkerLog from "./WorkerLog.js"
