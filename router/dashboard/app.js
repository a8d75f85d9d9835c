// The dashboard page: reads the JSON API with the filters kept in the address,
// draws charts with Chart.js, and polls for new records with a cursor (the newest id).
"use strict";

const RANGES = { "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400, all: null };
const FILTERS = ["channel", "server", "tool", "route", "session", "divergent"];
const POLL_MS = 2000;
let charts = [];
let poller = null;

function state() { return new URLSearchParams(location.search); }

function apiQuery(extra = {}) {
  const s = state(), q = new URLSearchParams();
  const range = s.get("range") || "24h";
  const span = RANGES[range];
  q.set("since", span === null ? "0" : String(Date.now() / 1000 - span));
  for (const name of FILTERS) if (s.get(name)) q.set(name, s.get(name));
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== null) q.set(k, v);
  return q.toString();
}

async function api(path, extra) {
  const response = await fetch(`/dashboard/api/${path}?${apiQuery(extra)}`, { credentials: "same-origin" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function go(params) {
  const s = state();
  for (const [k, v] of Object.entries(params)) { if (v === null || v === "") s.delete(k); else s.set(k, v); }
  history.pushState(null, "", `${location.pathname}?${s}`);
  render();
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(child ?? ""));
  return node;
}

function when(ts) { return new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19); }
function fmt(x, digits = 3) { return x === null || x === undefined ? "–" : Number(x).toFixed(digits); }

function chart(container, config) {
  const canvas = el("canvas");
  container.append(el("div", { class: "chart" }, canvas));
  config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false }, config.options || {});
  charts.push(new Chart(canvas, config));
}

const PALETTE = ["#2b7bb9", "#e06c2c", "#3a9d5d", "#b83b5e", "#7f5bb8", "#8c8c2c", "#555"];

function series(rows, buckets, key) {
  const names = [...new Set(rows.map((r) => r[key]))].sort();
  return names.map((name, i) => {
    const counts = new Map();
    for (const r of rows) if (r[key] === name) counts.set(r.bucket, (counts.get(r.bucket) || 0) + r.calls);
    return { label: name, data: buckets.map((b) => counts.get(b) || 0), backgroundColor: PALETTE[i % PALETTE.length], stack: key };
  });
}

// --- views ---------------------------------------------------------------------------------

async function overview(main) {
  const data = await api("overview");
  const buckets = [...new Set(data.rows.map((r) => r.bucket))].sort((a, b) => a - b);
  const labels = buckets.map((b) => when(b).slice(5, 16));
  const total = data.rows.reduce((n, r) => n + r.calls, 0);
  const byProvenance = {};
  for (const r of data.rows) byProvenance[r.provenance] = (byProvenance[r.provenance] || 0) + r.calls;
  const notReal = total - (byProvenance.real || 0);
  main.append(el("p", { class: "stats" },
    el("span", { id: "total-calls" }, `${total} calls`),
    el("span", {}, `simulated or replayed: ${total ? ((100 * notReal) / total).toFixed(1) : 0}%`),
    el("span", {}, `shadow queue: ${data.shadow_queue ?? "–"}`),
    el("span", {}, `shadow skipped: ${data.shadow_skipped ?? "–"}`),
    el("span", { id: "perturbed-calls", title: "calls this router perturbed since it started, by kind" },
      `perturbed: ${Object.values(data.perturbations || {}).reduce((n, c) => n + c, 0)}`
      + (Object.keys(data.perturbations || {}).length ? ` (${Object.entries(data.perturbations).map(([k, c]) => `${k} ${c}`).join(", ")})` : "")),
    ...(Object.keys(data.sources || {}).length ? [el("span", { id: "answer-sources", title: "calls this router served an answer with a source, by provenance/sub" },
      `by source: ${Object.entries(data.sources).map(([k, c]) => `${k} ${c}`).join(", ")}`)] : [])));
  if (!total) { main.append(el("p", { class: "note" }, "No records in this range.")); return; }
  const grid = el("div", { class: "charts" });
  main.append(grid);
  const stacked = { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } };
  chart(grid, { type: "bar", data: { labels, datasets: series(data.rows, buckets, "route") }, options: { ...stacked, plugins: { title: { display: true, text: "Calls by route" } } } });
  chart(grid, { type: "bar", data: { labels, datasets: series(data.rows, buckets, "channel") }, options: { ...stacked, plugins: { title: { display: true, text: "Calls by channel" } } } });
  const names = Object.keys(byProvenance).sort();
  chart(grid, { type: "doughnut", data: { labels: names, datasets: [{ data: names.map((n) => byProvenance[n]), backgroundColor: PALETTE }] },
    options: { plugins: { title: { display: true, text: "Served by (provenance)" } } } });
  const rate = buckets.map((b) => {
    const rows = data.rows.filter((r) => r.bucket === b);
    const shadowed = rows.reduce((n, r) => n + r.shadowed, 0);
    return shadowed ? rows.reduce((n, r) => n + r.divergent, 0) / shadowed : null;
  });
  chart(grid, { type: "line", data: { labels, datasets: [{ label: "divergent share of shadowed calls", data: rate, borderColor: "#d33", spanGaps: true }] },
    options: { scales: { y: { min: 0, max: 1 } }, plugins: { title: { display: true, text: "Divergence rate" } } } });
}

