// Steering across processes: an agent runs in one process (a child on a SQLite file, its model the real `openai` SDK
// against the test's server); a person steers it from another, with the real `artana signal`. The message reaches the
// next turn's model request, is logged, and survives a SIGKILL of the running process: a resume in a fresh process
// injects it exactly once.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"
import { Chat, type Event, EventStore } from "@artana/core"
import { AutonomousAgent } from "@artana/agent"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { artana, cleanup, tempDir } from "./helpers.js"
import { analyst, layer } from "./steer/agent.js"

afterAll(cleanup)

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
/** steer/child.ts, bundled once per test run (artanaBin.ts): a process of it starts in a fraction of tsx's time. */
const CHILD = inject("steerChild")

const steering = "Only EMEA, please."

/** A promise and its resolver. */
const gate = () => {
  let open: () => void = () => {}
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

interface Child {
  /** The first line the child printed with this `outcome` (fails if it exits first). */
  readonly line: (outcome: string) => Effect.Effect<Record<string, unknown>, Error>
  /** SIGKILLs it and waits for its end; the signal it died of. */
  readonly kill: Effect.Effect<NodeJS.Signals | null>
}

/** The agent's process on `db`, running `runId`; killed when the test's scope closes if still running. */
const startChild = (db: string, url: string, runId: string, extra: ReadonlyArray<string> = []): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync((): ChildProcessWithoutNullStreams => spawn(process.execPath, [CHILD, "--db", db, "--url", url, "--run", runId, ...extra], { cwd: REPO_ROOT })),
      (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
    ),
    (child) => {
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s))
      child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("close", (_code, signal) => resolve(signal)))
      const found = (outcome: string) =>
        stdout.split("\n").flatMap((l) => (l.startsWith("{") ? [JSON.parse(l) as Record<string, unknown>] : [])).find((l) => l["outcome"] === outcome)
      const line = (outcome: string) =>
        Effect.tryPromise({
          try: () =>
            new Promise<Record<string, unknown>>((resolve, reject) => {
              const look = () => {
                const hit = found(outcome)
                if (hit !== undefined) resolve(hit)
              }
              child.stdout.on("data", look)
              look()
              void exited.then(() => {
                look()
                reject(new Error(`the child ended without a line ${outcome}: ${stdout}\n${stderr}`))
              })
            }),
          catch: (e) => (e instanceof Error ? e : new Error(String(e)))
        })
      const kill = Effect.promise(() => {
        child.kill("SIGKILL")
        return exited
      })
      return { line, kill }
    }
  )

/** `artana signal`: the steering message, from its own process. */
const steer = (db: string, runId: string) =>
  artana(["signal", runId, AutonomousAgent.STEERING_SIGNAL, "--payload", JSON.stringify({ text: steering }), "--db", db, "--tenant", "acme"], { cwd: path.dirname(db) })

const eventsOf = (db: string, url: string, runId: string) =>
  Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", runId)).pipe(Effect.provide(layer(db, url)))

const stepsOf = (events: ReadonlyArray<Event.Event>) => events.map((e) => `${e.type}@${e.stepKey}`)

type Body = { readonly messages: ReadonlyArray<{ readonly role: string; readonly content?: unknown }> }

/** How many user messages of request `i` are the steering message, and whether it is the last message. */
const steeredIn = (server: FakeOpenAi.Server, i: number) => {
  const messages = (server.requests[i]!.body as Body).messages
  return {
    count: messages.filter((m) => m.role === "user" && m.content === steering).length,
    last: messages.at(-1)
  }
}

/** For each logged model request of step `stepKey`, how many of its user messages are the steering message. */
const loggedRequests = (events: ReadonlyArray<Event.Event>, stepKey: string) =>
  events.flatMap((e) =>
    e.stepKey === stepKey && e.payload._tag === "ModelRequested"
      ? [e.payload.messages.filter((m) => m.role === "user" && m.content === steering).length]
      : []
  )

