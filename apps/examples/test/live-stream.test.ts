import { afterAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { main } from "../src/live-stream.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-live-example-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

describe("live-stream example", () => {
  it("streams the answer (scrubbed), reconnects at its offset with nothing lost or twice, waits for the yes, completes", async () => {
    delete process.env.OPENAI_API_KEY
    delete process.env.OPENAI_BASE_URL
    const out: Array<string> = []
    const asked: Array<string> = []
    const { final, replies } = await main({
      write: (t) => out.push(t),
      confirm: async (reason) => (asked.push(reason), true),
      filename: path.join(root, "artana.db"),
      paceMs: 0
    })
    const text = out.join("")
    const scrubbed = "Write to <EMAIL_1>: the transfer of $250 from acc-1 to acc-2 is ready, and the balance covers it."
    // The streamed text, before and after the reconnect, spells the scrubbed reply exactly once.
    const streamed = text.slice(text.indexOf("\n\n") + 2, text.indexOf("\n\nlogged reply")).replace(/ {2}\[disconnected at offset [0-9.]+; reconnecting\] {2}/, "")
    expect(streamed).toBe(scrubbed)
    expect(text).not.toContain("ann@example.com")
    expect(text).toContain(`logged reply (the truth the deltas previewed): ${scrubbed}`)
    expect(asked).toEqual(["send this answer?"])
    expect(final).toMatchObject({ status: "completed", output: `sent: ${scrubbed}` })
    expect(replies).toBeDefined()
  })

  it("through the real openai SDK streaming (SSE) from a local server: the same, delta by delta", async () => {
    const server = await FakeOpenAi.start([FakeOpenAi.text("Write to ann@example.com: the transfer is ready.", { pieces: 12 })])
    const saved = { url: process.env.OPENAI_BASE_URL, model: process.env.OPENAI_MODEL, key: process.env.OPENAI_API_KEY }
    try {
      delete process.env.OPENAI_API_KEY
      process.env.OPENAI_BASE_URL = server.url
      process.env.OPENAI_MODEL = "gpt-4o-mini"
      const out: Array<string> = []
      const { final } = await main({ write: (t) => out.push(t), confirm: async () => false, filename: path.join(root, "openai.db") })
      const text = out.join("")
      expect(text).toContain("OpenAI (SSE)")
      expect(text).not.toContain("ann@example.com")
      expect(text).toContain("logged reply (the truth the deltas previewed): Write to <EMAIL_1>: the transfer is ready.")
      expect(final).toMatchObject({ status: "completed", output: "not sent" })
      expect((server.requests[0]?.body as { stream?: boolean }).stream).toBe(true)
    } finally {
      for (const [k, v] of [["OPENAI_BASE_URL", saved.url], ["OPENAI_MODEL", saved.model], ["OPENAI_API_KEY", saved.key]] as const) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
      await server.close()
    }
  })
})
