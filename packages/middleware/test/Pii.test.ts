import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer, Schema } from "effect"
import { Chat, EventStore, type Json, Kernel, type Middleware, type ModelPort, Tenant, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import * as Pii from "../src/Pii.js"
import { kernelLayer, notifyTool } from "./kernelFixtures.js"

const found = (text: string) => Pii.scrub(text).findings.map((f) => [f.kind, f.value])

describe("Pii.scrub: detectors", () => {
  const positives: ReadonlyArray<readonly [Pii.Kind, string, string]> = [
    ["email", "write to ann.lee+billing@mail.example.co.uk today", "ann.lee+billing@mail.example.co.uk"],
    ["email", "From: \"Ann\" <ANN@EXAMPLE.COM>", "ANN@EXAMPLE.COM"],
    ["email", "unsubscribe o'connor@example.ie please", "o'connor@example.ie"],
    ["phone", "call +44 20 7946 0958 now", "+44 20 7946 0958"],
    ["phone", "call +1 (415) 555-0132 now", "+1 (415) 555-0132"],
    ["phone", "call (415) 555-0132 now", "(415) 555-0132"],
    ["phone", "call 415-555-0132 now", "415-555-0132"],
    ["phone", "call 415.555.0132 now", "415.555.0132"],
    ["phone", "call 020 7946 0958 now", "020 7946 0958"],
    ["phone", "appelez le 06 12 34 56 78 svp", "06 12 34 56 78"],
    ["phone", "Festnetz 030-12345678", "030-12345678"],
    ["phone", "sms +14155550132", "+14155550132"],
    ["phone", "dial 0044 20 7946 0958", "0044 20 7946 0958"],
    ["phone", "toll free 1-800-555-0199", "1-800-555-0199"],
    ["phone", "call me at 555-0132", "555-0132"],
    ["phone", "my phone is 6505550172", "6505550172"],
    ["card", "card 4111 1111 1111 1111 exp 12/27", "4111 1111 1111 1111"],
    ["card", "card 4111-1111-1111-1111", "4111-1111-1111-1111"],
    ["card", "card 5105105105105100", "5105105105105100"],
    ["card", "amex 3782 822463 10005", "3782 822463 10005"],
    ["card", "diners 3056 930902 5904", "3056 930902 5904"],
    ["iban", "IBAN DE89 3704 0044 0532 0130 00 (Commerzbank)", "DE89 3704 0044 0532 0130 00"],
    ["iban", "IBAN GB29NWBK60161331926819.", "GB29NWBK60161331926819"],
    ["iban", "typed as gb29 nwbk 6016 1331 9268 19", "gb29 nwbk 6016 1331 9268 19"],
    ["ssn", "SSN 123-45-6789 on file", "123-45-6789"],
    ["ssn", "SSN: 123 45 6789", "123 45 6789"],
    ["ipv4", "from 192.168.1.23 port 22", "192.168.1.23"],
    ["ipv4", "connect ECONNREFUSED 10.0.0.12:6379", "10.0.0.12"],
    ["ipv4", "firmware version 192.168.1.1 (sic)", "192.168.1.1"],
    ["ipv4", "the server 1.2.3.4 is down", "1.2.3.4"],
    ["ipv6", "loopback ::1 is up", "::1"],
    ["ipv6", "peer 2001:db8:85a3::8a2e:370:7334 dropped", "2001:db8:85a3::8a2e:370:7334"],
    ["ipv6", "gw fe80::1ff:fe23:4567:890a%eth0 via", "fe80::1ff:fe23:4567:890a%eth0"],
    ["ipv6", "mapped ::ffff:192.0.2.128 here", "::ffff:192.0.2.128"],
    ["ipv6", "url http://[2001:db8::10]:8080/", "2001:db8::10"],
    ["openai_key", "OPENAI_API_KEY=sk-eioEJP2NNern66nVberACpdclsxHKifxi5CvQUSHL8iLc7bE", "sk-eioEJP2NNern66nVberACpdclsxHKifxi5CvQUSHL8iLc7bE"],
    ["openai_key", "key sk-proj-ke4R1J-dBi2ewQr8t4_lC4LvGNWAMsI_z0oaWdfZp-lvi60ZIF8_qR38Ony1 ok", "sk-proj-ke4R1J-dBi2ewQr8t4_lC4LvGNWAMsI_z0oaWdfZp-lvi60ZIF8_qR38Ony1"],
    ["aws_access_key", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"],
    ["aws_access_key", "session ASIASZTXS6RSSBAPCK2Y", "ASIASZTXS6RSSBAPCK2Y"],
    ["aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
    ["github_token", "token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"],
    ["github_token", "token gho_jpVkOyRkunyBHsr4dEtUhtPjX6l6dWDbLE6Z", "gho_jpVkOyRkunyBHsr4dEtUhtPjX6l6dWDbLE6Z"],
    ["github_token", "token ghu_cugmlwnLpMTEMGoCl5rzl6W7tOJ80JE2qF4z", "ghu_cugmlwnLpMTEMGoCl5rzl6W7tOJ80JE2qF4z"],
    ["github_token", "token ghs_69vQJX9fE3ozdn8iZZyHYHXrYdQ7p5a3E5xC", "ghs_69vQJX9fE3ozdn8iZZyHYHXrYdQ7p5a3E5xC"],
    ["github_token", "token ghr_YpTAM3kAkXujq63ZHiOVNrHIdjKXlan062j0", "ghr_YpTAM3kAkXujq63ZHiOVNrHIdjKXlan062j0"],
    [
      "github_token",
      "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456"
    ],
    [
      "jwt",
      "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ],
    ["jwt", "unsigned eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbm9uIn0. token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbm9uIn0."],
    [
      "private_key",
      "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcd==\n-----END RSA PRIVATE KEY-----\nbye",
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcd==\n-----END RSA PRIVATE KEY-----"
    ],
    [
      "private_key",
      String.raw`"private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----\n"`,
      String.raw`-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----`
    ],
    [
      "private_key",
      "cut off: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n... (truncated)",
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
    ]
  ]

  it.each(positives)("finds %s in %j", (kind, text, value) => {
    expect(found(text)).toEqual([[kind, value]])
  })

  const negatives: ReadonlyArray<readonly [string, string]> = [
    ["dates", "due 2024-03-15, 15/03/2024, 03.15.2024, 12.03.2024 and 2024-03-15T14:30:00Z"],
    ["versions", "versions 1.2.3, v10.0.1, 2.0.0-rc.1, ^3.22.4, v1.2.3.4, 1.2.3.4-beta, effect@3.22.4, Chrome/122.0.6261.94"],
    ["four-part versions after a version word", "<AssemblyVersion>1.0.0.0</AssemblyVersion>, firmware 1.0.2.15, version=5.2.1.0"],
    ["order numbers", "order ORD-2024-000123, #123456789, PO-88231, INV-2024-0042, case 00981234"],
    ["ISBNs", "ISBN 978-3-16-148410-0, 978-0-306-40615-7, 0-306-40615-2, 3-16-148410-X"],
    ["amounts", "$1,234.56, 1 234,56 €, € 18.750,00, USD 12,500.00, 4,294,967,296"],
    ["times", "14:30, 14:30:00, 09:00-17:30, 23:59:59.999, 00:04:32"],
    ["zip codes", "San Francisco, CA 94105; 94103-1234; 75008 Paris; SW1A 1AA; 02134-1234"],
    ["tracking numbers", "UPS 1Z999AA10123456784, USPS 9400 1000 0000 0000 0000 00, FedEx 7489 2345 6782, DHL JD014600006281230704"],
    ["UUIDs and hashes", "id 123e4567-e89b-12d3-a456-426614174000 sha 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"],
    ["Luhn-invalid card numbers", "4111 1111 1111 1112, 4526018159083015, 5105 1051 0510 5101, 3782 822463 10006"],
    ["long plain numbers", "timestamp 1710500000000, id 9007199254740991, ref 1234567890123"],
    ["checksum-invalid IBANs", "DE89 3704 0044 0532 0130 01, GB29NWBK60161331926818, FR14 2004 1010 0505 0001 3M02 607"],
    ["invalid SSNs", "000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000"],
    ["a bare nine-digit number", "SSN 123456789 and routing 121000248"],
    ["invalid IPv4", "10.0.0.256, 01.02.03.04, 1.2.3.4.5, 999.1.1.1"],
    ["not IPv6", "std::vector<int>, Vec::new(), a::b, 00:1A:2B:3C:4D:5E, 16:9, listen [::]:8080"],
    ["the unspecified address", "bind 0.0.0.0:8080"],
    ["not emails", "icon@2x.png, @channel, user@localhost, git@github.com:org/repo.git, ssh://git@github.com/a/b.git"],
    ["not phones", "extension 4412, 24/7, score 3-2, 10-12 days, +1 to that, +20 000 000 users, EIN 12-3456789"],
    ["numbers after words that merely contain a phone word", "hotel: 4155550132, graph: 4155550132, order number 123456789"],
    ["not keys", "sk-learn-tutorial-for-beginners-2024, sk_test_not_an_openai_key, AKIA1234, ghp_short"],
    ["not a JWT", "eyJ0eXAiOiJ4In0.eyJhIjoxfQ.gcG9qpVTzqA05MFsHl7U (header without alg)"],
    ["a public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC\n-----END PUBLIC KEY-----"]
  ]

  it.each(negatives)("leaves %s untouched", (_name, text) => {
    const result = Pii.scrub(text)
    expect(result.findings).toEqual([])
    expect(result.text).toBe(text)
  })
})

describe("Pii.scrub: offsets, numbering, restore", () => {
  it("reports offsets in the original text and replaces exactly those spans", () => {
    const text = "Mail ann@example.com or call +44 20 7946 0958; card 4111 1111 1111 1111."
    const result = Pii.scrub(text)
    expect(result.findings.map((f) => ({ kind: f.kind, start: f.start, end: f.end, placeholder: f.placeholder }))).toEqual([
      { kind: "email", start: 5, end: 20, placeholder: "<EMAIL_1>" },
      { kind: "phone", start: 29, end: 45, placeholder: "<PHONE_1>" },
      { kind: "card", start: 52, end: 71, placeholder: "<CARD_1>" }
    ])
    for (const f of result.findings) expect(text.slice(f.start, f.end)).toBe(f.value)
    expect(result.text).toBe("Mail <EMAIL_1> or call <PHONE_1>; card <CARD_1>.")
  })

  it("omits values when asked, and detects only the kinds asked for", () => {
    const result = Pii.scrub("ann@example.com 4111 1111 1111 1111", { includeValues: false, kinds: ["card"] })
    expect(result.text).toBe("ann@example.com <CARD_1>")
    expect(result.findings).toEqual([{ kind: "card", start: 16, end: 35, placeholder: "<CARD_1>" }])
  })

  it("keeps a value's placeholder across calls; new values get the next number of their kind", () => {
    const scrubber = Pii.makeScrubber()
    expect(scrubber.scrub("from ann@example.com").text).toBe("from <EMAIL_1>")
    expect(scrubber.scrub("to bo@example.org, cc ann@example.com, call 415-555-0132").text).toBe(
      "to <EMAIL_2>, cc <EMAIL_1>, call <PHONE_1>"
    )
    // Another spelling of the same value: the same placeholder (emails ignore case, phones their format).
    expect(scrubber.scrub("ANN@EXAMPLE.COM, (415) 555-0132, +1 415 555 0132").text).toBe("<EMAIL_1>, <PHONE_1>, <PHONE_1>")
    expect([...scrubber.placeholders]).toEqual([
      ["<EMAIL_1>", "ann@example.com"],
      ["<EMAIL_2>", "bo@example.org"],
      ["<PHONE_1>", "415-555-0132"]
    ])
  })

  it("restore puts the values back and leaves unknown placeholders and other text alone", () => {
    const scrubber = Pii.makeScrubber()
    const original = "Pay DE89 3704 0044 0532 0130 00 from 10.0.0.1, mail ann@example.com."
    const scrubbed = scrubber.scrub(original)
    expect(scrubbed.text).toBe("Pay <IBAN_1> from <IPV4_1>, mail <EMAIL_1>.")
    expect(scrubber.restore(scrubbed.text)).toBe(original)
    expect(Pii.restore("<EMAIL_1> and <EMAIL_9> and <NOT_A_KIND_1>", scrubber.placeholders)).toBe(
      "ann@example.com and <EMAIL_9> and <NOT_A_KIND_1>"
    )
  })

  it("a JSON-escaped newline in plain text is not part of the value", () => {
    const text = String.raw`{"msg":"contact:\nann@example.com\ncard=\n4111 1111 1111 1111"}`
    expect(Pii.scrub(text).text).toBe(String.raw`{"msg":"contact:\n<EMAIL_1>\ncard=\n<CARD_1>"}`)
  })
})

// ------------------------------------------------------------------------------------------ middleware

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

interface Note {
  readonly middleware: string
  readonly note: string
  readonly data: Json.Json
}

const makeContext = (runId: string, notes: Array<Note> = [], tenantId = tenant.tenantId): Middleware.CallContext => ({
  runId,
  rootRunId: runId,
  tenant: Tenant.TenantContext.make({ ...tenant, tenantId }),
  stepKey: "model:0",
  spentUsd: 0,
  note: (middleware, note, data) => Effect.sync(() => void notes.push({ middleware, note, data }))
})

const request = (messages: ReadonlyArray<Chat.ChatMessage>): ModelPort.ModelRequest => ({ model: "m", messages, tools: [] })

const beforeModel = (interceptor: Middleware.Interceptor, messages: ReadonlyArray<Chat.ChatMessage>, context: Middleware.CallContext) =>
  interceptor.beforeModel === undefined ? Effect.die("no beforeModel") : interceptor.beforeModel(request(messages), context)

/** Tells `interceptor` of a logged call a replay passed, as the kernel does. */
const replayed = (interceptor: Middleware.Interceptor, raw: ReadonlyArray<Chat.ChatMessage>, sent: ReadonlyArray<Chat.ChatMessage>, context: Middleware.CallContext) =>
  interceptor.replayedModel?.({ request: request(raw), sent, reply: undefined }, context)

const beforeTool = (interceptor: Middleware.Interceptor, args: string, context: Middleware.CallContext) =>
  interceptor.beforeTool === undefined
    ? Effect.die("no beforeTool")
    : interceptor.beforeTool({ tool: "send_email", requiresCapability: undefined, arguments: args }, context)

describe("Pii.middleware (interceptor)", () => {
  const conversation: ReadonlyArray<Chat.ChatMessage> = [
    Chat.system("Support bot. Escalations: +44 20 7946 0958."),
    Chat.user("I am ann@example.com, card 4111 1111 1111 1111."),
    Chat.assistant(null, [{ id: "c1", name: "lookup", arguments: JSON.stringify({ email: "<EMAIL_1>" }) }]),
    { role: "tool", toolCallId: "c1", name: "lookup", content: JSON.stringify({ manager: "bo@example.org", note: "line\nann@example.com" }) },
    Chat.assistant("Your manager is <EMAIL_2>."),
    Chat.user("Also cc carl@example.net and bo@example.org")
  ]

  it.effect("scrubs every role, tool results and tool-call arguments, keeping JSON valid; notes counts only", () =>
    Effect.gen(function*() {
      const notes: Array<Note> = []
      const pii = Pii.middleware()
      // The conversation's placeholders were issued by the earlier requests of the run (the model saw them there).
      for (const n of [2, 4]) yield* beforeModel(pii, conversation.slice(0, n), makeContext("r1"))
      const sent = yield* beforeModel(pii, [
        ...conversation,
        Chat.assistant("ok", [{ id: "c2", name: "charge", arguments: String.raw`{"card": 4111111111111111, "memo": "for\nann@example.com"}` }])
      ], makeContext("r1", notes))
      expect(sent.messages.map((m) => m.content)).toEqual([
        "Support bot. Escalations: <PHONE_1>.",
        "I am <EMAIL_1>, card <CARD_1>.",
        null,
        JSON.stringify({ manager: "<EMAIL_2>", note: "line\n<EMAIL_1>" }),
        "Your manager is <EMAIL_2>.",
        "Also cc <EMAIL_3> and <EMAIL_2>",
        "ok"
      ])
      const last = sent.messages[6]
      expect(last?.role === "assistant" ? JSON.parse(last.toolCalls?.[0]?.arguments ?? "") : undefined).toEqual({
        card: "<CARD_1>",
        memo: "for\n<EMAIL_1>"
      })
      expect(notes).toEqual([{
        middleware: "pii",
        note: "scrubbed",
        data: { total: 9, counts: { phone: 1, email: 6, card: 2 }, distinct: { phone: 1, email: 3, card: 1 } }
      }])
    }))

  it.effect("another process reads the numbering back from the replayed calls and numbers a grown list as the first did", () =>
    Effect.gen(function*() {
      const first = Pii.middleware()
      const context = makeContext("r1")
      const calls = [conversation.slice(0, 2), conversation.slice(0, 4)]
      const sent: Array<ReadonlyArray<Chat.ChatMessage>> = []
      for (const messages of calls) sent.push((yield* beforeModel(first, messages, context)).messages)
      const grown = yield* beforeModel(first, conversation, context)
      expect(grown.messages[5]?.content).toBe("Also cc <EMAIL_3> and <EMAIL_2>")
      // Replayed in either order (concurrent branches may be reached in another order): the same numbering.
      for (const order of [[0, 1], [1, 0]]) {
        const resumed = Pii.middleware()
        for (const i of order) replayed(resumed, calls[i]!, sent[i]!, makeContext("r1"))
        expect((yield* beforeModel(resumed, conversation, makeContext("r1"))).messages).toEqual(grown.messages)
      }
    }))

  it.effect("a value is never given a placeholder the request already holds, issued or not by this process", () =>
    Effect.gen(function*() {
      // Another run's (or an evicted numbering's) <EMAIL_1> comes in a message after a new address.
      const sent = yield* beforeModel(Pii.middleware(), [Chat.system("Escalations: bob@example.org"), Chat.user("From <EMAIL_1> and <EMAIL_2>: refund")], makeContext("r1"))
      expect(sent.messages.map((m) => m.content)).toEqual(["Escalations: <EMAIL_3>", "From <EMAIL_1> and <EMAIL_2>: refund"])
    }))

  it.effect("a placeholder the log shows standing for two values is never restored", () =>
    Effect.gen(function*() {
      const pii = Pii.middleware({ restoreToolArguments: true })
      // A log written before numbering read placeholders first: ann and then bob were both sent as <EMAIL_1>.
      replayed(pii, [Chat.user("ann@example.com")], [Chat.user("<EMAIL_1>")], makeContext("r1"))
      replayed(pii, [Chat.system("bob@example.org"), Chat.user("<EMAIL_1>")], [Chat.system("<EMAIL_1>"), Chat.user("<EMAIL_1>")], makeContext("r1"))
      const denied = yield* Effect.either(beforeTool(pii, JSON.stringify({ to: "<EMAIL_1>" }), makeContext("r1")))
      expect(Either.isLeft(denied) && denied.left._tag === "PolicyDenied" && denied.left.reason).toContain("two different values")
      // A new value is numbered after both.
      const next = yield* beforeModel(pii, [Chat.user("carl@example.net")], makeContext("r1"))
      expect(next.messages[0]?.content).toBe("<EMAIL_2>")
    }))

  it.effect("scrubs the offered tools' descriptions and parameter schemas (an MCP server's text), keeping property names", () =>
    Effect.gen(function*() {
      const notes: Array<Note> = []
      const spec = {
        name: "escalate",
        description: "Escalates to the on-call lead, bob@example.org (+44 20 7946 0958).",
        parameters: {
          type: "object",
          properties: { "ann@example.com": { type: "boolean" }, to: { type: "string", enum: ["ann@example.com", "team"], description: "Who" } },
          required: ["to"]
        }
      }
      const pii = Pii.middleware()
      const sent = yield* pii.beforeModel!({ model: "m", messages: [Chat.user("write to ann@example.com")], tools: [spec] }, makeContext("r1", notes))
      expect(sent.tools).toEqual([{
        name: "escalate",
        description: "Escalates to the on-call lead, <EMAIL_2> (<PHONE_1>).",
        parameters: {
          type: "object",
          properties: { "ann@example.com": { type: "boolean" }, to: { type: "string", enum: ["<EMAIL_1>", "team"], description: "Who" } },
          required: ["to"]
        }
      }])
      expect(notes[0]?.data).toMatchObject({ total: 4, counts: { email: 3, phone: 1 } })
      // Nothing to scrub: the same specs.
      const plain = { name: "noop", description: "Does nothing", parameters: { type: "object" } }
      const untouched = yield* pii.beforeModel!({ model: "m", messages: [Chat.user("hi")], tools: [plain] }, makeContext("r1"))
      expect(untouched.tools[0]).toBe(plain)
    }))

  it.effect("writes no note and returns the request unchanged when there is nothing to scrub", () =>
    Effect.gen(function*() {
      const notes: Array<Note> = []
      const messages = [Chat.user("Order ORD-2024-000123 shipped on 2024-03-15 for $1,234.56")]
      const sent = yield* beforeModel(Pii.middleware(), messages, makeContext("r1", notes))
      expect(sent.messages).toBe(messages)
      expect(notes).toEqual([])
    }))

  it.effect("scrubs only the configured kinds", () =>
    Effect.gen(function*() {
      const sent = yield* beforeModel(Pii.middleware({ kinds: ["email"] }), conversation.slice(0, 2), makeContext("r1"))
      expect(sent.messages[1]?.content).toBe("I am <EMAIL_1>, card 4111 1111 1111 1111.")
    }))

  it.effect("has no beforeTool unless restoreToolArguments is set", () =>
    Effect.sync(() => {
      expect(Pii.middleware().beforeTool).toBeUndefined()
      expect(Pii.middleware({ restoreToolArguments: true }).beforeTool).toBeDefined()
    }))

  it.effect("restores only placeholders issued for the same run, and notes counts", () =>
    Effect.gen(function*() {
      const pii = Pii.middleware({ restoreToolArguments: true })
      for (const n of [2, 4, 6]) yield* beforeModel(pii, conversation.slice(0, n), makeContext("r1"))
      yield* beforeModel(pii, [Chat.user("no personal data here")], makeContext("r2"))
      const args = JSON.stringify({ to: "<EMAIL_2>", cc: ["<EMAIL_1>", "<EMAIL_7>"], body: "card <CARD_1>" })
      const notes: Array<Note> = []
      const restored = yield* beforeTool(pii, args, makeContext("r1", notes))
      expect(JSON.parse(restored.arguments)).toEqual({
        to: "bo@example.org",
        cc: ["ann@example.com", "<EMAIL_7>"],
        body: "card 4111 1111 1111 1111"
      })
      expect(notes).toEqual([{ middleware: "pii", note: "restored", data: { total: 3, counts: { email: 2, card: 1 }, distinct: { email: 2, card: 1 } } }])
      // Run r2 never saw those values: nothing is restored, and the same run id under another tenant is another run.
      expect((yield* beforeTool(pii, args, makeContext("r2"))).arguments).toBe(args)
      const otherTenant = yield* Effect.either(beforeTool(pii, args, makeContext("r1", [], "globex")))
      expect(Either.isLeft(otherTenant) && otherTenant.left._tag).toBe("PolicyDenied")
    }))

  it.effect("denies a call holding placeholders when this process has no numbering for the run", () =>
    Effect.gen(function*() {
      const pii = Pii.middleware({ restoreToolArguments: true, maxCachedRuns: 1 })
      const args = JSON.stringify({ to: "<EMAIL_1>" })
      const denied = yield* Effect.either(beforeTool(pii, args, makeContext("r1")))
      expect(Either.isLeft(denied) && denied.left._tag === "PolicyDenied" && denied.left.reason).toContain("<EMAIL_1>")
      // Arguments without placeholders pass untouched.
      expect((yield* beforeTool(pii, `{"to":"x"}`, makeContext("r1"))).arguments).toBe(`{"to":"x"}`)
      yield* beforeModel(pii, conversation.slice(0, 2), makeContext("r1"))
      expect(JSON.parse((yield* beforeTool(pii, args, makeContext("r1"))).arguments)).toEqual({ to: "ann@example.com" })
      // With room for one run, another run evicts r1: its calls are denied, and its next request numbers after the
      // placeholders it holds (the evicted numbering's values are not known here, so none is handed out again).
      yield* beforeModel(pii, [Chat.user("carl@example.net")], makeContext("r2"))
      expect(Either.isLeft(yield* Effect.either(beforeTool(pii, args, makeContext("r1"))))).toBe(true)
      const again = yield* beforeModel(pii, conversation, makeContext("r1"))
      expect(again.messages[1]?.content).toBe("I am <EMAIL_3>, card <CARD_1>.")
      expect(JSON.parse((yield* beforeTool(pii, args, makeContext("r1"))).arguments)).toEqual({ to: "<EMAIL_1>" })
    }))
})

// ---------------------------------------------------------------------------------------------- kernel

const EMAIL = "ann.lee@example.com"
const OTHER = "bo.chen@example.org"
const CARD = "4111 1111 1111 1111"
const KEY = "sk-proj-ke4R1J-dBi2ewQr8t4_lC4LvGNWAMsI_z0oaWdfZp-lvi60ZIF8_qR38Ony1"
const RAW = [EMAIL, OTHER, CARD, "4111111111111111", KEY]

const leaks = (value: unknown): ReadonlyArray<string> => {
  const text = JSON.stringify(value)
  return RAW.filter((raw) => text.includes(raw))
}

const makeTools = (received: Array<string>, crash: { on: boolean } = { on: false }) => [
  Tool.make({
    name: "send_email",
    description: "Sends an email",
    parameters: Schema.Struct({ to: Schema.String, body: Schema.String }),
    idempotent: true,
    handler: ({ body, to }) => Effect.sync(() => (received.push(`send_email:${to}:${body}`), { sent: true, to }))
  }),
  Tool.make({
    name: "lookup_manager",
    description: "The manager of a person, by email",
    parameters: Schema.Struct({ email: Schema.String }),
    idempotent: true,
    handler: ({ email }) => Effect.sync(() => (received.push(`lookup_manager:${email}`), { manager: OTHER }))
  }),
  notifyTool(received, crash)
]


const call = (id: string, name: string, args: Json.Json): ScriptedModel.Reply => ({ content: null, toolCalls: [{ id, name, arguments: args }] })

const noRawValues = (request: ModelPort.ModelRequest): string | undefined => {
  const leaked = leaks(request.messages)
  return leaked.length === 0 ? undefined : `the model received ${leaked.join(", ")}`
}

const messages = [
  Chat.system("You help with receipts."),
  Chat.user(`Email ${EMAIL} the receipt for card ${CARD}. My key is ${KEY}, do not lose it.`)
]

describe("Pii.middleware in a kernel", () => {
  const received: Array<string> = []

  it.effect("the model and the log see placeholders; notes carry counts; the tool gets the real address", () => {
    received.length = 0
    const script = [
      { ...call("c1", "send_email", { to: "<EMAIL_1>", body: "Receipt for <CARD_1>" }), expect: noRawValues },
      { ...ScriptedModel.text("Sent to <EMAIL_1>."), expect: noRawValues }
    ]
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({ runId: "pii-1", tenant, messages })
      expect(result.status).toBe("completed")
      const requests = (yield* ScriptedModel.ScriptedModel).requests()
      expect(requests[0]?.messages[1]?.content).toBe("Email <EMAIL_1> the receipt for card <CARD_1>. My key is <OPENAI_KEY_1>, do not lose it.")
      // The tool's result names the address again: the next request numbers it the same.
      expect(requests[1]?.messages[3]).toMatchObject({ role: "tool", content: JSON.stringify({ sent: true, to: "<EMAIL_1>" }) })
      expect(received).toEqual([`send_email:${EMAIL}:Receipt for ${CARD}`])

      const events = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenant.tenantId, "pii-1"))
      const requested = events.filter((e) => e.payload._tag === "ModelRequested")
      expect(requested).toHaveLength(2)
      expect(leaks(requested)).toEqual([])
      const notes = events.flatMap((e) => (e.payload._tag === "MiddlewareNote" && e.payload.middleware === "pii" ? [e.payload] : []))
      expect(notes.map((n) => n.note)).toEqual(["scrubbed", "restored", "scrubbed"])
      expect(notes[0]?.data).toEqual({
        total: 3,
        counts: { email: 1, card: 1, openai_key: 1 },
        distinct: { email: 1, card: 1, openai_key: 1 }
      })
      expect(notes[1]?.data).toEqual({ total: 2, counts: { email: 1, card: 1 }, distinct: { email: 1, card: 1 } })
      expect(leaks(notes)).toEqual([])
    }).pipe(Effect.provide(kernelLayer(script, makeTools(received), [Pii.middleware({ restoreToolArguments: true })])))
  })

  it.effect("without restoreToolArguments the tool receives the placeholder", () => {
    received.length = 0
    const script = [call("c1", "send_email", { to: "<EMAIL_1>", body: "hi" }), ScriptedModel.text("done")]
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "pii-2", tenant, messages })
      expect(received).toEqual(["send_email:<EMAIL_1>:hi"])
    }).pipe(Effect.provide(kernelLayer(script, makeTools(received), [Pii.middleware()])))
  })

  it.effect("after a crash, another process (a fresh middleware) resumes with the same numbering and restores", () => {
    received.length = 0
    const crash = { on: true }
    const tools = makeTools(received, crash)
    return Effect.gen(function*() {
      const store = Layer.succeed(EventStore.EventStore, yield* EventStore.makeMemory)
      // Process A: looks up the manager (a new address enters through a tool result), then dies in `notify`.
      const processA = kernelLayer(
        [call("a1", "lookup_manager", { email: "<EMAIL_1>" }), call("a2", "notify", { to: "<EMAIL_2>" })],
        tools,
        [Pii.middleware({ restoreToolArguments: true })],
        store
      )
      const requestsA = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const crashed = yield* Effect.exit(kernel.chat({ runId: "pii-crash", tenant, messages }))
        expect(Exit.isFailure(crashed)).toBe(true)
        return (yield* ScriptedModel.ScriptedModel).requests()
      }).pipe(Effect.provide(processA))

      // Process B: replays the log, re-runs the in-doubt idempotent `notify`, and makes the next model call live.
      crash.on = false
      const processB = kernelLayer(
        [{ ...call("b1", "send_email", { to: "<EMAIL_1>", body: "cc <EMAIL_2>" }), expect: noRawValues }, ScriptedModel.text("done")],
        tools,
        [Pii.middleware({ restoreToolArguments: true })],
        store
      )
      const requestsB = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const resumed = yield* kernel.chat({ runId: "pii-crash", tenant, messages })
        expect(resumed.status).toBe("completed")
        return (yield* ScriptedModel.ScriptedModel).requests()
      }).pipe(Effect.provide(processB))

      // B's first request extends A's last one, numbered identically.
      const lastA = requestsA[requestsA.length - 1]!.messages
      expect(requestsB[0]?.messages.slice(0, lastA.length)).toEqual(lastA)
      expect(lastA[3]).toMatchObject({ role: "tool", content: JSON.stringify({ manager: "<EMAIL_2>" }) })
      expect(received).toEqual([
        `lookup_manager:${EMAIL}`,
        `notify:${OTHER}`,
        `notify:${OTHER}`,
        `send_email:${EMAIL}:cc ${OTHER}`
      ])
    })
  })

  it.effect("another process resuming a run of two chats restores the value the model meant, not a later chat's", () => {
    received.length = 0
    const crash = { on: true }
    const tools = makeTools(received, crash)
    // Chat one notes the customer (ann); a tool; chat two holds bob's address in its system message and passes on
    // what chat one answered (`<EMAIL_1>`, ann's placeholder).
    const workflow = Workflow.make({
      name: "two-chats",
      input: Schema.String,
      output: Schema.String,
      run: (customer, ctx) =>
        Effect.gen(function*() {
          const noted = yield* ctx.chat({ messages: [Chat.user(`The customer is ${customer}.`)], tools: [] })
          yield* ctx.tool("notify", { to: "team" })
          const sent = yield* ctx.chat({
            messages: [Chat.system(`Escalations go to ${OTHER}.`), Chat.user(`Email the customer a receipt. Notes: ${noted.output}`)],
            tools: ["send_email"]
          })
          return sent.output
        })
    })
    return Effect.gen(function*() {
      const store = Layer.succeed(EventStore.EventStore, yield* EventStore.makeMemory)
      const middleware = () => [Pii.middleware({ restoreToolArguments: true })]
      // Process A: chat one, then dies in `notify`.
      const processA = kernelLayer([ScriptedModel.text("Customer: <EMAIL_1>.")], tools, middleware(), store)
      const crashed = yield* Effect.exit(Effect.flatMap(Kernel.Kernel, (k) => k.execute(workflow, { runId: "pii-two", tenant, input: EMAIL })).pipe(Effect.provide(processA)))
      expect(Exit.isFailure(crashed)).toBe(true)
      // Process B: replays chat one from the log, re-runs `notify`, and makes chat two live.
      crash.on = false
      const processB = kernelLayer([call("b1", "send_email", { to: "<EMAIL_1>", body: "receipt" }), ScriptedModel.text("done")], tools, middleware(), store)
      const requests = yield* Effect.gen(function*() {
        const result = yield* Effect.flatMap(Kernel.Kernel, (k) => k.execute(workflow, { runId: "pii-two", tenant, input: EMAIL }))
        expect(result.status).toBe("completed")
        return (yield* ScriptedModel.ScriptedModel).requests()
      }).pipe(Effect.provide(processB))
      // Bob is not given ann's placeholder, and the tool gets ann's address.
      expect(requests[0]?.messages.map((m) => m.content)).toEqual([
        "Escalations go to <EMAIL_2>.",
        "Email the customer a receipt. Notes: Customer: <EMAIL_1>."
      ])
      expect(received.filter((r) => r.startsWith("send_email"))).toEqual([`send_email:${EMAIL}:receipt`])
    })
  })
})
