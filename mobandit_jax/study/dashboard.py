"""``mobandit study dashboard``: a live, read-only local web page of a study (SQLite or PostgreSQL).

The standard library's :class:`http.server.ThreadingHTTPServer` serves three things:

- ``/``: one self-contained page (its style and script inline: nothing is fetched from elsewhere) that asks for
  ``/state.json`` every second and shows the study's status and the rule that ends it, the budget spent against
  ``B``, the recommended set, every arm (pulls, means and 95% intervals, cost, state, its configuration) and the
  latest tells. The script writes every text it shows through ``textContent``, never as HTML, so an arm, a
  configuration or an objective named ``<img src=x onerror=alert(1)>`` is shown as those characters and runs nothing.
- ``/state.json``: that state, read afresh from the study's events (at most every :data:`FRESH` seconds), so a tell
  made by any process shows within about a second.
- ``/figure.svg``: the study's figure (:mod:`.plot`), drawn by matplotlib on the server and shown as an image (an
  SVG in an ``<img>`` runs no script); drawn again only when the state changed.

It is read-only: it answers ``GET`` and ``HEAD`` only (any other method gets 405 and touches nothing), and it only
reads the study (:meth:`Study.status`, :meth:`Study.arms`, :meth:`Study.history`, which append no event). It listens
on 127.0.0.1 unless another address is given.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .. import errors
from . import plot

FRESH = 0.5  # seconds a state read from the study is served before it is read again
LATEST = 10  # the latest tells shown


def _plain(value):
    """``value`` as JSON data: NaN and infinities as null, numpy and pandas scalars as Python ones."""
    value = errors.plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def _rows(frame, columns) -> list:
    return [[_plain(v) for v in row] for row in frame[columns].itertuples(index=False)]


def _estimate(mean, low, high) -> str | None:
    """``0.806 [0.541, 1]``: a mean and its interval (the interval left out where there is none)."""
    mean, low, high = (_plain(v) for v in (mean, low, high))
    if mean is None:
        return None
    return f"{mean:.4g}" + ("" if low is None or high is None else f" [{low:.4g}, {high:.4g}]")


def ends_when(spec, status: dict) -> str:
    """The rule that ends the study, in words.

    Args:
      spec: the study's :class:`~.spec.StudySpec`.
      status: its ``status()``.

    Returns:
      What ``status`` says ended it, once it has ended; else the rule that will.
    """
    if status.get("ended_by"):
        return str(status["ended_by"])
    if spec.budget is not None:
        rule = f"the budget B = {spec.budget:g} is spent"
    elif "stopped" in status:
        rule = "its stopping rule fires (fixed confidence)"
    else:
        rule = f"{spec.horizon} evaluations are told (the horizon)"
    return f"{rule}, or the method has nothing more to ask"


class Dashboard:
    """What the page shows, read from ``study`` (thread-safe; the study is only read).

    Args:
      study: a :class:`~mobandit_jax.study.Study` (opened with ``Study.load``).
    """

    def __init__(self, study):
        self.study = study
        self._lock = threading.Lock()
        self._read_at, self._state, self._frames = -math.inf, None, None
        self._svg, self._drawing = (None, b""), threading.Lock()

    def state(self) -> dict:
        """The page's data, read from the study at most every :data:`FRESH` seconds.

        Returns:
          A dict of JSON data: ``title``, ``status``, ``ends``, ``budget``, ``objectives``, ``arms`` (``columns``,
          ``rows``), ``recommended``, ``latest`` (``columns``, ``rows``) and ``version`` (changes with the study).
        """
        with self._lock:
            if time.monotonic() - self._read_at >= FRESH:
                self._state = self._read()
                self._read_at = time.monotonic()
            return self._state

    def _read(self) -> dict:
        study, spec = self.study, self.study.spec
        status, history = study.status(), study.history()
        arms = plot.clipped(study.arms(), spec.objectives, plot.bounds(spec))
        configs = sorted({k for c in spec.configs or [] for k in (c or {})})
        shown = arms.assign(**{o: [_estimate(*v) for v in zip(arms[o], arms[f"{o}_low"], arms[f"{o}_high"],
                                                                strict=True)] for o in spec.objectives})
        arm_cols = ["arm", "pulls", *spec.objectives, "cost", "recommended", "state"]
        told = history[history["state"] == "told"].sort_values("told").tail(LATEST).iloc[::-1]
        told = told.assign(told=told["told"].dt.strftime("%Y-%m-%d %H:%M:%S UTC"))
        latest_cols = ["told", "ticket", "arm", *spec.objectives, "cost", "worker"]
        rows = _rows(shown, arm_cols)
        for row, config in zip(rows, spec.configs or [{}] * len(rows), strict=True):
            row.extend(_plain((config or {}).get(k)) for k in configs)
        state = dict(title=plot.title(study, status), status={k: _plain(v) for k, v in status.items()},
                     ends=ends_when(spec, status), budget=_plain(spec.budget), objectives=list(spec.objectives),
                     arms=dict(columns=[*arm_cols[:2], *(f"{o} (mean [95% interval])" for o in spec.objectives),
                                        *arm_cols[2 + len(spec.objectives):], *configs], rows=rows),
                     recommended=[str(a) for a in arms["arm"][arms["recommended"]]],
                     latest=dict(columns=latest_cols, rows=_rows(told, latest_cols)))
        state["version"] = hashlib.sha1(json.dumps(state, sort_keys=True).encode()).hexdigest()[:16]
        self._frames = (state["version"], arms, history)
        return state

    def figure_svg(self) -> bytes:
        """The study's figure, drawn again only when the state changed.

        Returns:
          The SVG's bytes.
        """
        self.state()
        with self._lock:
            version, arms, history = self._frames
        with self._drawing:  # a drawing does not hold up the state's readers
            if self._svg[0] != version:
                out = io.BytesIO()
                plot.spec_figure(self.study.spec, arms, history).savefig(out, format="svg", bbox_inches="tight")
                self._svg = (version, out.getvalue())
            return self._svg[1]


class _Handler(BaseHTTPRequestHandler):
    dashboard: Dashboard  # set on the class made by :func:`serve`

    def _send(self, code: int, body: bytes, kind: str, head: bool = False, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; "
                         "style-src 'unsafe-inline'; img-src 'self'")
        for key, value in extra:
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_GET(self, head: bool = False):  # noqa: N802 -- http.server's name
        path = self.path.split("?", 1)[0]
        try:
            if path == "/":
                self._send(200, PAGE.encode(), "text/html; charset=utf-8", head)
            elif path == "/state.json":
                body = json.dumps(self.dashboard.state()).encode()
                self._send(200, body, "application/json", head)
            elif path == "/figure.svg":
                self._send(200, self.dashboard.figure_svg(), "image/svg+xml", head)
            else:
                self._send(404, b"not found\n", "text/plain", head)
        except Exception as err:  # noqa: BLE001 -- a failed read (a busy database) is answered, the server goes on
            self._send(503, f"could not read the study: {type(err).__name__}: {err}\n".encode(), "text/plain", head)

    def do_HEAD(self):  # noqa: N802
        self.do_GET(head=True)

    def _refuse(self):
        self._send(405, b"read-only: only GET and HEAD\n", "text/plain", extra=[("Allow", "GET, HEAD")])

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

    def log_message(self, format, *args):  # noqa: A002 -- http.server's signature
        pass


def serve(study, host: str = "127.0.0.1", port: int = 8080) -> ThreadingHTTPServer:
    """A dashboard server of ``study`` on ``host:port`` (bound, not yet serving: call ``serve_forever()``).

    Args:
      study: the study (opened with ``Study.load``).
      host: the address to listen on (default loopback only).
      port: the port (0: any free one; ``server.server_address`` says which).

    Returns:
      The server.
    """
    handler = type("DashboardHandler", (_Handler,), {"dashboard": Dashboard(study)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mobandit study</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.2em 2em; color: #222; }
h1 { font-size: 1.25em; margin: 0 0 .4em; } h2 { font-size: 1.05em; margin: 1.2em 0 .4em; }
table { border-collapse: collapse; font-size: 13px; } td, th { padding: 2px 8px; border-bottom: 1px solid #ddd; }
th { text-align: left; background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
#budget { width: 28em; height: 1em; background: #eee; border: 1px solid #bbb; display: inline-block;
          vertical-align: middle; } #spent { height: 100%; background: #0072B2; width: 0; }
.recommended { color: #009E73; font-weight: 600; } .rejected { color: #D55E00; } .active { color: #0072B2; }
.unevaluated { color: #777; } .accepted { color: #3a8fc4; }
#figure { max-width: 100%; border: 1px solid #eee; } #error { color: #D55E00; }
</style></head><body>
<h1 id="title">mobandit study</h1>
<div>evaluations told: <b id="told">-</b> &middot; pending: <span id="pending">-</span> &middot; failed:
<span id="failed">-</span> &middot; <span id="reason"></span> &middot; updated <span id="updated">-</span>
<span id="error"></span></div>
<div>ends when <span id="ends">-</span></div>
<div id="budget-row">budget: <span id="budget"><div id="spent"></div></span> <span id="budget-text"></span></div>
<h2>Recommended set</h2><div id="recommended">-</div>
<h2>Figure</h2><img id="figure" alt="the study's figure: estimated front, budget over time, pulls per arm">
<h2>Arms</h2><table id="arms"></table>
<h2>Latest tells</h2><table id="latest"></table>
<script>
"use strict";
let version = null;
const el = (id) => document.getElementById(id);
function cell(row, value, head) {
  const td = document.createElement(head ? "th" : "td");
  if (typeof value === "number") {
    td.className = "num";
    value = Number.isInteger(value) ? value : value.toPrecision(4);
  }
  td.textContent = value === null || value === undefined ? "" : String(value);
  row.appendChild(td);
  return td;
}
function table(node, columns, rows, mark) {
  node.replaceChildren();
  const head = node.insertRow(); columns.forEach((c) => cell(head, c, true));
  rows.forEach((r) => { const tr = node.insertRow(); r.forEach((v) => cell(tr, v, false)); if (mark) mark(tr, r); });
}
function show(s) {
  document.title = s.title; el("title").textContent = s.title;
  for (const k of ["told", "pending", "failed"]) el(k).textContent = String(s.status[k]);
  el("reason").textContent = s.status.finished ? "ended (" + s.status.reason + ")"
    : (s.status.reason ? "waiting (" + s.status.reason + ")" : "running");
  el("ends").textContent = s.ends;
  if (s.budget === null) { el("budget-row").style.display = "none"; }
  else {
    const spent = s.status.spent || 0;
    el("spent").style.width = Math.min(100, 100 * spent / s.budget) + "%";
    el("budget-text").textContent = spent.toPrecision(4) + " of " + s.budget + " spent";
  }
  el("recommended").textContent = s.recommended.length ? s.recommended.join(", ") : "(none yet)";
  const state = s.arms.columns.indexOf("state"), rec = s.arms.columns.indexOf("recommended");
  table(el("arms"), s.arms.columns, s.arms.rows, (tr, r) => { tr.className = r[rec] ? "recommended" : r[state]; });
  table(el("latest"), s.latest.columns, s.latest.rows);
  if (s.version !== version) {
    version = s.version;
    const v = version, img = el("figure");
    img.onload = () => { img.dataset.shown = v; };
    img.src = "figure.svg?v=" + encodeURIComponent(v);
  }
}
async function tick() {
  try {
    const r = await fetch("state.json", {cache: "no-store"});
    if (!r.ok) throw new Error(await r.text());
    show(await r.json());
    el("error").textContent = "";
    el("updated").textContent = new Date().toLocaleTimeString();
  } catch (e) { el("error").textContent = "(could not read the study: " + e.message + "; retrying)"; }
  setTimeout(tick, 1000);
}
tick();
</script></body></html>
"""
