"""The dashboard page: HTML, its stylesheet and its script (no third-party code, works offline).

The page carries the current snapshot (:func:`farlink.linkmgr.view.snapshot`) as inert JSON and
draws it at once; then it subscribes to ``/events`` and redraws on every ``snapshot`` message.
Text from the log (member names, errors) is only ever set as text, never parsed as HTML, and the
Content-Security-Policy allows scripts and styles from the dashboard itself only.
"""

from __future__ import annotations

import html as _html
from urllib.parse import quote

__all__ = ["CSP", "SCRIPT", "STYLE", "html"]

CSP = "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"


def html(state_json: str, token: str | None) -> str:
    """The page, with the snapshot embedded and the token (if any) on its own requests."""
    suffix = f"?token={quote(token, safe='')}" if token else ""
    data = state_json.replace("</", "<\\/")  # the JSON cannot end its script element
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>farlink link manager</title>
<link rel="stylesheet" href="dashboard.css{_html.escape(suffix)}">
</head>
<body>
<header>
  <h1>farlink link manager</h1>
  <span id="log"></span>
  <span id="live" class="live off" title="live updates">offline</span>
</header>
<section id="summary" aria-label="bundle"></section>
<section aria-label="modems">
  <h2>Modems</h2>
  <div id="modems"></div>
  <div id="legend"></div>
</section>
<section aria-label="timeline">
  <h2>States and call drops</h2>
  <div id="timeline"></div>
</section>
<section aria-label="throughput">
  <h2>Bundle throughput</h2>
  <div id="throughput"></div>
