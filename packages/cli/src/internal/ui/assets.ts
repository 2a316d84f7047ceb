/**
 * The inspector's stylesheet and its one small script, served from the package (no CDN, no bundler). The script does
 * two things a server-rendered page cannot: it fills the chain badge from `/chain` (checked in a pass over the whole
 * log, after the page is shown), and on a live run's last page it follows `/live` (server-sent events) and appends each
 * new event's row, showing a streamed reply's text as it arrives, and reloads when the run settles.
 */

export const script = `"use strict";
(function () {
  var chain = document.getElementById("chain");
  if (chain && chain.dataset.src) {
    fetch(chain.dataset.src, { headers: { accept: "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.text().then(function (t) { return { ok: r.ok, text: t }; }); })
      .then(function (r) {
        chain.innerHTML = r.text;
        chain.classList.remove("pending");
        var bad = chain.querySelector("[data-broken-seq]");
        var seq = bad && bad.getAttribute("data-broken-seq");
        var row = seq && document.getElementById("seq-" + seq);
        if (row) row.classList.add("broken");
      })
      .catch(function (e) { chain.textContent = "the chain could not be checked: " + e; });
  }
  var timeline = document.querySelector("table.timeline[data-live]");
  if (!timeline || !window.EventSource) return;
  var body = document.getElementById("timeline");
  var streaming = document.getElementById("streaming");
  var source = new EventSource(timeline.getAttribute("data-live"));
  source.addEventListener("log", function (m) {
    body.insertAdjacentHTML("beforeend", m.data);
    streaming.hidden = true;
    streaming.textContent = "";
  });
  source.addEventListener("delta", function (m) {
    streaming.hidden = false;
    streaming.textContent += m.data;
  });
  source.addEventListener("settled", function () {
    source.close();
    window.location.reload();
  });
})();
`

export const stylesheet = `
:root { --fg: #1d2330; --dim: #6b7385; --line: #e3e6ec; --bg: #fff; --ok: #17803d; --bad: #c0262d; --warn: #a86b00; --accent: #2b59c3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: baseline; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); background: #f6f7f9; }
header .brand { font-weight: 700; color: var(--fg); text-decoration: none; }
header nav a { margin-right: 1rem; }
header .meta { margin-left: auto; color: var(--dim); font-size: 12px; }
main { padding: 1rem 1.2rem 3rem; }
a { color: var(--accent); }
h1 { font-size: 20px; margin: .2rem 0 1rem; }
h2 { font-size: 16px; margin: 1.6rem 0 .6rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--dim); font-size: 12px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
details summary { cursor: pointer; }
.dim { color: var(--dim); }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 9px; font-size: 12px; font-weight: 600; background: #eef0f4; }
.status-completed, .chain-ok { background: #e3f5e9; color: var(--ok); }
.status-failed, .chain-broken { background: #fde7e8; color: var(--bad); }
.status-paused, .status-needs_reconciliation { background: #fff3d6; color: var(--warn); }
.status-running { background: #e4ecfb; color: var(--accent); }
.chain { margin: 0 0 1rem; padding: .5rem .7rem; border: 1px solid var(--line); border-radius: 6px; }
.chain.pending { color: var(--dim); }
.chain .chain-broken { font-size: 14px; }
.filters { display: flex; flex-wrap: wrap; gap: .8rem; margin-bottom: 1rem; align-items: end; }
.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--dim); }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
.facts dt { color: var(--dim); }
.facts dd { margin: 0; }
.tree, .tree ul { list-style: none; padding-left: 1.2rem; }
.tree { padding-left: 0; }
.tree li { margin: .2rem 0; }
.tree a.current { font-weight: 700; }
.tree .spend { color: var(--dim); font-size: 12px; margin-left: .5rem; }
.tree .continued { color: var(--dim); }
tr.kind-bad td.type { color: var(--bad); }
tr.kind-model td.type { color: var(--accent); }
tr.kind-person td.type { color: var(--warn); }
tr.kind-note td.type { color: var(--dim); }
tr.broken { background: #fde7e8; }
tr.broken td.type::after { content: "  ✗ chain broken here"; color: var(--bad); font-weight: 600; }
.divergence { border: 1px solid var(--bad); border-radius: 6px; padding: .2rem .8rem .8rem; }
.streaming { border: 1px dashed var(--line); padding: .5rem; margin-bottom: .5rem; }
form.action { display: flex; gap: .5rem; align-items: end; margin: .2rem 0; flex-wrap: wrap; }
form.action label { display: flex; flex-direction: column; font-size: 12px; color: var(--dim); }
.notice { padding: .5rem .7rem; border-radius: 6px; background: #e3f5e9; }
.notice.problem, p.problem { background: #fde7e8; padding: .5rem .7rem; border-radius: 6px; }
`