// The learned router's view of a tool, flattened into sortable columns.
function withRouter(r) {
  const out = Object.assign({}, r, { decision: "not available yet", p_sim: null, p_replay: null, router_reason: "" });
  if (r.router) {
    out.decision = r.router.decision;
    out.router_reason = r.router.reason;
    for (const c of r.router.candidates) out[`p_${c.route}`] = c.probability;
    out.router_sources = r.router.candidates.map((c) => `${c.route}: ${c.source}${c.threshold === null ? "" : `, threshold ${fmt(c.threshold)}`}`).join("; ");
  }
  // `simroute judge`'s scores (0-100) when a judge scored the tool: simulated pairs, and
  // real-vs-real control pairs (the judge's score for "indistinguishable").
  out.judge_score = r.judge ? r.judge.score : null;
  out.judge_control = r.judge ? r.judge.control : null;
  out.judge_title = r.judge ? `judge ${r.judge.model} (${r.judge.prompt_versions.join(", ")}): ${r.judge.pairs} simulated pairs, ${r.judge.controls} control pairs` : "";
  return out;
}

async function fidelity(main) {
  const data = await api("fidelity");
  const s = state();
  const sortKey = s.get("sort") || "mean_divergence";
  const rows = data.rows.map(withRouter).sort((a, b) => (b[sortKey] ?? -1) > (a[sortKey] ?? -1) ? 1 : (b[sortKey] ?? -1) < (a[sortKey] ?? -1) ? -1 : 0);
  const columns = [["channel", "Channel"], ["server", "Server"], ["tool", "Tool"], ["calls", "Calls"], ["shadow_pairs", "Shadow pairs"],
    ["mean_divergence", "Mean divergence"], ["subs", "By sub"], ["kinds", "Kinds"], ["noise_pairs", "Noise pairs"], ["noisy_paths", "Noisy paths"],
    ["decision", "Router decision"], ["p_sim", "P(ok) sim"], ["p_replay", "P(ok) replay"]];
  // The judge's columns show only when some tool was judged (`simroute judge`).
  if (rows.some((r) => r.judge)) columns.push(["judge_score", "Judge score"], ["judge_control", "Judge control"]);
  const head = el("tr", {}, ...columns.map(([key, title]) => el("th", { onclick: () => go({ sort: key }) }, title + (key === sortKey ? " ▼" : ""))));
  const cell = (r, key) => {
    if (key === "kinds") return el("td", {}, Object.entries(r.kinds).map(([k, n]) => `${k}: ${n}`).join(", "));
    if (key === "subs") return el("td", { class: "subs", title: "shadow pairs by how the simulated side was made: pairs, divergent share, mean divergence" },
      subsText(r.subs));
    if (key === "mean_divergence" || key === "p_sim" || key === "p_replay") return el("td", { class: key, title: r.router_sources || "" }, fmt(r[key]));
    if (key === "judge_score" || key === "judge_control") return el("td", { class: key, title: r.judge_title }, r[key] === null ? "—" : r[key].toFixed(1));
    if (key === "decision") return el("td", { class: r.router ? "decision" : "decision note", title: r.router_reason }, r.decision);
    return el("td", {}, String(r[key] ?? ""));
  };
  const body = rows.map((r) => el("tr", { class: "clickable", "data-tool": `${r.channel}/${r.server}/${r.tool}`, onclick: () => go({ view: "records", channel: r.channel, server: r.server, tool: r.tool }) },
    ...columns.map(([key]) => cell(r, key))));
  main.append(el("table", { id: "fidelity" }, el("thead", {}, head), el("tbody", {}, ...body)));
  if (!rows.length) main.append(el("p", { class: "note" }, "No records in this range."));
  await worldModels(main);
}

