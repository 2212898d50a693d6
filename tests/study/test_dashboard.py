"""``mobandit study dashboard`` in a real browser (headless Chromium over its DevTools protocol): the page lists every
arm, shows a tell made by another process within 2 s, shows an arm named ``<img src=x onerror=alert(1)>`` as text
and runs nothing, refuses every method but GET and HEAD without touching the study, and listens on 127.0.0.1.

Set ``MOBANDIT_DASHBOARD_SCREENSHOT=docs/images/dashboard.png`` to keep the browser's screenshot there (the docs'
picture is made so)."""
import base64
import contextlib
import json
import os
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import mobandit_jax as mb

try:
    from test_study_postgres import server  # noqa: F401 -- its PostgreSQL server (which skips, saying why, without one)
except pytest.skip.Exception:  # psycopg is not installed
    server = None

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
XSS = "<img src=x onerror=alert(1)>"  # an arm, a configuration column, its value and an objective named as HTML
COLUMN, VALUE = "<b onmouseover=alert(2)>family</b>", "<script>alert(3)</script>"
OBJECTIVE = "speed<svg onload=alert(4)>"
NAMES = ["gpt-small", "gpt-medium", "llama-7b", "mistral-7b", XSS, "qwen-1.5b"]
MEANS = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.4, 0.4], [0.2, 0.2], [0.6, 0.3]])
COSTS = [1.0, 2.0, 1.5, 0.5, 1.0, 0.8]
SWEEPS = 2  # evaluations of every arm told before the page opens
ENV = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}


