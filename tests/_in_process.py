"""A spec run by ``mb.run`` in a fresh Python process that imports the spec's plugin module itself (registered
in that process, the spec's own ``plugins`` entry removed): the in-process reference of the plugin tests."""
import os
import subprocess
import sys
import textwrap


def run_registered_in_process(plugin_dir, module: str, spec, out) -> None:
    """Import ``module`` from ``plugin_dir`` in a new process, then ``mb.run`` the TOML ``spec`` into ``out``."""
    script = textwrap.dedent(f"""
        import sys, tomllib
        sys.path.insert(0, {str(plugin_dir)!r})
        import {module}  # registers its policies, environments or family in this process
        import mobandit_jax as mb
        spec = tomllib.loads(open({str(spec)!r}).read())
        del spec["experiment"]["plugins"]
        mb.run(spec, out={str(out)!r})
    """)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=600)
