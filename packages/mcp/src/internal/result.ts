// An MCP tool result as the tool's output (what `ToolCompleted` logs and the model reads): text as it is,
// structured content as it is, binary content (images, audio, blobs) as references by SHA-256, never the bytes.
import { Errors, Json } from "@artana/core"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

const EXTENSIONS: Readonly<Record<string, string>> = {
  "image/png": ".png",
  "image/jpeg": ".jpg",
  "image/gif": ".gif",
  "image/webp": ".webp",
  "image/svg+xml": ".svg",
  "audio/wav": ".wav",
  "audio/mpeg": ".mp3"
}

/** A reference to binary content: its hash and size; the bytes are written to `saveTo` when given. */
const reference = (base64: string, mimeType: string, saveTo: string | undefined): Record<string, Json.Json> => {
  const bytes = Buffer.from(base64, "base64")
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  if (saveTo !== undefined) {
    const file = path.join(saveTo, `${sha256}${EXTENSIONS[mimeType] ?? ".bin"}`)
    fs.mkdirSync(saveTo, { recursive: true })
    if (!fs.existsSync(file)) fs.writeFileSync(file, bytes)
  }
  return { mimeType, sha256, bytes: bytes.length }
}

const str = (o: Json.JsonObject, key: string): string | undefined => {
  const v = o[key]
  return typeof v === "string" ? v : undefined
}

const contentItem = (item: Json.Json, saveTo: string | undefined): Json.Json => {
  if (!Json.isObject(item)) return { type: "unknown" }
  const type = str(item, "type") ?? "unknown"
  switch (type) {
    case "text":
      return { type, text: str(item, "text") ?? "" }
    case "image":
    case "audio":
      return { type, ...reference(str(item, "data") ?? "", str(item, "mimeType") ?? "application/octet-stream", saveTo) }
    case "resource_link": {
      const { _meta: _ignored, ...rest } = item
      return rest
    }
    case "resource": {
      const resource = Json.isObject(item.resource) ? item.resource : {}
      const uri = str(resource, "uri") ?? ""
      const mimeType = str(resource, "mimeType")
      const text = str(resource, "text")
      if (text !== undefined) return { type, uri, ...(mimeType === undefined ? {} : { mimeType }), text }
      return { type, uri, ...reference(str(resource, "blob") ?? "", mimeType ?? "application/octet-stream", saveTo) }
    }
    default:
      return { type }
  }
}

/** The server's message of an `isError` result: its text content. */
const errorText = (content: ReadonlyArray<Json.Json>): string => {
  const texts = content.flatMap((c) => (Json.isObject(c) && typeof c.text === "string" ? [c.text] : []))
  return texts.length > 0 ? texts.join("\n") : "the tool reported an error and gave no message"
}

/** The tool's output, or its error (`isError`: the server's message). */
export const toOutput = (tool: string, result: unknown, saveTo: string | undefined): { ok: true; output: Json.Json } | { ok: false; error: Errors.ToolError } => {
  const checked = Json.fromUnknown(result)
  if (!checked.ok || !Json.isObject(checked.json)) {
    return { ok: false, error: new Errors.ToolError({ tool, reason: `the server's result is not JSON: ${checked.ok ? "not an object" : checked.error}` }) }
  }
  const r = checked.json
  const content = Array.isArray(r.content) ? r.content : []
  if (r.isError === true) return { ok: false, error: new Errors.ToolError({ tool, reason: errorText(content) }) }
  const structured = r.structuredContent
  return {
    ok: true,
    output: { content: content.map((c) => contentItem(c, saveTo)), ...(structured === undefined ? {} : { structuredContent: structured }) }
  }
}
