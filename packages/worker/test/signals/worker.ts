// A worker process of the signal tests: runs `approval` tasks until SIGTERM (then it releases its tasks and exits 0).
import { Effect, Fiber } from "effect"
import { Worker } from "../../src/index.js"
import { approval, live } from "./shared.js"

const [filename = "", workerId = "worker"] = process.argv.slice(2)

const fiber = Effect.runFork(
  Worker.run({ workflows: [approval], concurrency: 2, leaseSeconds: 5, pollInterval: "50 millis", workerId }).pipe(Effect.provide(live(filename)))
)
process.on("SIGTERM", () => {
  Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0), () => process.exit(1))
})
