"""Devices and hosts: 4 fake CPU devices and 2 local processes give the single-device results."""
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

SPEC = """
[experiment]
horizon = 100
seeds = 10
chunk = 3
record_every = 25
[env]
kind = "stochastic"
means = [[0.2, 0.7, 0.5], [0.6, 0.4, 0.1], [0.55, 0.65, 0.45], [0.3, 0.3, 0.8]]
[preference]
W = [[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]]
[[policies]]
name = "prefucb"
[[policies]]
name = "scalarized_ucb_rr"
"""


CACHE = {"JAX_COMPILATION_CACHE_DIR": os.path.join(tempfile.gettempdir(), "mobandit_jax_test_cache"),
         "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


# Devices and hosts simulated on the CPU backend, also where a GPU is present: two processes on one GPU are
# not two hosts (NCCL refuses two ranks on one GPU), and four host devices are not made on a GPU.
SIMULATED = {"JAX_PLATFORMS": "cpu"}


def _run(args, env_extra=None, cwd=None):
    env = {**os.environ, **CACHE, **SIMULATED, **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-m", "mobandit_jax.cli", "run", *args, "--quiet"], env=env,
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finals(d):
    with np.load(Path(d) / "finals.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    d = tmp_path_factory.mktemp("scaling")
    (d / "spec.toml").write_text(SPEC)
    p = _run([str(d / "spec.toml"), "--out", str(d / "one"), "--devices", "1"])
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    return d


def test_four_fake_devices_match_one_device(single):
    p = _run([str(single / "spec.toml"), "--out", str(single / "four")],
             {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    a, b = _finals(single / "one"), _finals(single / "four")
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert (json.loads((single / "one" / "summary.json").read_text())
            == json.loads((single / "four" / "summary.json").read_text()))


def test_two_processes_merge_to_the_single_host_summary(single):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [_run([str(single / "spec.toml"), "--out", str(single / "two"), "--coordinator", f"127.0.0.1:{port}",
                   "--num-processes", "2", "--process-id", str(i)]) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    chunks = sorted(p.name for p in (single / "two" / "chunks").glob("chunk_*.npz"))
    assert len(chunks) == 4  # 10 seeds in chunks of 3, shared by the two processes
    assert (json.loads((single / "one" / "summary.json").read_text())
            == json.loads((single / "two" / "summary.json").read_text()))
