// Forks on a SQLite file (core's ForkSuite): the prefix copied in one transaction, a page at a time; a copy that
// fails midway leaves no fork; the original untouched; another tenant's run not found.
import { afterAll } from "@effect/vitest"
import { ForkSuite } from "@artana/core/testing/suites"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-fork-"))
let files = 0
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

ForkSuite.suite("sqlite", () => SqliteStore.layer({ filename: path.join(dir, `fork-${files++}.db`) }))
