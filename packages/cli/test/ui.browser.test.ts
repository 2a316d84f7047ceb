// `artana ui` in a real browser: Debian's chromium driven by playwright-core (no browser is downloaded; `.ci/run`
// installs chromium when missing, and a missing one fails here). The real `artana ui` process serves a seeded SQLite
// file: the runs list and its filters, a run's page, the lineage tree with each subtree's spend, a tampered run's broken
// badge, and, with --allow-actions, approving a paused plan step from the inbox, after which the run completes. Each
// test saves screenshots under test-output/ui/.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { artanaJson, cleanup, planWorkspace, tempDir } from "./helpers.js"
import { screenshotPath, seededSqlite, startUi, tamper, type Ui } from "./uiHelpers.js"

const chromiumPath = (): string => {
  for (const candidate of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) if (fs.existsSync(candidate)) return candidate
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim()
  } catch {
    throw new Error("Debian's chromium is not installed: apt-get install -y chromium (the browser tests never download one)")
  }
}

const scope = Effect.runSync(Scope.make())
let browser: Browser
let readOnly: Ui
let actions: Ui
let planDir: string

const POLICY = `default: deny
tools:
  fs.read:  { allow: true, paths: ["workspace/**"] }
  fs.write: { allow: true, paths: ["workspace/out/**"], approval: required }
`
const PLAN = `steps:
  - { id: notes, tool: fs.read, args: { path: workspace/notes.txt } }
  - { id: save, tool: fs.write, args: { path: workspace/out/summary.txt, content: "draft" } }
`

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-gpu"] })
  const dir = tempDir()
  const db = path.join(dir, "runs.db")
  await Effect.runPromise(seededSqlite(db))
  tamper(db)
  readOnly = await Effect.runPromise(Scope.extend(startUi(["--db", db, "--tenant", "acme"], dir), scope))
  // A plan paused at a step that needs approval, in its own workspace.
  planDir = planWorkspace(PLAN, POLICY)
  const paused = await Effect.runPromise(artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "plan-1"], { cwd: planDir }))
  expect(paused.code).toBe(8)
  actions = await Effect.runPromise(Scope.extend(startUi(["--allow-actions", "--approver", "ops"], planDir), scope))
}, 600_000)

afterAll(async () => {
  await browser?.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  cleanup()
})

const open = async (url: string): Promise<Page> => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  await page.goto(url)
  return page
}

const runIds = (page: Page) => page.locator("table.runs tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-run")))

/** Clicks what navigates, and waits until the page it leads to (its URL passing `to`) has loaded. */
const follow = async (page: Page, selector: string, to: (url: URL) => boolean) => {
  await Promise.all([page.waitForURL(to), page.click(selector)])
}

/** For `expect.poll`: a page of a busy machine's browser takes seconds to show, not the default second. */
const SLOW = { timeout: 60_000 }

