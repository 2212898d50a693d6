"""CPU runtime settings: the unrolled Threefry lowering gives JAX's bits exactly (the default lowering
is the reference), and the XLA flag is set where the jaxlib version accepts it."""
import subprocess
import sys

import numpy as np

SCRIPT = """
import numpy as np, jax
import mobandit_jax
def draws(seed):
    k = jax.random.fold_in(jax.random.PRNGKey(seed), 7)
    k1, k2 = jax.random.split(k)
    return (jax.random.bits(k1, (1000,)), jax.random.uniform(k2, (257,)), jax.random.normal(k, (3, 5)))
parts = [jax.jit(draws, static_argnums=0)(s) for s in (0, 1, 12345)]
out = np.concatenate([np.asarray(x).view(np.uint32).ravel() for p in parts for x in p])
np.save(__import__("sys").argv[1], out)
"""


def _draws(tmp_path, rolled: bool):
    path = tmp_path / f"rolled_{rolled}.npy"
    env = {"MOBANDIT_XLA_DEFAULTS": "1"} if rolled else {}
    import os
    subprocess.run([sys.executable, "-c", SCRIPT, str(path)], check=True, env={**os.environ, **env})
    return np.load(path)


def test_unrolled_lowering_gives_identical_bits(tmp_path):
    unrolled, rolled = _draws(tmp_path, False), _draws(tmp_path, True)
    assert unrolled.size == 3 * (1000 + 257 + 15) and rolled.size == unrolled.size
    assert np.array_equal(unrolled, rolled)


def test_known_answer_vector():
    # Threefry-2x32, 20 rounds, key (0x13198a2e, 0x03707344), counter (0x243f6a88, 0x85a308d3):
    # the published known-answer test of Random123 is (0xc4923a9c, 0x483df7a0).
    from mobandit_jax.runner.threefry import threefry2x32
    k1, k2 = np.uint32(0x13198A2E), np.uint32(0x03707344)
    x1, x2 = np.uint32(0x243F6A88), np.uint32(0x85A308D3)
    with np.errstate(over="ignore"):
        y = threefry2x32(k1, k2, x1, x2)
    assert (int(y[0]), int(y[1])) == (0xC4923A9C, 0x483DF7A0)


def test_lowering_is_registered_by_configure():
    import jax

    from mobandit_jax.runner import runtime

    runtime.configure()
    text = jax.jit(lambda k: jax.random.bits(k, (4,))).lower(jax.random.PRNGKey(0)).compile().as_text()
    assert "while" not in text  # JAX's default CPU lowering is a rolled while loop


IMPORT_CHECK = """
import os, jax
from jax._src.interpreters import mlir
from jax.extend.random import threefry2x32_p
before = (os.environ.get('XLA_FLAGS'), dict(mlir._platform_specific_lowerings['cpu']).get(threefry2x32_p))
import mobandit_jax
after = (os.environ.get('XLA_FLAGS'), dict(mlir._platform_specific_lowerings['cpu']).get(threefry2x32_p))
assert before == after, (before, after)
import mobandit_jax.runner.runtime
mobandit_jax.runner.runtime.configure()
configured = (os.environ.get('XLA_FLAGS'), dict(mlir._platform_specific_lowerings['cpu']).get(threefry2x32_p))
print(configured != before)
"""


def test_import_leaves_xla_flags_and_lowerings_unchanged():
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MOBANDIT_XLA_DEFAULTS")}
    out = subprocess.run([sys.executable, "-c", IMPORT_CHECK], check=True, capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "True"  # the check can fail: configure() does change both


def test_xla_flag_added_by_configure_without_overriding_the_user(tmp_path):
    import os

    code = ("import os, mobandit_jax.runner.runtime; mobandit_jax.runner.runtime.configure(); "
            "print(os.environ.get('XLA_FLAGS', ''))")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MOBANDIT_XLA_DEFAULTS")}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout
    from mobandit_jax.runner import runtime

    first, last = runtime.YNN_FLAG_JAXLIB
    assert (runtime.YNN_FLAG in out) == (first <= runtime._jaxlib_minor() < last)
    mine = {**env, "XLA_FLAGS": f"{runtime.YNN_FLAG}=kDot --xla_force_host_platform_device_count=2"}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=mine).stdout
    assert out.strip() == mine["XLA_FLAGS"]  # a user's own setting of the flag is kept as it is



BACKEND_CHECK = """
import sys
import matplotlib
matplotlib.use("svg")
from mobandit_jax.analysis import compare
from mobandit_jax.runner import execution, plans, spec as config
spec, out = config.load(sys.argv[1]), sys.argv[2]
execution.execute(plans.build(spec), out, progress=False)  # writes the run's figures
compare.main([out], out=out + "/compare.png")
print(matplotlib.get_backend())
"""


def test_writing_figures_keeps_the_users_matplotlib_backend(tmp_path):
    from _tiny_spec import tiny_spec

    spec = tiny_spec(tmp_path / "spec.toml", horizon=20, seeds=2)
    out = subprocess.run([sys.executable, "-c", BACKEND_CHECK, str(spec), str(tmp_path / "run")],
                         check=True, capture_output=True, text=True)
    assert list((tmp_path / "run").glob("*.png")) and (tmp_path / "run" / "compare.png").exists()
    assert out.stdout.strip().splitlines()[-1] == "svg"  # a module-level matplotlib.use("Agg") gave "agg"


REUSE_CHECK = """
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    import mobandit_jax.runner.runtime
    assert mobandit_jax.runner.runtime.keep_freed_memory()
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.ones(2 ** 25)  # 256 MiB, every page written
    del a
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(faults[-1])
"""


def test_keep_freed_memory_reuses_a_freed_buffer():
    import os

    import pytest

    if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
        pytest.skip("the allocator setting is glibc's")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def faults(mode):
        out = subprocess.run([sys.executable, "-c", REUSE_CHECK, mode], check=True, capture_output=True, text=True,
                             env=env)
        return int(out.stdout)

    plain = faults("plain")  # by default the buffer is mapped afresh: every page (or huge page) faults again
    assert plain >= 2 ** 25 * 8 // (4 << 20)  # at least one fault per 4 MiB
    assert faults("keep") * 10 < plain  # kept, the freed buffer is reused
