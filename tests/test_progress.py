"""Progress: the one reporter (:mod:`mobandit_jax.progress`) draws a bar on a terminal, a plain line at most every few
seconds elsewhere and nothing when disabled; a run's bar advances once per checkpoint inside a program call (the
engine's host callback), in a run of a single chunk; the callback changes no number; a run's and a study loop's output
to a pipe hold no carriage return and at most one progress line every two seconds."""
import io
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from mobandit_jax import progress
from mobandit_jax.runner import execution, plans
from mobandit_jax.runner import spec as cfg


def _plan(small_spec):
    """One chunk of 4 seeds, 20 checkpoints per call, two groups."""
    small_spec["experiment"].update(horizon=400, record_every=20, seeds=4, chunk=4)
    small_spec["policies"].append({"name": "pareto_ucb", "label": "ParetoUCB"})
    return plans.build(cfg.validate(small_spec))


def test_a_single_chunk_bar_moves_during_each_call_and_the_numbers_stay(small_spec, monkeypatch):
    plan = _plan(small_spec)
    quiet = execution.execute(plan, None, progress=False)
    seen = []  # (label, checkpoints the engine reported, the bar's count) while a call is in flight

    class Live(execution.Progress):
        def __init__(self, *args):
            super().__init__(*args, live=True)  # a terminal's bar, under pytest's captured stderr

        def _reached(self, checkpoint):
            in_flight = self._call is not None and int(checkpoint) < self._call[2]
            super()._reached(checkpoint)
            if in_flight:
                seen.append((self._bar.desc, int(checkpoint), self._bar.n))

    monkeypatch.setattr(execution, "Progress", Live)
    shown = execution.execute(plan, None, progress=True)
    assert sorted(shown.arrays) == sorted(quiet.arrays)
    for key, value in quiet.arrays.items():
        np.testing.assert_array_equal(shown.arrays[key], value, err_msg=key)
    total = sum(len(g.members) for g in plan.groups) * 4 * 20
    for label in ("PrefUCB", "ParetoUCB"):
        steps = [(c, n) for desc, c, n in seen if desc.endswith(" " + label)]
        assert [c for c, _ in steps] == list(range(20))  # checkpoint c begins: c of the 20 are done
        counts = [n for _, n in steps]
        assert counts == sorted(set(counts)) and counts[-1] < total  # 20 steps up during the call


def test_without_a_terminal_a_run_prints_notes_and_one_closing_line(small_spec, capsys):
    plan = _plan(small_spec)
    assert execution.Progress(plan, [0], [0], live=False).report is None  # no callback: --quiet's programs
    execution.execute(plan, None, progress=True)  # pytest's stderr is no terminal
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].startswith("compiling 2 program(s) for ")
    assert lines[1:3] == ["compiling 1/2: PrefUCB", "compiling 2/2: ParetoUCB"]
    total = 2 * 4 * 20  # two groups of one policy, 4 seeds, 20 checkpoints: computed in well under 5 s
    assert lines[3].startswith("compiled in ")
    assert lines[4].startswith(f"run: {total}/{total} lane checkpoints (100%), ")
    assert len(lines) == 5 and "%|" not in err and "\r" not in err


class _Clock:
    """``time.monotonic`` under the test's control."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_plain_lines_come_at_most_every_few_seconds_with_a_closing_line(monkeypatch):
    clock, out = _Clock(), io.StringIO()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    bar = progress.Progress(total=100, desc="study", unit="eval", live=False, every=5.0, file=out)
    shown = []
    for _ in range(100):  # one count every 0.3 s: 30 s of work
        clock.now += 0.3
        bar.update()
        shown.append(out.getvalue().count("\n"))
    bar.close()
    bar.update(5)  # a closed reporter says nothing more
    bar.close()
    lines = out.getvalue().splitlines()
    # a line once 5 s have passed since the start or the last line: at counts 17, 34, 51, 68, 85 (0.3 s each)
    firsts = [shown.index(k) + 1 for k in range(1, 6)]
    assert firsts == [17, 34, 51, 68, 85]
    assert lines[0] == "study: 17/100 eval (17%), 5 s so far, about 25 s left"  # 5.1 s for 17: 83 more at 0.3 s
    assert lines[-1] == "study: 100/100 eval (100%), 30 s so far" and len(lines) == 6
    assert "\r" not in out.getvalue()


def test_an_unknown_total_says_the_rate_and_a_closing_line_only_when_the_count_moved(monkeypatch):
    clock, out = _Clock(), io.StringIO()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    with progress.Progress(desc="study", unit="eval", live=False, every=2.0, file=out) as bar:
        clock.now += 4.0
        bar.update(8)
    assert out.getvalue() == "study: 8 eval, 4 s so far, 2 eval/s\n"  # the closing line would repeat it: none


def test_disabled_says_nothing_and_a_terminal_gets_a_bar():
    out = io.StringIO()
    with progress.Progress(total=3, desc="study", enabled=False, live=True, file=out) as bar:
        bar.update(3)
        bar.note("a note")
    assert out.getvalue() == "" and bar.n == 3
    with progress.Progress(total=4, desc="study", unit="eval", live=True, file=out) as bar:
        bar.update(2)
        bar.update(2)
    assert "\r" in out.getvalue() and "study: 100%|" in out.getvalue() and "4/4 eval" in out.getvalue()


def _piped(argv, timeout=300):
    """Run ``argv`` with stdout and stderr on one pipe; return the text and each line's arrival time (s)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
    lines = []
    for raw in iter(proc.stdout.readline, b""):
        lines.append((time.monotonic(), raw.decode(errors="replace")))
    assert proc.wait(timeout) == 0, "".join(t for _, t in lines)[-2000:]
    return "".join(t for _, t in lines), lines