// The world model's loop: simulated calls by the model that answered (base, or base+adapter after
// `simroute tune --adopt`), and the adoptions and reverts, newest first, with their cards' figures.
async function worldModels(main) {
  const data = await api("models");
  const pct = (x) => x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`;
  main.append(el("h3", {}, "By world model"), el("table", { id: "models" },
    el("thead", {}, el("tr", {}, ...["Model", "Simulated calls", "Shadow pairs", "Mean divergence", "Divergent", "Errors", "Last answered"].map((t) => el("th", {}, t)))),
    el("tbody", {}, ...data.rows.map((m) => el("tr", { "data-model": m.model, class: data.current && m.model.endsWith(data.current.model) ? "current" : "" },
      el("td", {}, m.model), el("td", {}, String(m.calls)), el("td", {}, String(m.shadow_pairs)), el("td", {}, fmt(m.mean_divergence)),
      el("td", {}, pct(m.divergent_rate)), el("td", {}, `${m.errors} (${pct(m.error_rate)})`), el("td", {}, when(m.last_ts)))))));
  if (data.bounded) main.append(el("p", { class: "note" }, `Counted over the range's newest ${data.window} records.`));
  main.append(el("h3", {}, "World model history"), el("p", { id: "adopted-now" }, data.current
    ? `Adopted now: ${data.current.kind} ${data.current.model} (${data.current.adopted_at}) from ${data.current.run}` : "Adopted now: none (the config's own model)."));
  const figure = (f, key) => f && f[key] ? `${fmt(f[key].base)} → ${fmt(f[key].candidate)}` : "–";
  const row = (h) => h.event === "adopted"
    ? el("tr", { class: "adopted", "data-digest": h.digest }, el("td", {}, h.at), el("td", {}, "adopted"), el("td", {}, `${h.kind} ${h.model}`), el("td", {}, h.run),
      el("td", {}, figure(h.figures, "fidelity")), el("td", {}, figure(h.figures, "well_formed_rate")),
      el("td", {}, h.figures && h.figures.data ? `${h.figures.data.examples ? `${h.figures.data.examples.train} train / ${h.figures.data.examples.test} test examples` : ""} from ${JSON.stringify(h.figures.data.source)}` : ""))
    : el("tr", { class: "reverted", "data-digest": h.digest }, el("td", {}, h.at), el("td", {}, "reverted"), el("td", {}, h.model),
      el("td", { colspan: 4 }, `restored: ${h.restored ? `${h.restored.kind} ${h.restored.model} (adopted ${h.restored.adopted_at})` : "the config's own model"}`));
  main.append(el("table", { id: "model-history" },
    el("thead", {}, el("tr", {}, ...["When", "Event", "Model", "Run", "Held-out fidelity (base → candidate)", "Well-formed (base → candidate)", "Data"].map((t) => el("th", {}, t)))),
    el("tbody", {}, ...data.history.map(row))));
  if (!data.history.length) main.append(el("p", { class: "note", id: "no-adoptions" }, "No adoption yet: `simroute tune RUN/ --adopt` adopts a tuned model."));
}

// A tool's shadow pairs by the simulated side's sub-provenance: "state 12 (0% divergent, mean 0.000); model 5 (60%, 0.412)".
function subsText(subs) {
  return Object.entries(subs || {}).map(([sub, f]) => `${sub} ${f.pairs} (${Math.round(f.divergent_rate * 100)}% divergent, mean ${fmt(f.mean_divergence)})`).join("; ");
}

// Where within its provenance an answer came from ({sub, model, …}): "model stub"; "" for none.
function sourceText(source) {
  if (!source) return "";
  const { sub, model, ...extra } = source;
  return [sub, model, ...Object.entries(extra).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)].filter(Boolean).join(" ");
}

// Where a session diverged into its fork (records/fork_point.py): the fork's first call
// (its `call` 1; an older record without the number: the first met with its fork's id).
function divergesHere(r, seen) {
  const fork = r.source && r.source.fork;
  if (!fork || typeof fork !== "object") return false;
  const key = `${r.session}\0${fork.id}`;
  const first = Number.isInteger(fork.call) ? fork.call === 1 : !seen.has(key);
  seen.add(key);
  return first;
}

