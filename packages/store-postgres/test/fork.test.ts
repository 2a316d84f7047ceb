// Forks on PostgreSQL (core's ForkSuite): the prefix copied in one transaction, a page at a time; a copy that fails
// midway leaves no fork; the original untouched; another tenant's run not found. One fresh database per test.
import { describe } from "@effect/vitest"
import { inject } from "vitest"
import { ForkSuite } from "@artana/core/testing/suites"
import { PgTest } from "@artana/store-postgres/testing"
import { freshStore } from "./pg.js"

const pg = PgTest.server(inject("artanaPg"))

describe.skipIf(pg.url === undefined)(`on PostgreSQL (${pg.description})`, () => {
  ForkSuite.suite("postgres", () => freshStore(pg.url!))
})
