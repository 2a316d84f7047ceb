// `pnpm bench live`: streaming through the kernel against the `openai` SDK reading the same local server directly
// (bench/README.md says what each row measures).
//
// first_delta_vs_sdk: from the server writing its first text chunk to the first `TextDelta` a `Kernel.live` reader
//   gets (the run durable on SQLite, the PII middleware and the budget applied, the model priced), / the same for
//   the SDK's own stream, asked exactly what the kernel's adapter asks (the same body: `max_completion_tokens`,
//   `stream_options`; an `AbortSignal`) and iterated with `for await`. ROUNDS rounds after WARMUP rounds that are not
//   counted (the first calls in a process run code V8 has not compiled yet, the kernel's more than the SDK's: what a
//   long-running server pays once, not per reply); each round runs both, one right after the other, and changes which
//   goes first. The value is the median over rounds of the round's kernel/SDK ratio (both halves of a pair see the
//   same load, so a machine whose load drifts moves the pair, not the ratio); `median_se` in the detail is its standard
//   error (a bootstrap over the rounds): a round's ratio ranges from ~0.75 to ~1.8 on this machine, so 61 rounds gave a
//   median of standard error ~0.04, as wide as the row's distance to its target, and 241 give ~0.02 (bench/README.md,
//   fifth session). The ratio of the two medians is in the
//   detail, and so is the same ratio in CPU (`process.cpuUsage` over the same window, each side's own process CPU:
//   what the window would take on an idle core). The PII middleware is the default one (prompts scrubbed): with
//   `scrubReplies` a reply's text is held back until 64 characters settled (see `@artana/middleware`), so its first
//   delta would wait for later chunks by design.
// per_delta_extra_us: (kernel - SDK) time from the server's first text chunk to the last delta, over a reply of
//   DELTAS chunks written at once, divided by DELTAS: what the kernel adds per delta (keeping it in the LiveStore,
//   waking the reader, the reader's read).
// reconnect_at_k_vs_start: a reader reconnecting at offset k = 9,000 of a paused run's 10,000 kept deltas reads to
//   its end / a reader from the start reads the whole; alternated, 9 rounds each.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Chunk, Effect, Layer, ManagedRuntime, Stream } from "effect"
import { Chat, Kernel, type Live, Middleware, ToolRegistry } from "@artana/core"
import { ScriptedModel, TestWorkflows } from "@artana/core/testing"
import { Pii } from "@artana/middleware"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "./fixtures.js"
import { type BenchResult, median, medianSe, nowUs, progress } from "./lib.js"

/** This process's CPU time (user and system), in microseconds. */
const cpuUs = (): number => {
  const { system, user } = process.cpuUsage()
  return user + system
}

const WARMUP = 10
const ROUNDS = 241
const DELTAS = 200
const KEPT = 10_000
const K = 9_000

