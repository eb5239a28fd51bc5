// The Moonseed dashboard page (docs/dashboard.md). It polls the server's JSON
// (dashboard/server.h) once a second: each run's metrics.jsonl rows from where
// it left off, the live run's status, and shows them as charts and tables.
"use strict";

const state = {
  runs: [],            // {run, name, group, next, rows: [], events: []}
  groups: [],          // {label, runs: [run index, ...]}: the server's (curves::group_runs)
  bands: new Map(),    // "group|metric|x" -> the server's /api/band reply
  metrics: new Set(),  // numeric keys seen in point rows
  chosen: new Set(["return_mean"]),
  charts: new Map(),   // metric -> {plot, key}
  x: "frames",
  group: false,
};
const hasChartLibrary = typeof uPlot !== "undefined";
const kSkip = new Set(["time_s", "frames"]);  // x candidates, not curves

async function getJson(url) {
  const r = await fetch(url, {credentials: "same-origin"});
  if (!r.ok) throw new Error(url + ": HTTP " + r.status);
  return r.json();
}

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props || {});
  for (const c of children) e.append(c);
  return e;
}

async function pollRows(run) {
  for (let i = 0; i < 50; i++) {  // at most 50 chunks a poll
    const reply = await getJson("api/rows?run=" + run.run + "&from=" + run.next);
    reply.rows.forEach((row, i) => {
      if ("event" in row) {
        run.events.push(row);
        addEvent(run, row);
      }
      // Which rows are points is the server's rule (curves::is_point): ticks and the final stop row.
      if (reply.points[i]) {
        run.rows.push(row);
        for (const [k, v] of Object.entries(row)) {
          if (typeof v === "number" && !kSkip.has(k) && !state.metrics.has(k)) {
            state.metrics.add(k);
            addMetricChoice(k);
          }
        }
      }
    });
    if (reply.next === run.next) break;
    run.next = reply.next;
    if (reply.next >= reply.size) break;
  }
}

function addMetricChoice(key) {
  const box = el("input", {type: "checkbox", checked: state.chosen.has(key), value: key});
  box.addEventListener("change", () => {
    if (box.checked) state.chosen.add(key); else state.chosen.delete(key);
    refreshBands().then(() => redraw(true)).catch((e) => showNotice("cannot reach the run: " + e.message));
  });
  const list = document.getElementById("metric-list");
  const labels = [...list.children];
  const label = el("label", {}, box, " " + key);
  const after = labels.find((l) => l.textContent.trim() > key);
  list.insertBefore(label, after || null);
}

// A value as a person reads it: numbers as they are, texts unquoted, lists and objects briefly.
function plainValue(v) {
  if (v === null || v === undefined) return "-";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(+v.toPrecision(6));
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(plainValue).join(", ");
  return Object.entries(v).map(([k, x]) => k + " " + plainValue(x)).join(", ");
}

// An event row in words (metrics.md "Event rows"): the common ones said as sentences, the
// rest as "key: value" pairs, never as raw JSON.
function eventDetails(row) {
  const rest = Object.assign({}, row);
  delete rest.time_s;
  delete rest.event;
  const changes = (c) => Object.entries(c || {}).map(([path, ch]) =>
    path + ": " + plainValue(ch && typeof ch === "object" && "from" in ch ? ch.from : ch) +
    (ch && typeof ch === "object" && "to" in ch ? " \u2192 " + plainValue(ch.to) : "")).join("; ");
  const who = () => "actor " + plainValue(row.actor) + (row.host ? " on " + row.host : "") +
    (row.pid !== undefined ? " (pid " + row.pid + ")" : "");
  switch (row.event) {
    case "reload": return changes(row.changes) || "no field changed";
    case "reload_refused": return "refused: " + plainValue(row.reason ?? row.fields) + (row.changes ? " (" + changes(row.changes) + ")" : "");
    case "reload_failed": return plainValue(row.error);
    case "actor_joined": return who() + " joined";
    case "actor_left": return who() + " left: " + plainValue(row.reason);
    case "actor_hung": return who() + " hung: " + plainValue(row.reason);
    case "actor_parked": return "actor " + plainValue(row.actor) + " parked: " + plainValue(row.reason);
    case "checkpoint": return plainValue(row.checkpoint) + (row.metric ? ", " + row.metric + " " + plainValue(row.value) : "") +
      (row.best ? " (the best so far: best.pt)" : "");
    case "checkpoint_failed": return "checkpoint failed: " + plainValue(row.error);
    case "resume": return "resumed " + plainValue(row.checkpoint) + " at frame " + plainValue(row.frames);
    case "stop": return plainValue(row.reason) + (typeof row.final_eval_return_mean === "number"
      ? "; final policy: return_mean " + plainValue(row.final_eval_return_mean) + " over " + plainValue(row.final_eval_episodes) + " episodes" : "");
    default:
      return Object.entries(rest).filter(([k]) => k !== "counters")
        .map(([k, v]) => k + ": " + plainValue(v)).join("; ");
  }
}

