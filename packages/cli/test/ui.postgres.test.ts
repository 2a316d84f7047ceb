// `artana ui` on PostgreSQL (--db postgres://...), over HTTP: the runs list and its cursor, a run's page with its
// lineage spend, and its chain badge. A fresh database on the server the global setup provides (ARTANA_TEST_PG_URL, or
// a throwaway cluster); under CI=true a missing server fails the run.
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { inject } from "vitest"
import { cleanup, tempDir } from "./helpers.js"
import { seed, startUi } from "./uiHelpers.js"

afterAll(cleanup)

const pg = PgTest.server(inject("artanaPg"))

const text = (url: string) => Effect.promise(() => fetch(url).then(async (r) => ({ status: r.status, body: await r.text() })))

describe.skipIf(pg.url === undefined)(`artana ui on PostgreSQL (${pg.description})`, () => {
  it.live("lists and pages the runs, shows a run with its lineage spend, and verifies its chain", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      yield* Effect.provide(seed, PostgresStore.layer({ url }))
      const ui = yield* startUi(["--db", url, "--tenant", "acme"], tempDir())
      const first = yield* text(`${ui.url}?tenant=acme&limit=3`)
      expect(first.status).toBe(200)
      const ids = (body: string) => [...body.matchAll(/<tr data-run="([^"]+)"/g)].map((m) => m[1])
      expect(ids(first.body)).toEqual(["tampered", "long::continued::1", "long"])
      const next = /class="next" rel="next" href="([^"]+)"/.exec(first.body)?.[1]?.replace(/&amp;/g, "&")
      expect(next).toBeDefined()
      const second = yield* text(new URL(next!, ui.url).href)
      expect(ids(second.body)).toEqual(["research::sub_agent::b", "research::sub_agent::a::sub_agent::x", "research::sub_agent::a"])
      const costly = yield* text(`${ui.url}?tenant=acme&minCost=0.2`)
      expect(ids(costly.body)).toEqual(["research::sub_agent::a", "research"])

      const run = yield* text(`${ui.url}runs/research?tenant=acme`)
      expect(run.status).toBe(200)
      expect(run.body).toContain("$0.5000 · subtree $0.9375")
      expect(run.body).toContain("id=\"seq-3\"")
      const chain = yield* text(`${ui.url}runs/research/chain?tenant=acme`)
      expect(chain.body).toContain("data-chain=\"ok\"")
      expect((yield* text(`${ui.url}runs/nope?tenant=acme`)).status).toBe(404)
      // The URL's password is never shown.
      expect(run.body).not.toContain(new URL(url).password || "no-password-in-url")
    }).pipe(Effect.scoped))
})