describe("steering an agent from another process", () => {
  it.scopedLive("sent while turn 0's model call is in flight, it is taken at turn 1; a SIGKILL during turn 1 and a resume inject it once", () =>
    Effect.gen(function*() {
      const db = path.join(tempDir(), "runs.db")
      const firstAsked = gate()
      const sent = gate()
      const secondAsked = gate()
      const killed = gate()
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.toolCall("look_around", {}, { id: "call_1" }),
        FakeOpenAi.text("EMEA did well."),
        // The resumed process: turn 1 again, which calls the tool once more, then turn 2 (a new wait for steering).
        FakeOpenAi.toolCall("look_around", {}, { id: "call_2" }),
        FakeOpenAi.text("EMEA did well.")
      ], {
        beforeChunk: async ({ chunk, request }) => {
          if (chunk !== 0) return
          if (request === 1) {
            firstAsked.open()
            await sent.promise
          }
          if (request === 2) {
            secondAsked.open()
            await killed.promise
          }
        }
      })
      const first = yield* startChild(db, server.url, "steer-1")
      yield* Effect.promise(() => firstAsked.promise)

      // The run is in turn 0's model call, before the point that waits for steering: the message waits in the log.
      const signalled = yield* steer(db, "steer-1")
      expect(signalled.code).toBe(0)
      const before = stepsOf(yield* eventsOf(db, server.url, "steer-1"))
      expect(before).toContain("SignalSent@run")
      expect(before.filter((s) => s.startsWith("SignalReceived"))).toEqual([])
      sent.open()

      // Turn 1's model call is in flight: the message is the last one the server got, and taking it is durable (the
      // call's own events are written with its reply).
      yield* Effect.promise(() => secondAsked.promise)
      expect(steeredIn(server, 1)).toEqual({ count: 1, last: Chat.user(steering) })
      expect(stepsOf(yield* eventsOf(db, server.url, "steer-1")).slice(-4)).toEqual([
        "ToolRequested@turn:0/tool:0",
        "ToolCompleted@turn:0/tool:0",
        "SignalReceived@turn:1/steer:0",
        "SignalTimedOut@turn:1/steer:1"
      ])

      // The process dies there; a fresh one resumes the run and asks turn 1 again, with the message once, and turn 2
      // (whose wait for steering is new) still has it once in its history.
      expect(yield* first.kill).toBe("SIGKILL")
      killed.open()
      const second = yield* startChild(db, server.url, "steer-1")
      const done = yield* second.line("result")
      expect(done["result"]).toMatchObject({ status: "completed", output: { output: "EMEA did well.", turns: 3 } })
      expect(server.requests).toHaveLength(4)
      expect(steeredIn(server, 2)).toEqual({ count: 1, last: Chat.user(steering) })
      expect(steeredIn(server, 3).count).toBe(1)

      const events = yield* eventsOf(db, server.url, "steer-1")
      const steps = stepsOf(events)
      expect(steps.filter((s) => s.startsWith("Signal"))).toEqual([
        "SignalTimedOut@turn:0/steer:0",
        "SignalSent@run",
        "SignalReceived@turn:1/steer:0",
        "SignalTimedOut@turn:1/steer:1",
        "SignalTimedOut@turn:2/steer:0"
      ])
      expect(loggedRequests(events, "turn:1")).toEqual([1])
      expect(loggedRequests(events, "turn:2")).toEqual([1])
      // A replay takes the same message at the same turn, and calls no model.
      const replayed = yield* analyst().replay({ tenantId: "acme", runId: "steer-1" }).pipe(Effect.provide(layer(db, server.url)))
      expect(replayed).toEqual(done["result"])
      expect(server.requests).toHaveLength(4)
    }), { timeout: 180_000 })

  it.scopedLive("sent while the run's process is stuck in a tool, which is then SIGKILLed: the resumed process takes it at the next turn, once", () =>
    Effect.gen(function*() {
      const db = path.join(tempDir(), "runs.db")
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.toolCall("look_around", {}, { id: "call_1" }), FakeOpenAi.text("EMEA did well.")])
      const first = yield* startChild(db, server.url, "steer-2", ["--hold-tool"])
      yield* first.line("tool")

      const signalled = yield* steer(db, "steer-2")
      expect(signalled.code).toBe(0)
      expect(yield* first.kill).toBe("SIGKILL")
      // Logged after the tool was asked for and before its answer: nothing took it yet.
      const before = stepsOf(yield* eventsOf(db, server.url, "steer-2"))
      expect(before.slice(-2)).toEqual(["ToolRequested@turn:0/tool:0", "SignalSent@run"])

      const second = yield* startChild(db, server.url, "steer-2")
      expect((yield* second.line("result"))["result"]).toMatchObject({ status: "completed", output: { output: "EMEA did well.", turns: 2 } })
      expect(server.requests).toHaveLength(2)
      expect(steeredIn(server, 1)).toEqual({ count: 1, last: Chat.user(steering) })
      const events = yield* eventsOf(db, server.url, "steer-2")
      expect(stepsOf(events).filter((s) => s.startsWith("Signal"))).toEqual([
        "SignalTimedOut@turn:0/steer:0",
        "SignalSent@run",
        "SignalReceived@turn:1/steer:0",
        "SignalTimedOut@turn:1/steer:1"
      ])
      expect(loggedRequests(events, "turn:1")).toEqual([1])
    }), { timeout: 180_000 })
})