function addEvent(run, row) {
  const tbody = document.querySelector("#events tbody");
  const cls = row.event.startsWith("reload") ? "reload" : (row.event.includes("lost") || row.event.includes("left") ? "lost" : "");
  const tr = el("tr", {className: cls},
    el("td", {textContent: run.name}), el("td", {textContent: (row.time_s ?? 0).toFixed(1)}),
    el("td", {textContent: row.event}), el("td", {textContent: eventDetails(row)}));
  tr.dataset.event = row.event;
  tbody.prepend(tr);
}

function runSeries(run, metric) {
  const pts = run.rows.filter((r) => typeof r[metric] === "number" && typeof r[state.x] === "number")
    .map((r) => [r[state.x], r[metric]]);
  return {label: run.name, pts};
}

function bandKey(group, metric) {
  return group + "|" + metric + "|" + state.x;
}

// The mean and min/max band of every group of runs for the chosen metrics, from
// the server (curves::band over the runs' files, the same as `moonseed plot`).
async function refreshBands() {
  if (!state.group) return;
  for (const metric of state.chosen) {
    if (!state.metrics.has(metric)) continue;
    for (let g = 0; g < state.groups.length; g++) {
      if (state.groups[g].runs.length < 2) continue;  // a run of its own is drawn as it is
      const reply = await getJson("api/band?group=" + g + "&metric=" + encodeURIComponent(metric) + "&x=" + state.x);
      state.bands.set(bandKey(g, metric), reply);
    }
  }
}

// Series for one metric: one per run, or per group its mean, min and max (a
// group whose runs do not overlap, or with one run that has the metric, shows
// its runs one by one).
function seriesFor(metric) {
  if (!state.group) return state.runs.map((run) => runSeries(run, metric));
  const out = [];
  state.groups.forEach((group, g) => {
    const band = state.bands.get(bandKey(g, metric));
    if (!band || band.runs.length < 2 || band.x.length === 0) {
      for (const i of group.runs) out.push(runSeries(state.runs[i], metric));
      return;
    }
    const pts = (ys) => band.x.map((x, k) => [x, ys[k]]);
    out.push({label: group.label + " mean", pts: pts(band.mean)});
    out.push({label: group.label + " min", pts: pts(band.low), band: "low"});
    out.push({label: group.label + " max", pts: pts(band.high), band: "high"});
  });
  return out;
}

