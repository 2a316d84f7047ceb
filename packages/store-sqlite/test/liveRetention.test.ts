// How long a SQLite file keeps a run's streamed deltas (core's LiveStoreSuite): while the run is live, and no longer.
import { afterAll } from "@effect/vitest"
import { LiveStoreSuite } from "@artana/core/testing/suites"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-live-"))
let files = 0
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

LiveStoreSuite.suite("sqlite", () => SqliteStore.layer({ filename: path.join(dir, `live-${files++}.db`) }))
LiveStoreSuite.suite("sqlite with tablePrefix", () => SqliteStore.layer({ filename: path.join(dir, `live-${files++}.db`), tablePrefix: "artana_" }))
