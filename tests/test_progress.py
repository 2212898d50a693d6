"""Progress: the bar advances once per checkpoint inside a program call (the engine's host callback), in
a run of a single chunk; the callback changes no number; without a terminal, notes only."""
import numpy as np

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
        steps = [(c, n) for desc, c, n in seen if label + ":" in desc]
        assert [c for c, _ in steps] == list(range(20))  # checkpoint c begins: c of the 20 are done
        counts = [n for _, n in steps]
        assert counts == sorted(set(counts)) and counts[-1] < total  # 20 steps up during the call


def test_without_a_terminal_a_run_prints_notes_only(small_spec, capsys):
    plan = _plan(small_spec)
    assert execution.Progress(plan, [0], [0], live=False).report is None  # no callback: --quiet's programs
    execution.execute(plan, None, progress=True)  # pytest's stderr is no terminal
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("compiling 2 program(s) for ")
    assert err[1:3] == ["compiling 1/2: PrefUCB", "compiling 2/2: ParetoUCB"]
    assert err[3].startswith("compiled in ") and err[4].startswith("chunk 1/1 done, ")
    assert len(err) == 5 and "%|" not in "".join(err)


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
    proc = subprocess.Popen([sys.executable, "-m", "mobandit_jax.runner.cli", "run", str(spec), "--out",
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
