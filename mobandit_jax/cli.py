"""The ``mobandit`` command: the parsers of the parts it drives, assembled.

``run``, ``list``, ``report``, ``compare`` and ``reproduce`` are the runner's
(:mod:`mobandit_jax.runner.commands`), ``study`` the live study's (:mod:`mobandit_jax.study.cli`), ``bench`` the
benchmark's (:mod:`mobandit_jax.bench.benchmark`, which parses its own options). This module sits above every
part it drives; none of them imports it. It imports no JAX: ``mobandit run`` reads its spec and starts its
worker processes first. A call of :func:`main` leaves the process environment as it found it (the host device
count in ``XLA_FLAGS``, the compilation cache's variables), so an in-process call changes nothing for what runs
after it.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings

from .errors import one_line_warning


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr, exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    """The ``mobandit`` parser, every subcommand's parser on it.

    Returns:
      The parser; a parsed command carries ``fn(args) -> exit code`` and, where it must act before JAX starts,
      ``setup(args)``.
    """
    from .runner import commands
    from .study.cli import add_parser as study_commands

    top = _Parser(prog="mobandit", description="Vectorized multi-objective bandit experiments")
    commands.x64_option(top, default=False)
    sub = top.add_subparsers(dest="cmd", required=True)
    commands.add_commands(sub)
    study = sub.add_parser("study", help="a live ask/tell study: new, ask, tell, fail, recommend, status, history "
                           "(see `mobandit study --help`)")
    study_commands(study)
    study.set_defaults(setup=_setup_study)
    sub.add_parser("bench", help="throughput benchmarks against numpy loops and moocore (see `mobandit bench --help`)")
    return top


def _setup_study(args):
    """A study command compiles its policy's steps on every call: the persistent compilation cache."""
    from .runner import cache

    cache.configure(True)


@contextlib.contextmanager
def _environment_kept():
    """The process environment as it was on entry, restored on exit (variables added are removed)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        for key, value in saved.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


def main(argv=None) -> int:
    """Run one ``mobandit`` command.

    Args:
      argv: the arguments after ``mobandit`` (default: ``sys.argv[1:]``).

    Returns:
      The exit code: 0, 1 (``reproduce --check`` found a difference) or 2 (a bad input, in one line on stderr).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    with _environment_kept(), warnings.catch_warnings():
        warnings.showwarning = one_line_warning  # a warning (a fixed-budget method below its first phase) is one line
        if argv[:1] == ["bench"]:  # the benchmark parses its own options (--quick, --seeds, ...)
            from .bench import benchmark

            return benchmark.main(argv[1:])
        return _dispatch(parser().parse_args(argv))


def _dispatch(args) -> int:
    from .runner.commands import start_jax

    try:
        if getattr(args, "setup", None) is not None:
            args.setup(args)
    except (ValueError, OSError) as err:
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        return 2
    if args.cmd != "run":  # a run starts its worker processes first
        start_jax(args)
    try:
        return args.fn(args)
    except BrokenPipeError:  # the reader closed the pipe (`mobandit report DIR | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the last flush, at exit, goes nowhere
        return 0
    except (ValueError, KeyError, RuntimeError, OSError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print("error: " + " ".join(str(msg).split()), file=sys.stderr)
        return 2


def command():
    """The ``mobandit`` console script: :func:`main`, then exit. Unless it joined several hosts, the process
    ends without JAX's teardown (0.3-0.6 s of freeing its runtime, which the OS does anyway): every file is
    written and closed, and every worker process stopped, before :func:`main` returns."""
    code = main()
    jax = sys.modules.get("jax")
    if jax is not None and not jax.distributed.is_initialized():  # several hosts: JAX's shutdown waits for all
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None:  # multiprocessing's semaphores (reproduce's job pool), released as at a normal exit
            getattr(mp_util, "_exit_function", lambda: None)()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    command()