/** `pieces` words, each a delta of its own. */
const words = (pieces: number) => Array.from({ length: pieces }, (_, i) => `w${i} `)
const text = (pieces: number) => words(pieces).join("")

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-live-"))
  try {
    // The server's clock (and the process's CPU then): when it wrote the first text chunk of each request.
    const firstWritten: Array<number> = []
    const firstWrittenCpu: Array<number> = []
    const script: Array<FakeOpenAi.Reply> = []
    for (let i = 0; i < 2 * (WARMUP + ROUNDS) * 2; i++) script.push(FakeOpenAi.text(text(i % 2 === 0 ? 4 : DELTAS), { pieces: i % 2 === 0 ? 4 : DELTAS }))
    const server = await FakeOpenAi.start(script, {
      beforeChunk: async ({ chunk, request }) => {
        if (chunk === 1) {
          firstWritten[request] = nowUs()
          firstWrittenCpu[request] = cpuUs()
        }
      }
    })
    // The SDK's own client (the adapter's, for the same server and options), read directly.
    const sdk = (await Effect.runPromise(OpenAiModel.make({ baseURL: server.url }))).client
    const layer = Layer.provideMerge(
      Kernel.layer(),
      Layer.mergeAll(
        SqliteStore.layer({ filename: join(dir, "live.db") }),
        OpenAiModel.layer({ baseURL: server.url, stream: true }),
        ToolRegistry.layer([]),
        Middleware.layer([Pii.middleware()])
      )
    )
    const kernelRun = (runId: string) =>
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const started = yield* Effect.fork(kernel.chat({ runId, tenant, messages: [Chat.user("Say the words.")] }))
        let first = 0
        let firstCpu = 0
        let last = 0
        yield* kernel.live({ tenantId: tenant.tenantId, runId }, { waitForStart: true }).pipe(
          Stream.takeUntil((e) => e._tag === "ModelCompleted"),
          Stream.runForEach((e) =>
            Effect.sync(() => {
              if (e._tag !== "TextDelta") return
              last = nowUs()
              if (first === 0) {
                first = last
                firstCpu = cpuUs()
              }
            })
          )
        )
        yield* started.await
        return { first, firstCpu, last }
      })
    // What the kernel's adapter asks for this chat (checked against the server's record below), with a signal as it does.
    const sdkRun = async () => {
      let first = 0
      let firstCpu = 0
      let last = 0
      const stream = await sdk.chat.completions.create(
        { model: "gpt-4o-mini", messages: [{ role: "user", content: "Say the words." }], max_completion_tokens: 1024, stream: true, stream_options: { include_usage: true } },
        { signal: new AbortController().signal }
      )
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) {
          last = nowUs()
          if (first === 0) {
            first = last
            firstCpu = cpuUs()
          }
        }
      }
      return { first, firstCpu, last }
    }
    const runtime = ManagedRuntime.make(layer)
    const viaKernel = (runId: string) => runtime.runPromise(kernelRun(runId))

    progress(`first_delta_vs_sdk and per_delta_extra_us: ${WARMUP} rounds of warm-up, then ${ROUNDS} rounds, alternated`)
    const firstKernel: Array<number> = []
    const firstSdk: Array<number> = []
    const cpuKernel: Array<number> = []
    const cpuSdk: Array<number> = []
    const allKernel: Array<number> = []
    const allSdk: Array<number> = []
    let request = 0
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      if (round > WARMUP && (round - WARMUP) % 60 === 0) progress(`first_delta_vs_sdk: round ${round - WARMUP}/${ROUNDS}`)
      for (const who of round % 2 === 0 ? ["kernel", "sdk"] as const : ["sdk", "kernel"] as const) {
        // A short reply (first delta), then a long one (per delta), each way.
        for (const long of [false, true]) {
          request++
          const at = request
          const t = who === "kernel" ? await viaKernel(`r${at}`) : await sdkRun()
          const written = firstWritten[at]!
          if (round < WARMUP) continue
          if (!long) {
            ;(who === "kernel" ? firstKernel : firstSdk).push(t.first - written)
            ;(who === "kernel" ? cpuKernel : cpuSdk).push(t.firstCpu - firstWrittenCpu[at]!)
          }
          else (who === "kernel" ? allKernel : allSdk).push(t.last - written)
        }
      }
    }
    await runtime.dispose()
    await server.close()
    // Both sides sent the same request: the baseline is the SDK as the kernel's adapter uses it.
    const bodies = new Set(server.requests.map((r) => JSON.stringify(r.body)))
    if (bodies.size !== 1) throw new Error(`the kernel's and the SDK's requests differ: ${[...bodies].join(" / ")}`)

    progress(`reconnect_at_k_vs_start: a paused run with ${KEPT} kept deltas`)
    const kept = Layer.provideMerge(
      Kernel.layer(),
      Layer.mergeAll(
        SqliteStore.layer({ filename: join(dir, "kept.db") }),
        ScriptedModel.layer([ScriptedModel.text(text(KEPT), { deltas: words(KEPT) })], { model: "gpt-4o-mini" }),
        ToolRegistry.layer([])
      )
    )
    const reconnect = await Effect.runPromise(Effect.provide(
      Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        yield* kernel.execute(TestWorkflows.chatThenPause, { runId: "kept", tenant, input: "Say the words." })
        const read = (after?: string) =>
          Effect.gen(function*() {
            const t0 = nowUs()
            const events = yield* kernel.live({ tenantId: tenant.tenantId, runId: "kept" }, after === undefined ? {} : { after }).pipe(
              Stream.takeUntil((e) => e._tag === "Paused"),
              Stream.runCollect
            )
            return { us: nowUs() - t0, events: Chunk.toReadonlyArray(events) }
          })
        const all = yield* read()
        const deltas = all.events.filter((e): e is Live.LiveEvent & { readonly _tag: "TextDelta" } => e._tag === "TextDelta")
        if (deltas.length !== KEPT) throw new Error(`the paused run kept ${deltas.length} deltas, not ${KEPT}`)
        const offset = deltas[K - 1]!.offset
        const fromK: Array<number> = []
        const fromStart: Array<number> = []
        let restCount = 0
        for (let round = 0; round < 9; round++) {
          const a = yield* read(offset)
          const b = yield* read()
          restCount = a.events.length
          fromK.push(a.us)
          fromStart.push(b.us)
        }
        return { fromK: median(fromK), fromStart: median(fromStart), restCount, total: all.events.length }
      }),
      kept
    ))

    const fk = median(firstKernel)
    const fs = median(firstSdk)
    // Per round: the kernel's time over the SDK's, both measured in that round.
    const pairs = firstKernel.map((k, i) => k / firstSdk[i]!)
    const pairRatio = median(pairs)
    const cpuRatio = median(cpuKernel.map((k, i) => k / cpuSdk[i]!))
    const perDelta = (median(allKernel) - median(allSdk)) / DELTAS
    return {
      name: "live",
      machine,
      rows: [
        {
          metric: "first_delta_vs_sdk",
          value: pairRatio,
          unit: "ratio",
          baseline: "openai SDK stream read directly",
          baselineValue: fs,
          ratio: pairRatio,
          detail: {
            kernel_us: fk,
            sdk_us: fs,
            median_se: medianSe(pairs),
            ratio_of_medians: fk / fs,
            cpu_ratio: cpuRatio,
            kernel_cpu_us: median(cpuKernel),
            sdk_cpu_us: median(cpuSdk),
            rounds: ROUNDS,
            warmup_rounds: WARMUP,
            store: "SQLite (synchronous=FULL)",
            middleware: "Pii",
            budget: "enforced (gpt-4o-mini)"
          }
        },
        {
          metric: "per_delta_extra_us",
          value: perDelta,
          unit: "us",
          baseline: `openai SDK, ${DELTAS} chunks`,
          baselineValue: median(allSdk) / DELTAS,
          ratio: median(allKernel) / median(allSdk),
          detail: { kernel_total_us: median(allKernel), sdk_total_us: median(allSdk) }
        },
        {
          metric: "reconnect_at_k_vs_start",
          value: reconnect.fromK / reconnect.fromStart,
          unit: "ratio",
          baseline: `reading all ${KEPT} deltas from the start`,
          baselineValue: reconnect.fromStart,
          ratio: reconnect.fromK / reconnect.fromStart,
          detail: { from_k_us: reconnect.fromK, from_start_us: reconnect.fromStart, k: K, events_after_k: reconnect.restCount, events_total: reconnect.total }
        }
      ]
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