describe("artana ui in chromium", () => {
  it("lists the tenant's runs newest first, filters them, pages them, and opens one with its timeline and steps", async () => {
    const page = await open(`${readOnly.url}?tenant=acme`)
    expect(await runIds(page)).toEqual(["tampered", "long::continued::1", "long", "research::sub_agent::b", "research::sub_agent::a::sub_agent::x", "research::sub_agent::a", "research"])
    await page.screenshot({ path: screenshotPath("runs-list"), fullPage: true })

    await page.fill("input[name=minCost]", "0.2")
    await follow(page, "form.filters button[type=submit]", (url) => url.searchParams.get("minCost") === "0.2")
    expect(await runIds(page)).toEqual(["research::sub_agent::a", "research"])
    await page.goto(`${readOnly.url}?tenant=acme&status=completed&limit=2`)
    const pages: Array<ReadonlyArray<string | null>> = [await runIds(page)]
    while (await page.locator("a.next").count() > 0) {
      const next = new URL((await page.locator("a.next").getAttribute("href"))!, page.url()).href
      await follow(page, "a.next", (url) => url.href === next)
      pages.push(await runIds(page))
    }
    expect(pages.flat()).toEqual(["tampered", "long::continued::1", "research::sub_agent::b", "research::sub_agent::a::sub_agent::x", "research::sub_agent::a", "research"])
    expect(pages.every((p) => p.length <= 2)).toBe(true)

    await page.goto(`${readOnly.url}?tenant=acme`)
    await page.click("a.run-link >> text=research::sub_agent::a::sub_agent::x")
    await expect.poll(() => page.locator("h1 .run-id").textContent(), SLOW).toBe("research::sub_agent::a::sub_agent::x")
    await page.waitForLoadState("load")
    expect(await page.locator("#timeline tr").evaluateAll((rows) => rows.map((r) => r.querySelector("td.type")?.textContent))).toEqual(["RunStarted", "ModelRequested", "ModelCompleted", "RunCompleted"])
    // The model request as sent, in the event's details.
    await page.click("#seq-2 summary")
    expect(await page.locator("#seq-2 pre").textContent()).toContain("What were Q3's revenues?")
    const modelStep = page.locator("table.steps tr", { hasText: "ModelCompleted" })
    expect(await modelStep.locator("td").allTextContents()).toEqual(expect.arrayContaining(["100", "20", "$0.1250"]))
    await expect.poll(() => page.locator("[data-chain]").getAttribute("data-chain"), SLOW).toBe("ok")
    expect(await page.locator("#chain .totals").textContent()).toContain("1 model calls · 100 tokens in · 20 tokens out")
    await page.screenshot({ path: screenshotPath("run-page"), fullPage: true })
    await page.close()
  })

  it("draws the lineage tree with each run's and each subtree's spend, and a continue-as-new successor beside its run", async () => {
    const page = await open(`${readOnly.url}runs/${encodeURIComponent("research::sub_agent::a")}?tenant=acme`)
    const root = page.locator("#lineage ul.tree > li[data-run='research']")
    expect(await root.locator(":scope > .spend").textContent()).toBe("$0.5000 · subtree $0.9375")
    const a = root.locator("li[data-run='research::sub_agent::a']")
    expect(await a.locator(":scope > .spend").textContent()).toBe("$0.2500 · subtree $0.3750")
    expect(await a.locator(":scope > a").getAttribute("aria-current")).toBe("page")
    expect(await a.locator("li[data-run='research::sub_agent::a::sub_agent::x'] > .spend").textContent()).toBe("$0.1250 · subtree $0.1250")
    expect(await root.locator("li[data-run='research::sub_agent::b'] > .spend").textContent()).toBe("$0.0625 · subtree $0.0625")
    expect(await page.locator("#lineage-cost").textContent()).toBe("$0.9375")
    await page.screenshot({ path: screenshotPath("lineage"), fullPage: true })

    await page.goto(`${readOnly.url}runs/long?tenant=acme`)
    expect(await page.locator("#lineage li.continued li[data-run='long::continued::1']").count()).toBe(1)
    await page.screenshot({ path: screenshotPath("lineage-continued"), fullPage: true })
    await page.close()
  })

  it("marks a run whose log was edited by hand: the broken badge names the seq, and its row is marked", async () => {
    const page = await open(`${readOnly.url}runs/tampered?tenant=acme`)
    await expect.poll(() => page.locator("[data-chain]").getAttribute("data-chain"), SLOW).toBe("broken")
    expect(await page.locator("[data-chain]").getAttribute("data-broken-seq")).toBe("2")
    expect(await page.locator("#chain").textContent()).toContain("TAMPERED: hash chain broken at seq 2")
    expect(await page.locator("#seq-2").getAttribute("class")).toContain("broken")
    expect(await page.locator("#seq-1").getAttribute("class")).not.toContain("broken")
    await page.screenshot({ path: screenshotPath("tampered"), fullPage: true })
    await page.close()
  })

  it("another site cannot frame the inbox (clickjacking): the frame is refused, a click over it approves nothing", async () => {
    const inbox = await fetch(`${actions.url}inbox`)
    expect(inbox.headers.get("x-frame-options")).toBe("DENY")
    expect(inbox.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
    // The attacker's page, another origin: the inbox in an invisible frame over a decoy button.
    const attacker = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" })
      res.end(`<!doctype html><body style="margin:0"><button style="position:absolute;left:0;top:0;width:1280px;height:900px">Win</button>
<iframe src="${actions.url}inbox" style="position:absolute;left:0;top:0;width:1280px;height:900px;opacity:0.01;border:0"></iframe></body>`)
    })
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", () => resolve()))
    try {
      const page = await open(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`)
      const frame = page.frames().find((f) => f !== page.mainFrame())!
      await frame.waitForLoadState()
      expect(await frame.locator("form[action='/actions/approve']").count()).toBe(0)
      // Where the inbox's first Approve button would be.
      await page.mouse.click(640, 200)
      await page.close()
    } finally {
      await new Promise<void>((resolve) => attacker.close(() => resolve()))
    }
    const still = await open(`${actions.url}inbox`)
    expect(await still.locator("tr[data-approval^='plan-1@']").count()).toBe(1)
    await still.close()
  })

  it("approves a paused plan step from the inbox (--allow-actions): the run goes on and completes", async () => {
    const page = await open(`${actions.url}inbox`)
    const row = page.locator("tr[data-approval^='plan-1@']")
    expect(await row.locator("td").nth(2).textContent()).toBe("fs.write")
    expect(fs.existsSync(path.join(planDir, "workspace/out/summary.txt"))).toBe(false)
    await page.screenshot({ path: screenshotPath("inbox"), fullPage: true })
    await row.locator("form[action='/actions/approve'] button").click()
    await page.waitForURL(/\/runs\/plan-1/)
    expect(await page.locator("h1 [data-status]").getAttribute("data-status")).toBe("completed")
    expect(await page.locator("#timeline td.type").allTextContents()).toEqual(expect.arrayContaining(["ApprovalDecided", "ToolCompleted", "RunCompleted"]))
    expect(fs.readFileSync(path.join(planDir, "workspace/out/summary.txt"), "utf8")).toBe("draft")
    await page.screenshot({ path: screenshotPath("approved"), fullPage: true })
    await page.goto(`${actions.url}inbox`)
    expect(await page.locator("tr[data-approval]").count()).toBe(0)

    // The read-only server shows the commands instead of forms.
    await page.goto(`${readOnly.url}inbox?tenant=default`)
    expect(await page.locator("form.action").count()).toBe(0)
    await page.close()
  })
})