def _at_most_one_progress_line_every_two_seconds(text, lines, pattern):
    assert "\r" not in text, text[-500:]
    times = [t for t, line in lines if re.match(pattern, line)]
    assert times, text[-2000:]
    gaps = np.diff(times[:-1])  # the closing line may follow the last periodic one at once
    assert (gaps >= 2.0).all(), (gaps, text[-2000:])
    return times


def test_a_run_writing_to_a_pipe_holds_no_carriage_return_and_few_progress_lines(tmp_path):
    from _tiny_spec import tiny_spec

    spec = tiny_spec(tmp_path / "many.toml", horizon=4000, seeds=96, chunk=2, record_every=400)  # 48 chunks
    t0 = time.monotonic()
    text, lines = _piped([sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out",
                          str(tmp_path / "run"), "--no-cache"])
    times = _at_most_one_progress_line_every_two_seconds(text, lines, r"run: \d+/\d+ lane checkpoints")
    assert len(times) <= 1 + (time.monotonic() - t0) / 2
    assert re.search(r"run: (\d+)/\1 lane checkpoints \(100%\)", text), text[-1000:]


STUDY_LOOP = """
import time
import mobandit_jax as mb

spec = {"study": {"arms": ["a", "b", "c"], "objectives": ["x", "y"], "horizon": 10000},
        "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}
study = mb.Study.create(%r, spec, seed=0)

def evaluate(ticket):
    time.sleep(0.02)
    return [0.5, 0.5]

study.optimize(evaluate, max_evals=250)
print("told", study.status()["told"])
"""


def test_a_study_loop_writing_to_a_pipe_holds_no_carriage_return_and_few_progress_lines(tmp_path):
    t0 = time.monotonic()
    text, lines = _piped([sys.executable, "-c", textwrap.dedent(STUDY_LOOP % str(tmp_path / "s"))])
    assert "told 250" in text
    times = _at_most_one_progress_line_every_two_seconds(text, lines, r"study: \d+/250 eval")
    assert len(times) <= 1 + (time.monotonic() - t0) / 2


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
def test_under_a_terminal_the_bar_of_a_one_chunk_run_over_worker_processes_moves_through_the_chunk(tmp_path):
    """``mobandit run`` on a pseudo-terminal, one chunk split between this process and a worker process: the bar
    passes through the whole chunk, the worker process's half included (it reports its checkpoints)."""
    import os
    import pty
    import re
    import subprocess
    import sys

    from _tiny_spec import tiny_spec

    spec = tiny_spec(tmp_path / "one.toml", horizon=20000, seeds=16, chunk=16, record_every=500)
    ours, theirs = pty.openpty()  # mobandit's stdout and stderr are the terminal
    proc = subprocess.Popen([sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out",
                             str(tmp_path / "run"), "--workers", "on", "--devices", "2", "--no-cache"],
                            stdout=theirs, stderr=theirs, stdin=subprocess.DEVNULL,
                            env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
    os.close(theirs)
    shown = b""
    while True:
        try:
            data = os.read(ours, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        shown += data
    os.close(ours)
    status = proc.wait()
    text = shown.decode(errors="replace")
    assert status == 0, text[-2000:]
    percents = sorted({int(p) for p in re.findall(r"(\d+)%\|", text)})
    assert percents[0] == 0 and percents[-1] == 100, percents
    between = [p for p in percents if 0 < p < 100]
    assert len(between) >= 3 and max(between) > 60, percents  # not 0% then 100%, nor a stop at this process's half
