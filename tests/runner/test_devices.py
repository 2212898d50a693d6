"""Every core by default: the CLI's device count and compilation cache, and results that do not
depend on how many devices the seeds are split over (summary.json compared byte for byte)."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

from mobandit_jax.runner import cache, devices

SPEC = """
[env]
kind = "stochastic"
noise = "bernoulli"
means = [[0.3, 0.6], [0.5, 0.5], [0.65, 0.2], [0.4, 0.45], [0.1, 0.9]]
[[policies]]
name = "prefucb"
[preference]
W = [[1.0, 0.5], [0.5, 1.0]]
[experiment]
seeds = 7
chunk = 5
horizon = 90
record_every = 30
"""

TEST_CACHE = os.path.join(tempfile.gettempdir(), "mobandit_jax_test_cache")


@pytest.fixture(autouse=True)
def _device_state_restored(monkeypatch):
    """configure() sets the --devices bound (MOBANDIT_DEVICES) and XLA_FLAGS: both are put back after each test."""
    monkeypatch.setenv(devices.LIMIT_ENV, "")  # recorded, so that the test's value is undone after it
    monkeypatch.delenv(devices.LIMIT_ENV)
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))

def _cli(args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS", cache.DISABLE_ENV)}
    env.update({"JAX_COMPILATION_CACHE_DIR": TEST_CACHE, **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "mobandit_jax.cli", *args], env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    """A spec, its one-device run (cache off) and its two-device run (cache on), both in XDG_CACHE_HOME."""
    d = tmp_path_factory.mktemp("devices")
    (d / "spec.toml").write_text(SPEC)
    env = {"XDG_CACHE_HOME": str(d / "xdg"), "JAX_COMPILATION_CACHE_DIR": ""}
    one = _cli(["run", str(d / "spec.toml"), "--out", str(d / "one"), "--devices", "1", "--quiet", "--no-cache"], env)
    assert one.returncode == 0, one.stderr
    store = d / "xdg" / "mobandit_jax" / "jax"
    assert not store.exists() or not any(store.iterdir())
    two = _cli(["run", str(d / "spec.toml"), "--out", str(d / "two"), "--devices", "2"], env)
    assert two.returncode == 0, two.stderr
    return d, two.stderr


def test_two_devices_give_the_one_device_summary_byte_for_byte(spec):
    # 7 seeds in chunks of 5: each chunk padded to 6 lanes on 2 devices, cut back to 5 and 2 seeds
    d, stderr = spec
    assert "compiling 1 program(s) for 2 device(s)" in stderr
    assert (d / "one" / "summary.json").read_bytes() == (d / "two" / "summary.json").read_bytes()


def test_a_run_fills_the_cache_under_xdg_cache_home(spec):
    d, _ = spec
    assert any(path.name.startswith("jit_") for path in (d / "xdg" / "mobandit_jax" / "jax").iterdir())


def test_bad_device_count_is_one_line_exit_2(spec):
    d, _ = spec
    p = _cli(["run", str(d / "spec.toml"), "--out", str(d / "bad"), "--devices", "0"])
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["error: --devices 0: the number of devices must be an integer >= 1"]


def test_configure_sets_one_host_device_per_core_and_keeps_a_user_value(monkeypatch):
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: True)
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
    assert devices.configure() == devices.cpu_cores() == len(os.sched_getaffinity(0))
    assert os.environ["XLA_FLAGS"] == f"--xla_dump_to=/tmp/x {devices.HOST_COUNT_FLAG}={devices.cpu_cores()}"
    assert devices.limit() is None
    monkeypatch.setenv("XLA_FLAGS", f"{devices.HOST_COUNT_FLAG}=5")
    assert devices.configure(3) is None and os.environ["XLA_FLAGS"] == f"{devices.HOST_COUNT_FLAG}=5"
    assert devices.limit() == 3
    monkeypatch.delenv("XLA_FLAGS")
    assert devices.configure(4) == 4 and os.environ["XLA_FLAGS"] == f"{devices.HOST_COUNT_FLAG}=4"


def test_gpu_platform_gets_no_host_device_flag(monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert devices.configure() is None and "XLA_FLAGS" not in os.environ


def test_importing_the_package_sets_no_device_count():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    code = "import os, jax, mobandit_jax; print(os.environ.get('XLA_FLAGS', ''), jax.device_count())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert devices.HOST_COUNT_FLAG not in out and out.split()[-1] == "1"


def test_cache_dir_follows_xdg_and_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_dir() == tmp_path / "xdg" / "mobandit_jax" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.default_dir() == tmp_path / "home" / ".cache" / "mobandit_jax" / "jax"


def test_cache_switches(monkeypatch, tmp_path):
    import jax

    updates = {}
    monkeypatch.setattr(jax.config, "update", lambda name, value: updates.__setitem__(name, value))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for name in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                 "JAX_ENABLE_COMPILATION_CACHE", cache.DISABLE_ENV, cache.PROGRAMS_ENV):
        monkeypatch.setenv(name, "")  # recorded, so that what configure() sets is undone after the test
        monkeypatch.delenv(name)
    assert cache.configure(False) is None and updates == {"jax_enable_compilation_cache": False}
    assert os.environ["JAX_ENABLE_COMPILATION_CACHE"] == "false"
    monkeypatch.delenv("JAX_ENABLE_COMPILATION_CACHE")
    updates.clear()
    monkeypatch.setenv(cache.DISABLE_ENV, "1")
    assert cache.configure(True) is None and updates == {"jax_enable_compilation_cache": False}
    monkeypatch.delenv("JAX_ENABLE_COMPILATION_CACHE")
    updates.clear()
    monkeypatch.setenv(cache.DISABLE_ENV, "0")
    store = tmp_path / "mobandit_jax" / "jax"
    assert cache.configure(True) == store and store.is_dir()
    assert updates == {"jax_compilation_cache_dir": str(store), "jax_persistent_cache_min_compile_time_secs": 0.0}
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == str(store)  # inherited by reproduce's worker processes


def test_bench_refuses_each_bad_option_in_one_line_naming_it():
    refused = {
        ("--devices", "-1"): "--devices -1: the number of devices must be an integer >= 1",
        ("--algorithms", "prefucb,ucb9"): "--algorithms: unknown ucb9; choose from prefucb, thv_d2, thv_d5, cohv, "
                                          "user_envs, auer, ape",
        ("--repeat", "0"): "--repeat 0: give at least 1 timed run",
        ("--rounds", "0"): "--rounds 0: give at least 1 round",
        ("--parts", "engine,gpu"): "--parts engine,gpu: choose a comma-separated subset of engine, peers, numba, "
                                   "kernels",
        ("--parts", "kernels", "--kernel-batches", "100,-5"): "--kernel-batches 100,-5: give comma-separated positive "
                                                              "integers",
        ("--seeds", "1,many"): "--seeds 1,many: give comma-separated positive integers",
        ("--seeds", "0"): "--seeds 0: give comma-separated positive integers",
    }
    for args, line in refused.items():
        p = _cli(["bench", *args])
        assert (p.returncode, p.stderr.strip().splitlines()) == (2, [f"error: {line}"]), args


def test_core_slots_deal_the_cores_into_disjoint_equal_shares(monkeypatch):
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5, 0, 3, 1, 4, 2, 7})
    assert devices.core_slots(1) == [[0, 1, 2, 3, 4, 5, 7]]
    assert devices.core_slots(2) == [[0, 1, 2], [3, 4, 5]]
    assert devices.core_slots(7) == [[0], [1], [2], [3], [4], [5], [7]]
    assert devices.core_slots(8) == []
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: False)
    assert devices.core_slots(2) == []


@pytest.mark.skipif(devices.cpu_cores() < 2, reason="needs two cores")
@pytest.mark.parametrize("call, cores",
                         [("configure(1)", 1), ("configure(None)", None), ("configure_workers(2)", None)])
def test_fewer_devices_than_cores_confine_the_process_to_that_many_cores(call, cores):
    code = ("import os; from mobandit_jax.runner import devices; devices._platform_is_cpu = lambda: True; "
            f"devices.{call}; print(sorted(os.sched_getaffinity(0)), os.environ['XLA_FLAGS'])")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    mask, flags = out.split("] ")
    first = sorted(os.sched_getaffinity(0))
    assert json.loads(mask + "]") == first[:cores]
    expected = {"configure(1)": 1, "configure(None)": len(first), "configure_workers(2)": len(first) // 2}[call]
    assert flags.strip() == f"{devices.HOST_COUNT_FLAG}={expected}"


def test_reproduce_workers_keep_a_users_own_device_count(monkeypatch):
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: True)
    monkeypatch.setenv("XLA_FLAGS", f"{devices.HOST_COUNT_FLAG}=1")
    assert devices.configure_workers(2) is None and devices.limit() is None
    assert os.environ["XLA_FLAGS"] == f"{devices.HOST_COUNT_FLAG}=1"


def test_without_affinity_masks_nothing_is_pinned(monkeypatch):
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: True)
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "sched_setaffinity", lambda *a: pytest.fail("pinned without affinity masks"))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.delenv("XLA_FLAGS")
    assert devices.configure(1) == 1 and os.environ["XLA_FLAGS"] == f"{devices.HOST_COUNT_FLAG}=1"
    assert devices.core_slots(2) == []


def test_an_in_process_command_leaves_the_environment_as_it_found_it(tmp_path, monkeypatch):
    """``main`` sets the host device count, the mesh bound and the cache's variables before JAX would start, and
    puts the environment back when the command returns (no test fixture has to)."""
    from mobandit_jax import cli
    from mobandit_jax.runner import commands

    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    seen = {}
    monkeypatch.setattr(commands, "_cmd_run", lambda args: seen.update(os.environ) or 0)  # no run: what it saw
    before = dict(os.environ)
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--workers", "off", "--quiet"]) == 0
    if devices._platform_is_cpu() and devices.HOST_COUNT_FLAG not in before.get("XLA_FLAGS", ""):
        assert f"{devices.HOST_COUNT_FLAG}=" in seen["XLA_FLAGS"]
    if not cache.disabled_by_env():
        assert seen[cache.PROGRAMS_ENV] == str(cache.programs_dir())
    assert seen != before  # the command did change the environment while it ran
    assert dict(os.environ) == before
