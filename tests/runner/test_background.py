"""Calls on daemon threads (runner.background): results and exceptions come back, a pool bounds how many run at once,
a dropped Ctrl-C in a keyboard_interrupts block still stops the next wait (and only inside the block), and the
process neither finalizes under a call in flight nor waits for one after an uncaught exception."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from mobandit_jax.runner import background


def test_a_call_returns_its_value_and_raises_its_exception():
    assert background.call(pow, 3, 4) == 81
    with pytest.raises(ZeroDivisionError):
        background.call(lambda: 1 / 0)


def test_a_pool_runs_at_most_n_calls_at_once():
    running, most, lock = [0], [0], threading.Lock()

    def task(i):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)  # long enough for the other threads to have started and queued
        with lock:
            running[0] -= 1
        return i * i

    pool = background.Daemons(2)
    futures = [pool.submit(task, i) for i in range(6)]
    assert [background.wait(f) for f in futures] == [i * i for i in range(6)]
    assert most[0] == 2


def _dropped_ctrl_c():
    """A SIGINT whose KeyboardInterrupt is caught and lost, as Python loses one raised in a garbage-collector
    callback."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler raises within this sleep
    except KeyboardInterrupt:
        return
    raise AssertionError("no KeyboardInterrupt within 5 s of SIGINT")


def test_a_dropped_ctrl_c_in_the_block_stops_the_next_wait_and_nothing_after_the_block():
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the test runner inherited
    try:
        with background.keyboard_interrupts():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            assert background.wait(background.start(int, "7")) == 7  # no Ctrl-C yet
            _dropped_ctrl_c()
            t0 = time.perf_counter()
            with pytest.raises(KeyboardInterrupt):
                background.wait(background.start(time.sleep, 3))
            assert time.perf_counter() - t0 < 1.0  # within a few steps, not after the 3 s call
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert background.wait(background.start(int, "8")) == 8  # the mark ended with its block
        _dropped_ctrl_c()  # outside a block Python's own handler: nothing is marked
        assert background.wait(background.start(int, "9")) == 9
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_block_outside_the_main_thread_changes_no_handler():
    seen = []

    def other():
        with background.keyboard_interrupts():
            seen.append(signal.getsignal(signal.SIGINT))

    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [before]


EXIT = """
import sys, time
from mobandit_jax.runner import background
background.start(lambda: (time.sleep({sleep}), open(sys.argv[1], "w").write("done")))
{end}
"""


def _exit_with(tmp_path, sleep: float, end: str):
    marker = tmp_path / "marker"
    code = EXIT.format(sleep=sleep, end=end)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(marker)], capture_output=True, text=True, timeout=120)
    return proc, time.perf_counter() - t0, marker.exists()


def test_a_normal_exit_waits_for_the_call_in_flight(tmp_path):
    proc, _, written = _exit_with(tmp_path, 1.0, "")
    assert proc.returncode == 0, proc.stderr
    assert written  # a daemon thread is killed at finalization: the hook waited for it


@pytest.mark.parametrize("end, status", [("raise ValueError('late')", 1),
                                         ("raise KeyboardInterrupt", -signal.SIGINT)])
def test_an_uncaught_exception_ends_at_once_with_pythons_status(tmp_path, end, status):
    proc, seconds, written = _exit_with(tmp_path, 60.0, end)
    assert proc.returncode == status
    assert not written and seconds < 30  # not after the 60 s call
    assert proc.stderr.strip().splitlines()[-1] in ("ValueError: late", "KeyboardInterrupt")