function forkPointText(r) {
  const fork = r.source.fork, copied = fork.copied || {};
  const folders = Object.entries(copied.folders || copied.paths || {}).map(([name, n]) => `${name} ${n} B`);
  if (copied.cwd) folders.push(`cwd ${copied.cwd}`);
  if (Number.isInteger(copied.variables)) folders.push(`${copied.variables} variables`);
  return `Step ${r.step}: diverged into fork ${fork.id} (from ${fork.from || "?"}): copied ${folders.join(", ") || "nothing"}`;
}

function recordRow(r) {
  // A call rehearsal kept away from the real world (diverted to sim, or denied).
  const diverted = (r.policy || "").startsWith("rehearsal") && r.route !== "real";
  const p = r.perturbation;  // what a perturbation plan did to the call
  const classes = ["clickable", diverted ? "diverted" : "", p ? "perturbed" : ""].filter(Boolean).join(" ");
  return el("tr", { class: classes, "data-id": r.id, onclick: () => go({ view: "record", id: r.id }) },
    el("td", {}, when(r.ts)), el("td", {}, el("a", { onclick: (e) => { e.stopPropagation(); go({ view: "session", session: r.session }); } }, r.session)),
    el("td", {}, String(r.step)), el("td", {}, r.channel), el("td", {}, `${r.server}.${r.tool}`), el("td", {}, r.route),
    el("td", { class: "provenance" }, r.source ? `${r.provenance} (${sourceText(r.source)})` : r.provenance), el("td", {}, r.status), el("td", {}, fmt(r.divergence)), el("td", {}, r.divergence_kind || ""),
    el("td", { title: r.reason || "" }, r.policy || ""),
    el("td", { class: "perturbation" }, p ? `${p.kind} (${p.rule}, call ${p.n}${p.page ? `, page ${p.page}` : ""})` : ""));
}

async function records(main, { session = false } = {}) {
  const data = await api("records", { limit: 100 });
  const head = el("tr", {}, ...["Time", "Session", "Step", "Channel", "Tool", "Route", "Provenance", "Status", "Divergence", "Kind", "Policy", "Perturbation"].map((t) => el("th", {}, t)));
  const rows = session ? data.rows.slice().reverse() : data.rows;
  const body = el("tbody", {}, ...rows.map(recordRow));
  main.append(el("h2", {}, session ? `Session ${state().get("session")}` : "Records"));
  const forkPoints = el("div", { id: "fork-points" });
  const seen = new Set();
  // The session view marks where the session diverged into its fork (rows oldest first).
  const markForks = (trs, fresh) => { if (session) fresh.forEach((r, i) => { if (divergesHere(r, seen)) { trs[i].classList.add("fork-point"); forkPoints.append(el("p", { class: "fork-point" }, forkPointText(r))); } }); };
  markForks(Array.from(body.children), rows);
  main.append(forkPoints, el("table", { id: "records" }, el("thead", {}, head), body));
  let cursor = data.rows.length ? data.rows[0].id : null;
  poller = setInterval(async () => {
    const fresh = await api("records", { limit: 100, after: cursor, since: "0" });
    if (!fresh.rows.length) return;
    cursor = fresh.rows[0].id;
    const nodes = fresh.rows.map((r) => { const tr = recordRow(r); tr.classList.add("new"); return tr; });
    if (session) { markForks(nodes.slice().reverse(), fresh.rows.slice().reverse()); body.append(...nodes.reverse()); } else body.prepend(...nodes);
  }, POLL_MS);
}

