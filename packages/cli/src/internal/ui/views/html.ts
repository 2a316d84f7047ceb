/**
 * The inspector's HTML: Hono's `html` tagged template, which escapes every value put in it (text, attributes) except
 * the HTML another template made. `h` is that template for the synchronous pieces the views build (no promise is ever
 * put in one); `page` the layout every page shares.
 */
import { html } from "hono/html"
import { escapeMatches } from "../../terminal.js"

/** HTML a template made: put in another template as it is. */
export type Html = Exclude<ReturnType<typeof html>, Promise<unknown>>

/** Hono's `html`, for views that put no promise in it (the result is then always HTML, never a promise). */
export const h = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Html => {
  const out = html(strings, ...values)
  if (out instanceof Promise) throw new Error("a view put a promise in an HTML template")
  return out
}

/**
 * Text as it is, with its bidirectional controls shown as escapes (`\u202e`): a tool's arguments (a model's, so an
 * attacker's) cannot read one way to the person deciding and another way to the tool.
 */
export const visible = (text: string): string => escapeMatches(text, /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g)

/** What every page needs: the tenant shown, the token of the forms, whether actions are on. */
export interface PageContext {
  readonly tenant: string
  readonly csrf: string
  readonly allowActions: boolean
  readonly store: string
}

/** A link within the app, with its query (empty values left out). */
export const href = (path: string, query: Readonly<Record<string, string | number | undefined>> = {}): string => {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") params.set(k, String(v))
  const text = params.toString()
  return text === "" ? path : `${path}?${text}`
}

export const usd = (value: number): string => `$${value.toFixed(value !== 0 && Math.abs(value) < 0.01 ? 6 : 4)}`

export const time = (ms: number): string => new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z")

export const duration = (ms: number): string =>
  ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : ms < 3_600_000 ? `${(ms / 60_000).toFixed(1)} min` : `${(ms / 3_600_000).toFixed(1)} h`

export const statusBadge = (status: string): Html => h`<span class="badge status-${status}" data-status="${status}">${status}</span>`

/** The layout: header with the store, the tenant and the navigation; the page's body. */
export const page = (ctx: PageContext, title: string, body: Html): Html =>
  h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · artana ui</title>
<link rel="stylesheet" href="/assets/ui.css">
<script src="/assets/ui.js" defer></script>
</head>
<body>
<header>
  <a class="brand" href="${href("/", { tenant: ctx.tenant })}">artana ui</a>
  <nav>
    <a href="${href("/", { tenant: ctx.tenant })}">Runs</a>
    <a href="${href("/inbox", { tenant: ctx.tenant })}">Inbox</a>
  </nav>
  <span class="meta">store ${ctx.store} · tenant <b>${ctx.tenant}</b> · ${ctx.allowActions ? "actions allowed" : "read-only"}</span>
</header>
<main>
${body}
</main>
</body>
</html>`

/** A page for an error a person can act on (a bad filter, a run that does not exist). */
export const problem = (ctx: PageContext, title: string, message: string): Html =>
  page(ctx, title, h`<h1>${title}</h1><p class="problem">${message}</p><p><a href="${href("/", { tenant: ctx.tenant })}">Back to the runs</a></p>`)