</section>
<p id="error" hidden></p>
<script id="initial" type="application/json">{data}</script>
<script src="dashboard.js{_html.escape(suffix)}"></script>
</body>
</html>
"""


STYLE = """
:root { font-family: system-ui, sans-serif; color: #1d2429; background: #f4f6f8; }
body { margin: 0 auto; max-width: 1100px; padding: 12px 20px 40px; }
header { display: flex; align-items: baseline; gap: 16px; flex-wrap: wrap; }
h1 { font-size: 1.4em; margin: 8px 0; }
h2 { font-size: 1.05em; margin: 22px 0 8px; color: #37474f; }
#log { color: #546e7a; font-size: 0.9em; }
.live { margin-left: auto; font-size: 0.8em; padding: 2px 8px; border-radius: 9px; }
.live.on { background: #2e9d3a; color: #fff; }
.live.off { background: #b0bec5; color: #1d2429; }
#summary { display: grid; grid-template-columns: repeat(auto-fit, minmax(128px, 1fr));
  gap: 10px; }
.figure { background: #fff; border-radius: 8px; padding: 10px 12px; box-shadow: 0 1px 2px #0002; }
.figure .label { font-size: 0.78em; color: #546e7a; }
.figure .value { font-size: 1.3em; font-weight: 600; margin-top: 2px; white-space: nowrap; }
#modems { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 10px; }
.modem { border-radius: 8px; padding: 10px 12px; min-height: 124px; position: relative;
  box-shadow: 0 1px 3px #0003; }
.modem .name { font-weight: 700; font-size: 1.1em; }
.modem .state { font-size: 1.15em; text-transform: uppercase; letter-spacing: 0.04em;
  margin: 4px 0; }
.modem .facts { font-size: 0.8em; line-height: 1.45; }
.modem .badge { position: absolute; top: 8px; right: 10px; font-size: 0.7em; font-weight: 700;
  padding: 2px 6px; border-radius: 6px; background: #fff; color: #1d2429; }
.bars { position: absolute; right: 10px; bottom: 10px; display: flex; align-items: flex-end;
  gap: 2px; }
.bars span { width: 5px; border-radius: 1px; background: currentColor; opacity: 0.25; }
.bars span.lit { opacity: 1; }
#legend { display: flex; gap: 14px; flex-wrap: wrap; margin-top: 10px; font-size: 0.85em; }
#legend i { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px;
  vertical-align: -1px; }
svg { background: #fff; border-radius: 8px; box-shadow: 0 1px 2px #0002; width: 100%; }
svg text { font-size: 11px; fill: #37474f; }
#error { background: #ffebee; color: #b71c1c; padding: 8px 12px; border-radius: 6px; }
"""


SCRIPT = r"""
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token");
  const withToken = (path) => token ? path + "?token=" + encodeURIComponent(token) : path;
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, text) {
    const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4))
                                       : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  const pct = (x) => (100 * x).toFixed(1) + " %";
  const plural = (n, word) => n + " " + word + (n === 1 ? "" : "s");
  function duration(s) {
    if (s === null || s === undefined) return "";
    s = Math.max(0, s);
    if (s < 90) return s.toFixed(0) + " s";
    if (s < 5400) return (s / 60).toFixed(1) + " min";
    return (s / 3600).toFixed(2) + " h";
  }
  const rate = (bps) =>
    bps >= 1000 ? (bps / 1000).toFixed(2) + " kbit/s" : bps.toFixed(0) + " bit/s";
  function ink(hex) {  // black or white text, whichever reads better on the colour
    const n = parseInt(hex.slice(1), 16);
    const l = 0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255);
    return l > 150 ? "#1d2429" : "#ffffff";
  }

  function summary(s) {
    const box = document.getElementById("summary");
    box.replaceChildren();
    const figures = [
      ["All members up", pct(s.all_up_fraction), "uptime-all"],
      ["At least one up", pct(s.any_up_fraction), "uptime-any"],
      ["Primary", s.primary === null ? "none" : s.primary, "primary"],
      ["Members up", s.members_up + " / " + s.members.length, "members-up"],
      ["Call drops (primary)", s.drops + " (" + s.primary_drops + ")", "drops"],
      ["tx / rx, kbit/s",
       (s.tx_bps / 1000).toFixed(2) + " / " + (s.rx_bps / 1000).toFixed(2), "throughput-now"],
      ["Log time", duration(s.duration_s), "log-time"],
    ];
    for (const [label, value, id] of figures) {
      const card = el("div", {class: "figure"});
      card.append(el("div", {class: "label"}, label), el("div", {class: "value", id: id}, value));
      box.append(card);
    }
  }

  function bars(n) {
    const title = n === null ? "no signal sample" : n + " of 5 bars";
    const box = el("div", {class: "bars", title: title});
    for (let i = 1; i <= 5; i++) {
      const bar = el("span", {class: n !== null && i <= n ? "lit" : ""});
      bar.style.height = (3 + 3 * i) + "px";
      box.append(bar);
    }
    return box;
  }

  function modems(s) {
    const box = document.getElementById("modems");
    box.replaceChildren();
    for (const m of s.members) {
      const card = el("div", {class: "modem", "data-state": m.state, "data-name": m.name});
      card.style.background = m.color;
      card.style.color = ink(m.color);
      card.append(el("div", {class: "name"}, m.name));
      card.append(el("div", {class: "state"}, m.state));
      if (m.primary) card.append(el("span", {class: "badge"}, "PRIMARY"));
      const facts = el("div", {class: "facts"});
      if (m.since_s !== null) {
        facts.append(el("div", {}, "for " + duration(s.duration_s - m.since_s)));
      }
      facts.append(el("div", {}, "uptime " + pct(m.uptime_fraction)));
      facts.append(el("div", {}, plural(m.drops, "drop") + ", " + plural(m.dials, "dial")));
      if (m.handover) facts.append(el("div", {}, "handover"));
      if (m.held) facts.append(el("div", {}, "held"));
      card.append(facts, bars(m.signal_bars));
      box.append(card);
    }
    const legend = document.getElementById("legend");
    legend.replaceChildren();
    for (const [state, color] of Object.entries(s.colors)) {
      const item = el("span", {});
      const swatch = el("i", {});
      swatch.style.background = color;
      item.append(swatch, document.createTextNode(state));
      legend.append(item);
    }
  }

  function axis(svg, x0, x1, y, span, width) {
    const ticks = 6;
    for (let i = 0; i <= ticks; i++) {
      const x = x0 + (x1 - x0) * i / ticks;
      svg.append(el("svg:line", {x1: x, x2: x, y1: y, y2: y + 4, stroke: "#90a4ae"}));
      const anchor = i === 0 ? "start" : i === ticks ? "end" : "middle";
      svg.append(el("svg:text", {x: x, y: y + 16, "text-anchor": anchor},
                    duration(span * i / ticks)));
    }
  }

  function timeline(s) {
    const box = document.getElementById("timeline");
    const rowH = 18, left = 90, right = 12, top = 8, width = 1000;
    const height = top + s.members.length * rowH + 28;
    const svg = el("svg:svg", {viewBox: "0 0 " + width + " " + height, id: "timeline-svg"});
    const span = Math.max(s.duration_s, 1);
    const X = (t) => left + (width - left - right) * Math.min(Math.max(t, 0), span) / span;
    s.members.forEach((m, row) => {
      const y = top + row * rowH;
      svg.append(el("svg:text", {x: left - 8, y: y + 13, "text-anchor": "end"}, m.name));
      m.segments.forEach(([t, state], i) => {
        const end = i + 1 < m.segments.length ? m.segments[i + 1][0] : span;
        const w = X(end) - X(t);
        if (w <= 0) return;
        svg.append(el("svg:rect", {x: X(t), y: y + 2, width: w, height: rowH - 5,
                                   fill: s.colors[state] || "#455a64"}));
      });
      for (const t of m.drop_times_s) {
        svg.append(el("svg:line", {x1: X(t), x2: X(t), y1: y, y2: y + rowH - 1,
                                   stroke: "#000", "stroke-width": 1.5, class: "drop"}));
      }
    });
    axis(svg, left, width - right, top + s.members.length * rowH + 2, span, width);
    box.replaceChildren(svg);
  }

  function throughput(s) {
    const box = document.getElementById("throughput");
    const width = 1000, height = 180, left = 70, right = 12, top = 10, bottom = 26;
    const svg = el("svg:svg", {viewBox: "0 0 " + width + " " + height, id: "throughput-svg"});
    const pts = s.throughput;
    const span = Math.max(s.duration_s, 1);
    let peak = 1;
    for (const [, tx, rx] of pts) peak = Math.max(peak, tx, rx);
    const X = (t) => left + (width - left - right) * Math.min(Math.max(t, 0), span) / span;
    const Y = (v) => top + (height - top - bottom) * (1 - v / peak);
    for (const f of [0, 0.5, 1]) {
      svg.append(el("svg:line", {x1: left, x2: width - right, y1: Y(peak * f), y2: Y(peak * f),
                                 stroke: "#eceff1"}));
      svg.append(el("svg:text", {x: left - 6, y: Y(peak * f) + 4, "text-anchor": "end"},
                    rate(peak * f)));
    }
    const series = [[1, "#1565c0", "tx"], [2, "#ef6c00", "rx"]];
    for (const [col, color, name] of series) {
      if (!pts.length) break;
      const d = pts.map((p, i) =>
        (i ? "L" : "M") + X(p[0]).toFixed(1) + " " + Y(p[col]).toFixed(1));
      svg.append(el("svg:path", {d: d.join(" "), fill: "none", stroke: color,
                                 "stroke-width": 1.6, class: "series-" + name}));
      const label = el("svg:text", {x: width - right - (col === 1 ? 60 : 25), y: top + 10}, name);
      label.style.fill = color;
      svg.append(label);
    }
    if (!pts.length) {
      svg.append(el("svg:text", {x: width / 2, y: height / 2, "text-anchor": "middle"},
                    "no byte counts in the log yet"));
    }
    axis(svg, left, width - right, height - bottom, span, width);
    box.replaceChildren(svg);
  }

  function draw(s) {
    const when = s.last_unix_s === null ? "" :
      new Date(s.last_unix_s * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
    document.getElementById("log").textContent =
      s.log + (s.role ? " (" + s.role + ")" : "") + " · event " + s.id +
      (when ? " · " + when : "") +
      (s.daemon ? " · daemon " + s.daemon : "");
    document.body.dataset.eventId = String(s.id);
    summary(s);
    modems(s);
    timeline(s);
    throughput(s);
    const error = document.getElementById("error");
    error.hidden = !s.error;
    error.textContent = s.error || "";
  }

  // A snapshot the page already shows (the first one after (re)connecting repeats the embedded
  // one) leaves the page as it is: redrawing would replace every element under the reader.
  let shown = "";
  let draws = 0;
  function show(text) {
    const s = JSON.parse(text);
    const canonical = JSON.stringify(s);
    if (canonical === shown) return;
    shown = canonical;
    draw(s);
    document.body.dataset.draws = String(++draws);
  }

  show(document.getElementById("initial").textContent);
  const live = document.getElementById("live");
  const source = new EventSource(withToken("events"));
  let received = 0;
  source.addEventListener("snapshot", (e) => {
    document.body.dataset.snapshots = String(++received);
    show(e.data);
  });
  source.onopen = () => { live.textContent = "live"; live.className = "live on"; };
  source.onerror = () => { live.textContent = "reconnecting"; live.className = "live off"; };
})();
"""