function tree(value, path, evidence) {
  const divergent = evidence.divergent.map((d) => d.path);
  const hit = (p) => divergent.some((d) => d === p || (d.startsWith(p) && !/^[.\[]/.test(d.slice(p.length))));
  const masked = (p) => evidence.masked.some((m) => m === p);
  const node = (v, p, label) => {
    const cls = hit(p) ? "divergent" : masked(p) ? "masked" : "";
    const prefix = label === null ? "" : `${label}: `;
    if (v && typeof v === "object") {
      const entries = Array.isArray(v) ? v.map((x, i) => [i, x, `${p}[${i}]`]) : Object.entries(v).map(([k, x]) => [k, x, `${p}.${k}`]);
      return el("div", { class: cls, "data-path": p }, prefix + (Array.isArray(v) ? "[" : "{"), ...entries.map(([k, x, cp]) => node(x, cp, k)), Array.isArray(v) ? "]" : "}");
    }
    return el("div", { class: cls, "data-path": p }, prefix + JSON.stringify(v));
  };
  return node(value, path, null);
}

function observationBody(o) { return o ? { content: o.content, structured: o.structured, is_error: o.is_error } : null; }

const DIFF_MODES = [["tree", "JSON tree"], ["text", "Text lines"], ["screen", "Terminal screen"], ["snapshot", "Page snapshot"]];

// Real and simulated aligned line by line; divergent lines highlighted, noise (masked) lines shown as such.
function lineDiff(mode, diff) {
  const mark = { divergent: "≠", masked: "~ noise", equal: "" };
  const rows = diff.rows.map((d) => el("tr", { class: d.state, "data-real-line": d.real_line ?? "", "data-sim-line": d.sim_line ?? "" },
    el("td", { class: "ln" }, d.real_line ?? ""), el("td", { class: "line" }, d.real ?? ""),
    el("td", { class: "ln" }, d.sim_line ?? ""), el("td", { class: "line" }, d.sim ?? ""), el("td", { class: "mark" }, mark[d.state])));
  const table = el("table", { id: "line-diff", class: `lines ${mode}` },
    el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "Real"), el("th", {}, "#"), el("th", {}, "Simulated"), el("th", {}, ""))),
    el("tbody", {}, ...rows));
  return diff.cut ? el("div", {}, table, el("p", { class: "note" }, "cut: the view shows the first lines only")) : table;
}

async function record(main) {
  const { record: r, diffs = {}, judge: judged = [] } = await api("record", { id: state().get("id") });
  if (!r) { main.append(el("p", {}, "No such record.")); return; }
  const evidence = Object.assign({ divergent: [], masked: [], note: "" }, r.divergence_evidence || {});
  const source = sourceText((r.observation || {}).source);
  main.append(el("h2", {}, `${r.channel} ${r.server}.${r.tool} — ${r.route} (${r.provenance}${source ? `: ${source}` : ""})`),
    el("p", {}, `Decision: ${r.route} by ${r.policy}: ${r.reason}`),
    ...(r.perturbation ? [el("p", { class: "perturbation" }, `Perturbed: ${r.perturbation.kind} by ${r.perturbation.rule} (seed ${r.perturbation.seed}, call ${r.perturbation.n})${r.note ? ` — ${r.note}` : ""}`)] : []),
    el("p", {}, `Session `, el("a", { onclick: () => go({ view: "session", session: r.session, id: null }) }, r.session), ` step ${r.step}; divergence ${fmt(r.divergence)} (${r.divergence_kind || "not shadowed"})`),
    el("pre", { class: "tree" }, JSON.stringify(r.arguments, null, 2)));
  const modes = DIFF_MODES.filter(([mode]) => mode === "tree" || diffs[mode]);
  const fallback = diffs.screen ? "screen" : diffs.snapshot ? "snapshot" : "tree";
  const mode = modes.some(([m]) => m === state().get("diff")) ? state().get("diff") : fallback;
  main.append(el("p", { id: "diff-modes" }, "Compare as: ", ...modes.map(([m, title]) =>
    el("button", { type: "button", "data-mode": m, class: m === mode ? "active" : "", onclick: () => go({ diff: m }) }, title))));
  if (mode === "tree") {
    // Shadowed: both sides in the compared (canonical) form, whose paths the evidence names.
    const served = observationBody(r.observation), other = observationBody(r.shadow);
    const [real, sim] = diffs.tree ? [diffs.tree.real, diffs.tree.sim] : r.provenance === "real" ? [served, other] : [other, served];
    // How the simulated side was made (its source's sub: state, replay-aligned, model, model+state).
    const simSource = sourceText(((r.provenance === "real" ? r.shadow : r.observation) || {}).source);
    main.append(el("div", { class: "side" },
      el("div", { id: "real" }, el("h3", {}, "Real"), real ? el("div", { class: "tree" }, tree(real, "$", evidence)) : el("p", { class: "note" }, "none")),
      el("div", { id: "sim" }, el("h3", {}, simSource ? `Simulated (${simSource})` : "Simulated"), sim ? el("div", { class: "tree" }, tree(sim, "$", evidence)) : el("p", { class: "note" }, "none"))));
  } else {
    main.append(lineDiff(mode, diffs[mode]));
  }
  if (evidence.divergent.length || evidence.masked.length) {
    main.append(el("h3", {}, "Differences"), el("table", { id: "evidence" },
      el("thead", {}, el("tr", {}, el("th", {}, "Path"), el("th", {}, "Kind"), el("th", {}, "Real"), el("th", {}, "Simulated"))),
      el("tbody", {}, ...evidence.divergent.map((d) => el("tr", { class: "divergent", "data-path": d.path }, el("td", {}, d.path), el("td", {}, d.kind), el("td", {}, JSON.stringify(d.real)), el("td", {}, JSON.stringify(d.sim)))),
        ...evidence.masked.map((m) => el("tr", { class: "masked", "data-path": m }, el("td", {}, m), el("td", {}, "noise (masked)"), el("td"), el("td"))))));
  }
  if (evidence.note) main.append(el("p", { class: "note" }, evidence.note));
  if (judged.length) {
    main.append(el("h3", {}, "Judge scores"), el("table", { id: "judge" },
      el("thead", {}, el("tr", {}, ...["Judge", "Pair", "Format", "Factuality", "Consistency", "Realism", "Quality", "Score (0-100)", "Reason"].map((t) => el("th", {}, t)))),
      el("tbody", {}, ...judged.map((j) => el("tr", { "data-judge": j.judge, "data-kind": j.kind }, el("td", {}, `${j.judge} (${j.prompt_version})`), el("td", {}, j.kind),
        ...["format", "factuality", "consistency", "realism", "quality"].map((d) => el("td", {}, String(j.scores[d]))), el("td", {}, fmt(j.score)), el("td", {}, j.reason || ""))))));
  }
}

