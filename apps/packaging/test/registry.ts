// A registry for the @artana scope only, serving the packed tarballs, so `npm i -g @artana/cli` runs as a user types
// it (npm reads the scope's registry from `--@artana:registry`; everything else comes from the npm registry). It
// answers the two requests npm makes of a registry for an install: a package's document (its versions, each with
// its manifest as packed and where its tarball is) and the tarball. A registry such as verdaccio would bring ~100
// packages into the fixture for these two routes.
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface Tarball {
  readonly name: string
  readonly tarball: string
}

export interface Registry {
  readonly url: string
  readonly close: () => Promise<void>
}

/** The manifest as packed: `workspace:^` ranges already rewritten to versions by `pnpm pack`. */
const packedManifest = (tarball: string): Record<string, unknown> & { readonly version: string } =>
  JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" })) as Record<string, unknown> & {
    readonly version: string
  }

/** Starts the registry on a free loopback port. */
export const start = async (tarballs: ReadonlyArray<Tarball>): Promise<Registry> => {
  const documents = new Map<string, string>()
  const files = new Map<string, string>()
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? "/").split("?")[0]!)
    const document = documents.get(url)
    const file = files.get(url)
    if (document !== undefined) {
      res.writeHead(200, { "content-type": "application/json" }).end(document)
    } else if (file !== undefined) {
      res.writeHead(200, { "content-type": "application/octet-stream" })
      fs.createReadStream(file).pipe(res)
    } else {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not found" }))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  for (const { name, tarball } of tarballs) {
    const manifest = packedManifest(tarball)
    const bytes = fs.readFileSync(tarball)
    const route = `/${name}/-/${name.split("/")[1]}-${manifest.version}.tgz`
    files.set(route, tarball)
    documents.set(`/${name}`, JSON.stringify({
      name,
      "dist-tags": { latest: manifest.version },
      versions: {
        [manifest.version]: {
          ...manifest,
          dist: {
            tarball: `${url.slice(0, -1)}${route}`,
            shasum: createHash("sha1").update(bytes).digest("hex"),
            integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`
          }
        }
      }
    }))
  }
  return {
    url,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error === undefined ? resolve() : reject(error))))
  }
}