// uPlot wants one x array: the union of the series' xs, null where a series has no point.
function aligned(series) {
  const xs = [...new Set(series.flatMap((s) => s.pts.map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const data = [xs];
  for (const s of series) {
    const ys = new Array(xs.length).fill(null);
    for (const [x, y] of s.pts) ys[index.get(x)] = y;
    data.push(ys);
  }
  return data;
}

// A tick's label for ticks `step` apart (curves/figure.h tick_label): SI prefixes from a
// thousand on ("250k", "1.5M"), plain below ("0.25", "-150"), "2.5e-4" for tiny steps.
function tickLabel(v, step, si = true) {
  if (v === 0 || Math.abs(v) < Math.abs(step) * 1e-9) return "0";
  step = Math.abs(step);
  const decimals = (unitStep) => {
    const k = Math.floor(Math.log10(unitStep) + 1e-9);
    const m = unitStep / Math.pow(10, k);
    return Math.min(6, Math.max(0, -k + (Math.abs(m - Math.round(m)) > 1e-6 ? 1 : 0)));
  };
  const trim = (t) => t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
  if (step < 1e-3 && Math.abs(v) < 1e-2) {
    const e = Math.floor(Math.log10(Math.abs(v)));
    const scale = Math.pow(10, e);
    return trim((v / scale).toFixed(decimals(step / scale))) + "e" + e;
  }
  const prefixes = ["", "k", "M", "G", "T", "P"];
  let p = 0, scale = 1;
  while (si && Math.abs(v) >= scale * 1000 && p < 5) { scale *= 1000; p++; }
  return trim((v / scale).toFixed(decimals(step / scale))) + prefixes[p];
}

// uPlot's `values` for an axis: its splits labelled by tickLabel; the first chart's labels are
// kept in #chart-data for the browser test.
function tickLabels(metric, axis) {
  return (u, splits) => {
    const step = splits.length > 1 ? splits[1] - splits[0] : (splits[0] || 1);
    // Prefixes only when some tick reaches 10^4: 800 beside 1000, not beside 1k.
    const si = splits.some((v) => Math.abs(v) >= 1e4);
    const labels = splits.map((v) => tickLabel(v, step, si));
    const first = document.querySelector("#charts .chart");
    if (first && first.dataset.metric === metric) document.getElementById("chart-data").dataset[axis + "Ticks"] = labels.join(" ");
    return labels;
  };
}

// A chart as wide as its column less its box's padding and border, never wider: no sideways
// scrolling.
function chartWidth(box) {
  return Math.max(300, box.clientWidth - 24);
}

window.addEventListener("resize", () => {
  const box = document.getElementById("charts");
  for (const c of state.charts.values()) if (c.plot) c.plot.setSize({width: chartWidth(box), height: 220});
});

const kColors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

function redraw(rebuild) {
  const box = document.getElementById("charts");
  if (rebuild) {
    for (const c of state.charts.values()) if (c.plot) c.plot.destroy();
    state.charts.clear();
    box.textContent = "";
  }
  for (const metric of [...state.chosen].sort()) {
    if (!state.metrics.has(metric)) continue;
    const series = seriesFor(metric);
    const data = aligned(series);
    const key = series.map((s) => s.label).join("|") + "|" + state.x;
    let chart = state.charts.get(metric);
    if (chart && chart.key !== key) {
      if (chart.plot) chart.plot.destroy();
      chart.div.remove();
      chart = null;
    }
    if (!chart) {
      const div = el("div", {className: "chart"}, el("h3", {textContent: metric}));
      div.dataset.metric = metric;
      box.append(div);
      chart = {div, key, plot: null};
      if (hasChartLibrary) {
        let color = -1;
        const opts = {
          width: chartWidth(box), height: 220,
          scales: {x: {time: false}},
          // Ticks about 80 px apart on x, 25 on y, labelled as `moonseed plot` labels them.
          axes: [{label: state.x === "frames" ? "env frames" : "wall time (s)", space: 80, values: tickLabels(metric, "x")},
                 {space: 25, values: tickLabels(metric, "y"), size: 60}],
          series: [{}].concat(series.map((s) => {
            if (!s.band) color++;
            const c = kColors[color % kColors.length];
            return {label: s.label, stroke: c, width: s.band ? 0.5 : 1.5, spanGaps: true,
                    dash: s.band ? [4, 4] : undefined};
          })),
        };
        // Fill between each group's min and max (uPlot counts x as series 0).
        opts.bands = [];
        color = -1;
        series.forEach((s, i) => {
          if (!s.band) color++;
          if (s.band === "low") opts.bands.push({series: [i + 2, i + 1], fill: kColors[color % kColors.length] + "33"});
        });
        chart.plot = new uPlot(opts, data, div);
      }
      state.charts.set(metric, chart);
    } else if (chart.plot) {
      chart.plot.setData(data);
    }
    chart.div.dataset.points = String(data[0].length);
  }
}

function updateCounts() {
  const d = document.getElementById("chart-data");
  let points = 0, lastFrames = 0, events = 0, reloads = 0;
  for (const run of state.runs) {
    points += run.rows.filter((r) => typeof r.return_mean === "number").length;
    const last = run.rows[run.rows.length - 1];
    if (last && typeof last.frames === "number") lastFrames = Math.max(lastFrames, last.frames);
    events += run.events.length;
    reloads += run.events.filter((e) => e.event === "reload").length;
  }
  d.dataset.runs = String(state.runs.length);
  d.dataset.points = String(points);
  d.dataset.lastFrames = String(lastFrames);
  d.dataset.events = String(events);
  d.dataset.reloads = String(reloads);
  // The page's width beside the window's: equal when nothing scrolls sideways.
  d.dataset.pageWidth = String(document.documentElement.scrollWidth);
  d.dataset.viewWidth = String(document.documentElement.clientWidth);
}

async function pollStatus() {
  const status = await getJson("api/status");
  const box = document.getElementById("status-box");
  if (status === null) return;
  box.hidden = false;
  const tbody = document.querySelector("#status tbody");
  tbody.textContent = "";
  const result = Object.assign({}, status.result ?? status);
  showActors(result);
  showRanks(result);
  // The rate comes with the metrics rows, not with `ctl status`: the newest row's.
  const rows = state.runs.length ? state.runs[0].rows : [];
  if (rows.length && typeof rows[rows.length - 1].fps === "number") result.fps = rows[rows.length - 1].fps;
  for (const [k, v] of Object.entries(result)) {
    if (typeof v === "object" && v !== null) continue;  // the actor list and the ranks have their own panels
    tbody.append(el("tr", {}, el("th", {textContent: k}), el("td", {textContent: typeof v === "number" ? +v.toPrecision(6) : String(v)})));
  }
}

// "42s", "3m 05s", "2h 07m": how long an actor has been connected.
function durationText(s) {
  const t = Math.floor(s);
  const two = (n) => String(n).padStart(2, "0");
  if (t < 60) return t + "s";
  if (t < 3600) return Math.floor(t / 60) + "m " + two(t % 60) + "s";
  return Math.floor(t / 3600) + "h " + two(Math.floor(t / 60) % 60) + "m";
}

// The Actors panel (live runs only): one row per actor of the status's
// actor_list, its rate over the run's last log interval; a lost actor is red.
function showActors(result) {
  const box = document.getElementById("actors-box");
  if (!Array.isArray(result.actor_list)) { box.hidden = true; return; }
  box.hidden = false;
  const tbody = document.querySelector("#actors tbody");
  tbody.textContent = "";
  for (const a of result.actor_list) {
    const fps = typeof a.fps === "number" ? (a.fps >= 100 ? String(Math.round(a.fps)) : a.fps.toFixed(1)) : "-";
    const since = a.connected ? (typeof a.connected_s === "number" ? durationText(a.connected_s) : "") : "disconnected";
    const tr = el("tr", {className: a.connected ? "" : "lost"},
      el("td", {textContent: String(a.id)}), el("td", {textContent: a.host}), el("td", {textContent: String(a.pid)}),
      el("td", {textContent: fps}), el("td", {textContent: String(a.frames)}),
      el("td", {textContent: String(a.connections)}), el("td", {textContent: since}));
    tr.dataset.actor = String(a.id);
    tr.dataset.connected = String(a.connected);
    if (typeof a.fps === "number") tr.dataset.fps = String(a.fps);
    tbody.append(tr);
  }
  const more = document.getElementById("actors-more");
  const rest = result.actors_not_listed || 0;
  more.hidden = rest === 0;
  more.textContent = rest ? "and " + rest + " more actor" + (rest > 1 ? "s" : "") + " (the list shows the first " +
    result.actor_list.length + " by id)" : "";
}

// The Learner ranks panel (rank 0 of a learner group only): one row per rank
// of the status's "ranks", with how long ago rank 0 heard its report; a stale
// rank is red. The status table above then holds the group's counters.
function showRanks(result) {
  const box = document.getElementById("ranks-box");
  if (!Array.isArray(result.ranks)) { box.hidden = true; return; }
  box.hidden = false;
  const shown = (v, digits) => typeof v === "number" ? (digits === undefined ? String(v) : v.toFixed(digits)) : "-";
  const tbody = document.querySelector("#ranks tbody");
  tbody.textContent = "";
  for (const r of result.ranks) {
    const age = typeof r.report_age_s === "number" ? durationText(r.report_age_s) + " ago" : "never";
    const tr = el("tr", {className: r.stale ? "stale" : ""},
      el("td", {textContent: String(r.rank)}), el("td", {textContent: String(r.host ?? "")}),
      el("td", {textContent: shown(r.frames)}), el("td", {textContent: shown(r.fps, 1)}),
      el("td", {textContent: shown(r.episodes)}), el("td", {textContent: shown(r.return_mean, 1)}),
      el("td", {textContent: shown(r.optimizer_steps)}), el("td", {textContent: shown(r.actors)}),
      el("td", {textContent: r.stale ? age + " (stale)" : age}));
    tr.dataset.rank = String(r.rank);
    tr.dataset.stale = String(r.stale);
    if (typeof r.frames === "number") tr.dataset.frames = String(r.frames);
    tbody.append(tr);
  }
  const reporting = result.ranks.filter((r) => !r.stale).length;
  document.getElementById("ranks-note").textContent = "Status shows the group: frames, fps, episodes and return over all " +
    result.ranks.length + " ranks (" + reporting + " reporting); the actor list is rank 0's own.";
}

async function showConfig() {
  const sel = document.getElementById("config-run");
  const r = await fetch("api/config?run=" + sel.value, {credentials: "same-origin"});
  document.getElementById("config").textContent = await r.text();
}

let lastReloads = -1;
async function tick() {
  try {
    const before = state.runs.map((r) => r.rows.length).join(",");
    for (const run of state.runs) await pollRows(run);
    await pollStatus();
    const after = state.runs.map((r) => r.rows.length).join(",");
    if (after !== before) {
      await refreshBands();
      redraw(false);
    }
    updateCounts();
    const reloads = state.runs.reduce((n, r) => n + r.events.filter((e) => e.event.startsWith("reload")).length, 0);
    if (reloads !== lastReloads) { lastReloads = reloads; await showConfig(); }
  } catch (e) {
    showNotice("cannot reach the run: " + e.message);
  }
  setTimeout(tick, 1000);
}

function showNotice(text) {
  const n = document.getElementById("notice");
  n.textContent = text;
  n.hidden = false;
}

async function main() {
  if (!hasChartLibrary) showNotice("This build has no chart library (npm was not reachable when it was built): tables only.");
  const runs = await getJson("api/runs");
  state.runs = runs.map((r) => ({run: r.run, name: r.name, group: r.group, next: 0, rows: [], events: []}));
  for (const r of runs) {
    if (!state.groups[r.group]) state.groups[r.group] = {label: r.group_label, runs: []};
    state.groups[r.group].runs.push(r.run);
  }
  document.getElementById("runs").textContent = state.runs.map((r) => r.name).join(", ");
  const sel = document.getElementById("config-run");
  for (const r of state.runs) sel.append(el("option", {value: r.run, textContent: r.name}));
  sel.addEventListener("change", showConfig);
  if (state.groups.length < state.runs.length) document.getElementById("group-label").hidden = false;
  // ?x=time_s and ?group=1 open the page with those choices made (links, tests).
  const params = new URLSearchParams(location.search);
  if (params.get("x") === "time_s") { state.x = "time_s"; document.getElementById("x-axis").value = "time_s"; }
  if (params.get("group") === "1") { state.group = true; document.getElementById("group-seeds").checked = true; }
  const redrawWithBands = () => refreshBands().then(() => redraw(true)).catch((e) => showNotice("cannot reach the run: " + e.message));
  document.getElementById("x-axis").addEventListener("change", (e) => { state.x = e.target.value; redrawWithBands(); });
  document.getElementById("group-seeds").addEventListener("change", (e) => { state.group = e.target.checked; redrawWithBands(); });
  tick();
}

main();
