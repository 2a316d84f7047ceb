// The global setup's decisions, without a server: which binaries it picks, and what it does without any.
import { describe, expect, it } from "@effect/vitest"
import { PgTest } from "@artana/store-postgres/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const fakeRoot = (versions: Record<string, ReadonlyArray<string>>) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-pg-bin-"))
  for (const [version, programs] of Object.entries(versions)) {
    fs.mkdirSync(path.join(root, version, "bin"), { recursive: true })
    for (const program of programs) fs.writeFileSync(path.join(root, version, "bin", program), "")
  }
  return root
}

const recorder = () => {
  const provided: Array<PgTest.Provided> = []
  return { provided, project: { provide: (_key: "artanaPg", value: PgTest.Provided) => void provided.push(value) } }
}

describe("PgTest", () => {
  it("findBinaries picks the newest version that has both initdb and pg_ctl", () => {
    const root = fakeRoot({ "13": ["initdb", "pg_ctl"], "16": ["initdb"], "15": ["initdb", "pg_ctl", "postgres"] })
    expect(PgTest.findBinaries(root)).toEqual({
      version: "15",
      bin: path.join(root, "15", "bin"),
      initdb: path.join(root, "15", "bin", "initdb"),
      pgCtl: path.join(root, "15", "bin", "pg_ctl")
    })
    expect(PgTest.findBinaries(path.join(root, "missing"))).toBeUndefined()
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("in CI, no URL and no binaries fail the run, saying what to install", async () => {
    const { project, provided } = recorder()
    const root = fakeRoot({})
    await expect(PgTest.globalSetup({ ci: true, binariesRoot: root })(project)).rejects.toThrow(
      /PostgreSQL tests cannot run in CI: no PostgreSQL server binaries under .* and no ARTANA_TEST_PG_URL; install the PostgreSQL server \(Debian: apt-get install -y postgresql\)/
    )
    expect(provided).toEqual([])
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("outside CI, no URL and no binaries let the tests skip, saying why", async () => {
    const { project, provided } = recorder()
    const root = fakeRoot({})
    const teardown = await PgTest.globalSetup({ ci: false, binariesRoot: root })(project)
    await teardown()
    expect(provided).toEqual([{ url: null, reason: `no PostgreSQL server binaries under ${root} and no ARTANA_TEST_PG_URL` }])
    expect(PgTest.server(provided[0])).toEqual({ url: undefined, description: `skipped: ${provided[0]!.url === null ? provided[0]!.reason : ""}` })
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("server() without the global setup throws instead of skipping", () => {
    expect(() => PgTest.server(undefined)).toThrow(/list a file exporting PgTest.globalSetup/)
  })

  it("URLs for a fresh database or schema keep the credentials and the host", () => {
    const url = "postgres://app:pw@127.0.0.1:5433/artana?sslmode=disable"
    expect(PgTest.withDatabase(url, "artana_t1")).toBe("postgres://app:pw@127.0.0.1:5433/artana_t1?sslmode=disable")
    expect(PgTest.withSearchPath(url, "artana_t2")).toBe("postgres://app:pw@127.0.0.1:5433/artana?sslmode=disable&options=-c+search_path%3Dartana_t2")
  })
})
