// A plain `pg` session on a test's database, ended with the test's scope: what the tests use to look at the server
// (`pg_locks`, `pg_stat_activity`), end other sessions and LISTEN as a bare client.
import { Effect } from "effect"
import pgDriver from "pg"

export const session = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pgDriver.Client({ connectionString: url })
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.end())
  )