// A route's figures from the model card: the threshold `simroute train` chose by deciding the
// stored sessions again and what it buys there (share served off real, fidelity kept, wrong
// answers, cost saved), the cross-validated scores, and the calibration bins (mean predicted
// P(ok) against the share found acceptable).
function routeFigures(route, report) {
  if (!report.trained) return el("p", { class: "note", "data-route": route }, `No classifier: ${report.why || ""}; ${report.uses || ""}.`);
  const chosen = (report.curve || []).find((p) => p.threshold === report.threshold) || {};
  const figures = [["threshold", "Threshold", report.threshold, 4], ["share", "Share off real", chosen.off_real_share, 4], ["fidelity", "Fidelity kept", chosen.fidelity, 4],
    ["wrong", "Wrong answers", chosen.wrong, 0], ["cost_saved", "Cost saved", chosen.cost_saved, 4],
    ["cv_roc_auc", "ROC-AUC (cross-validated)", report.cv_roc_auc, 4], ["cv_brier", "Brier (cross-validated)", report.cv_brier, 4]];
  return el("div", { class: "route-figures" },
    el("table", { class: "figures", "data-route": route }, el("tbody", {}, ...figures.map(([key, title, value, digits]) =>
      el("tr", { "data-figure": key }, el("th", {}, title), el("td", {}, fmt(value, digits)))))),
    el("table", { class: "calibration", "data-route": route },
      el("thead", {}, el("tr", {}, el("th", {}, "Predicted P(ok)"), el("th", {}, "Share acceptable"), el("th", {}, "Labels"))),
      el("tbody", {}, ...(report.calibration || []).map((b) => el("tr", {}, el("td", {}, fmt(b.predicted)), el("td", {}, fmt(b.acceptable)), el("td", {}, String(b.count)))))));
}

// What the router would deliver: the stored sessions decided again at the chosen thresholds,
// counted over calls, and why the calls that stay real do.
function promise(card) {
  const p = card.promise;
  if (!p) return el("p", { class: "note" }, "This model's card predates the promise: run `simroute train` again.");
  const figures = [["calls", "Calls decided again", p.calls, 0], ["off_real_share", "Share off real", p.off_real_share, 4], ["fidelity", "Fidelity kept", p.fidelity, 4],
    ["wrong", "Wrong answers", p.wrong, 0], ["replay_misses", "Replay misses (went real)", p.replay_misses, 0], ["unscored", "Simulated, unscored", p.unscored, 0]];
  return el("div", { class: "promise" },
    el("table", { class: "figures", "data-route": "promise" }, el("tbody", {}, ...figures.map(([key, title, value, digits]) =>
      el("tr", { "data-figure": key }, el("th", {}, title), el("td", {}, fmt(value, digits)))))),
    el("table", { class: "why-real" }, el("thead", {}, el("tr", {}, el("th", {}, "Calls"), el("th", {}, "Why they stay real"))),
      el("tbody", {}, ...Object.entries(p.why_real || {}).map(([why, count]) => el("tr", {}, el("td", {}, String(count)), el("td", {}, why))))));
}