class DevTools:
    """A minimal client of one page's DevTools websocket (RFC 6455 text frames, masked from the client)."""

    def __init__(self, url: str):
        host, _, path = url.removeprefix("ws://").partition("/")
        name, port = host.split(":")
        self.sock = socket.create_connection((name, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.next_id, self.events = 0, []

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "the browser closed the connection"
            out += chunk
        return out

    def _message(self) -> dict:
        data = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data += self._read(n)
            if b0 & 0x80:  # the final fragment
                return json.loads(data)

    def send(self, method: str, **params) -> dict:
        """Call ``method`` and return its result (events that arrive meanwhile are kept in :attr:`events`)."""
        self.next_id += 1
        body = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(body)
        size = bytes([0x80 | n]) if n < 126 else (bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536
                                                  else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(bytes([0x81]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))
        while True:
            msg = self._message()
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg["result"]
            self.events.append(msg)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page."""
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")


def _wait(check, seconds: float, step: float = 0.05):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(step)
    return check()


def _events(folder) -> list:
    with sqlite3.connect(f"file:{folder}/study.db?mode=ro", uri=True) as conn:
        return conn.execute("SELECT seq, kind, ticket, worker, arm, slate, vals, cost, at FROM events ORDER BY seq"
                            ).fetchall()


def _request(url: str, method: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=b"x" if method != "GET" else None,
                                                           method=method), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def _own_address():
    """An address of this machine other than loopback, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # no packet is sent: the route picks the interface
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ip.startswith("127.") else ip


@pytest.fixture
def study(tmp_path):
    rows = [f'"{a}",{"gpt" if a.startswith("gpt") else VALUE}' for a in NAMES]
    (tmp_path / "arms.csv").write_text(f'arm,"{COLUMN}"\n' + "\n".join(rows) + "\n")
    spec = {"study": {"arms": str(tmp_path / "arms.csv"), "objectives": ["accuracy", OBJECTIVE]},
            "budget": {"B": 40.0, "cost": COSTS}, "policies": [{"name": "psi_sr"}]}
    s = mb.Study.create(tmp_path / "study", spec, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(SWEEPS):
        for t in s.ask(6):  # a sweep of every arm
            s.tell(t, np.clip(MEANS[t.index] + 0.1 * rng.standard_normal(2), 0, 1).tolist(),
                   COSTS[t.index] * rng.uniform(0.8, 1.2))
    return s


@contextlib.contextmanager
def _serving(where):
    """``mobandit study dashboard WHERE --port 0`` in a process of its own; yields its address."""
    proc = subprocess.Popen([sys.executable, "-m", "mobandit_jax.cli", "study", "dashboard", where,
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"dashboard of {where} at http://127.0.0.1:"), line + proc.stderr.read()
        yield line.split(" at ")[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture
def dashboard(study):
    with _serving(study.path) as url:
        yield url


@pytest.fixture
def browser(tmp_path):
    if BROWSER is None:
        pytest.skip("no Chromium (Debian's chromium package; .ci/run installs it)")
    profile = tmp_path / "profile"
    proc = subprocess.Popen([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1280,1500",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = profile / "DevToolsActivePort"
    assert _wait(port_file.exists, 20), "Chromium did not open its DevTools port"
    port = _wait(lambda: port_file.read_text().split("\n")[0], 5)
    pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
    tools = DevTools(next(p for p in pages if p["type"] == "page")["webSocketDebuggerUrl"])
    yield tools
    proc.terminate()
    proc.wait(30)


def test_the_page_lists_the_arms_shows_a_tell_at_once_and_runs_no_arm_name(study, dashboard, browser):
    page = browser
    page.send("Page.enable")
    page.send("Runtime.enable")
    # any alert (an injected handler's) sets a flag before the page's own script runs, and opens a dialog event
    page.send("Page.addScriptToEvaluateOnNewDocument",
              source="window.__ran = []; window.alert = (m) => window.__ran.push(String(m));")
    page.send("Page.navigate", url=dashboard)
    rows = _wait(lambda: page.evaluate("Array.from(document.querySelectorAll('#arms tr')).slice(1)"
                                       ".map(r => r.cells[0].textContent)"), 15)
    assert rows == NAMES  # every arm by name, the injected one as its characters
    head = page.evaluate("Array.from(document.querySelector('#arms tr').cells).map(c => c.textContent)")
    assert COLUMN in head and f"{OBJECTIVE} (mean [95% interval])" in head
    column = head.index(COLUMN)
    values = page.evaluate(f"Array.from(document.querySelectorAll('#arms tr')).slice(1).map(r => r.cells[{column}]"
                           ".textContent)")
    assert values == ["gpt", "gpt", VALUE, VALUE, VALUE, VALUE]
    tags = page.evaluate("Array.from(document.querySelectorAll('#title *, #recommended *, #arms *, #latest *'))"
                         ".map(e => e.tagName)")
    assert set(tags) == {"TBODY", "TR", "TH", "TD"}  # the names made no element
    assert page.evaluate("[document.images.length, document.scripts.length]") == [1, 1]  # the figure, the page's
    assert page.evaluate("document.getElementById('told').textContent") == str(6 * SWEEPS)

    ticket = study.ask(1)[0]  # asked here, told by another process
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "study", "tell", study.path, ticket.id,
                    "--values", "0.7,0.4", "--cost", "1.0"], check=True, env=ENV)
    told = time.monotonic()
    shown = _wait(lambda: page.evaluate("document.getElementById('told').textContent") == str(6 * SWEEPS + 1), 5,
                  0.02)
    assert shown and time.monotonic() - told <= 2.0, time.monotonic() - told
    latest = page.evaluate("document.querySelector('#latest tr:nth-child(2)').cells[1].textContent")
    assert latest == ticket.id and t0 < told

    version = json.load(urllib.request.urlopen(dashboard + "state.json", timeout=10))["version"]
    assert _wait(lambda: page.evaluate("document.getElementById('figure').dataset.shown") == version, 15)
    assert page.evaluate("document.getElementById('figure').naturalWidth") > 500  # the new state's figure shows
    assert page.evaluate("window.__ran") == []
    assert not [e for e in page.events if e.get("method") == "Page.javascriptDialogOpening"]
    shot = os.environ.get("MOBANDIT_DASHBOARD_SCREENSHOT")
    if shot:
        size = page.send("Page.getLayoutMetrics")["cssContentSize"]
        png = page.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip=dict(x=0, y=0, width=size["width"], height=size["height"], scale=1))
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png["data"]))


def test_only_get_and_head_are_answered_and_the_study_is_untouched(study, dashboard):
    before = _events(study.path)
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        for path in ("", "state.json", "figure.svg"):
            assert _request(dashboard + path, method) == 405, (method, path)
    assert _request(dashboard + "state.json", "GET") == 200 and _request(dashboard + "figure.svg", "HEAD") == 200
    state = json.load(urllib.request.urlopen(dashboard + "state.json", timeout=10))
    assert [r[0] for r in state["arms"]["rows"]] == NAMES and state["status"]["told"] == 6 * SWEEPS
    told = [e for e in before if e[1] == "tell"]
    assert len(told) == 6 * SWEEPS and state["budget"] == 40.0
    assert state["status"]["spent"] == pytest.approx(sum(e[-2] for e in told))  # the told costs, read from the file
    assert _events(study.path) == before  # reading it, figure included, appended nothing


def test_it_listens_on_loopback_only_unless_told(study, dashboard):
    host, port = dashboard.removeprefix("http://").rstrip("/").split(":")
    assert host == "127.0.0.1"
    other = _own_address()
    if other is None:
        pytest.skip("this machine has no address but loopback to try")
    with pytest.raises(OSError), socket.create_connection((other, int(port)), timeout=3):
        pass


def test_a_bad_port_is_one_line(study, capsys):
    from mobandit_jax.cli import main

    assert main(["study", "dashboard", study.path, "--port", "70000"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --port 70000 must be between 0 and 65535\n"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["study", "dashboard", study.path, "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port} (") and err.count("\n") == 1


def test_a_postgres_study_is_served_alike(request):
    """The same page over a study at a ``postgresql://`` address (the server of tests/study/test_study_postgres.py)."""
    if server is None:
        pytest.skip("psycopg is not installed (pip install 'mobandit_jax[postgres]')")
    url = request.getfixturevalue("server") + "?study=dashboard"
    s = mb.Study.create(url, {"study": {"arms": NAMES, "objectives": ["accuracy", "speed"], "horizon": 100},
                              "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]})
    for t in s.ask(4):
        s.tell(t, MEANS[t.index].tolist())
    with _serving(url) as page:
        state = json.load(urllib.request.urlopen(page + "state.json", timeout=10))
        assert [r[0] for r in state["arms"]["rows"]] == NAMES and state["status"]["told"] == 4
        assert _request(page + "state.json", "POST") == 405
        (t,) = s.ask()
        s.tell(t, MEANS[t.index].tolist())  # this process is not the dashboard's
        told = time.monotonic()
        assert _wait(lambda: json.load(urllib.request.urlopen(page + "state.json", timeout=10))["status"]["told"] == 5,
                     5, 0.05) and time.monotonic() - told <= 2.0
    assert mb.Study.load(url).status()["told"] == 5