async function router(main) {
  const { card } = await api("router");
  if (!card) { main.append(el("p", { id: "router-unavailable" }, "Router view: not available yet (no learned model: run `simroute train`).")); return; }
  main.append(el("h2", {}, `Learned router (created ${card.created}, target fidelity ${card.target_fidelity})`));
  main.append(el("h3", {}, "What it would deliver on the stored sessions"), promise(card));
  const grid = el("div", { class: "charts" });
  main.append(grid);
  for (const [route, report] of Object.entries(card.routes || {})) {
    main.append(el("h3", {}, route), routeFigures(route, report), el("pre", { class: "tree" }, JSON.stringify(report, null, 2)));
    const curve = report.curve || [];
    if (curve.length) chart(grid, { type: "line", data: { labels: curve.map((p) => fmt(p.threshold, 2)), datasets: [
      { label: "share off real", data: curve.map((p) => p.off_real_share), borderColor: "#2b7bb9" },
      { label: "fidelity kept", data: curve.map((p) => p.fidelity), borderColor: "#3a9d5d" }] },
      options: { plugins: { title: { display: true, text: `${route}: share vs fidelity` } } } });
  }
}

// Tool-definition pins: each upstream tool's pinned definition, and the changes upstreams made
// (pending ones hold the tool's calls as pins.policy says, until `simroute pins accept`).
async function pins(main) {
  const { policy, pins: pinned, changes } = await api("pins");
  const pending = changes.filter((c) => c.status === "pending");
  main.append(el("h2", {}, `Tool pins (policy ${policy}): ${pinned.length} pinned, ${pending.length} changed and not accepted`));
  const table = el("table", { id: "pins" }, el("tr", {}, ...["server", "tool", "digest", "pinned", "state"].map((h) => el("th", {}, h))));
  for (const p of pinned) {
    const changed = pending.some((c) => c.server === p.server && c.tool === p.tool);
    table.append(el("tr", { class: changed ? "divergent" : "" }, el("td", {}, p.server), el("td", {}, p.tool),
      el("td", {}, p.digest.slice(0, 12)), el("td", {}, when(p.ts)), el("td", {}, changed ? "changed, not accepted" : "as pinned")));
  }
  main.append(table, el("h3", {}, "Changes"));
  if (!changes.length) main.append(el("p", { id: "no-pin-changes" }, "No upstream changed a pinned tool."));
  for (const c of [...changes].reverse()) {
    main.append(el("h4", { class: "pin-change" }, `${c.status}: ${c.server}.${c.tool} changed its ${c.fields.join(", ")} (${when(c.ts)})`),
      el("pre", { class: "tree" }, c.diff));
    if (c.status === "pending") main.append(el("p", {}, `accept with: simroute pins accept ${c.server} ${c.tool}`));
  }
}

const VIEWS = { overview, fidelity, records, record, router, pins, session: (main) => records(main, { session: true }) };

async function render() {
  if (poller) { clearInterval(poller); poller = null; }
  charts.forEach((c) => c.destroy());
  charts = [];
  const s = state();
  const view = VIEWS[s.get("view")] ? s.get("view") : "overview";
  document.querySelectorAll("#views a").forEach((a) => a.classList.toggle("active", a.dataset.view === view));
  const form = document.getElementById("filters");
  form.range.value = s.get("range") || "24h";
  for (const name of FILTERS) { const input = form[name]; if (input.type === "checkbox") input.checked = s.get(name) === "1"; else input.value = s.get(name) || ""; }
  const main = document.getElementById("main");
  main.replaceChildren();
  main.dataset.view = view;
  delete main.dataset.ready;
  try { await VIEWS[view](main); main.dataset.ready = "1"; } catch (err) { main.append(el("p", { class: "error" }, String(err))); }
}

document.querySelectorAll("#views a").forEach((a) => a.addEventListener("click", () => go({ view: a.dataset.view, id: null })));
document.getElementById("filters").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.target, params = { range: form.range.value };
  for (const name of FILTERS) { const input = form[name]; params[name] = input.type === "checkbox" ? (input.checked ? "1" : null) : input.value.trim(); }
  go(params);
});
window.addEventListener("popstate", render);
render();
