"""The package's layout, read from its source with ``ast`` (``tests/_layout.py``): no function of ``mobandit_jax/``
is over 80 lines, and every public function and method of ``runner/`` and ``bench/`` has ``Args:`` and ``Returns:``
(the study's own layout test holds ``study/``). Each checker is shown to catch a planted breach."""
import ast

from _layout import LONGEST, PACKAGE, long_functions, sources, undocumented


def test_no_function_of_the_package_is_over_80_lines():
    found = {f: long_functions(t) for f, t in sources(PACKAGE).items()}
    assert not {f: n for f, n in found.items() if n}, found
    planted = ast.parse("class C:\n    def f(self):\n        def g():\n" + "            x = 1\n" * LONGEST)
    assert long_functions(planted) == [f"f ({LONGEST + 2} lines)", f"g ({LONGEST + 1} lines)"]
    assert long_functions(ast.parse("def f():\n" + "    x = 1\n" * (LONGEST - 1))) == []


def test_every_public_function_of_runner_and_bench_has_args_and_returns():
    missing = {f"{part}/{f}": undocumented(t)
               for part in ("runner", "bench") for f, t in sources(PACKAGE / part).items()}
    assert not {f: m for f, m in missing.items() if m}, missing
    planted = ast.parse('def f(x):\n    """Do it.\n\n    Returns:\n      x.\n    """\n\n'
                        'def _private(y):\n    pass\n\n'
                        'class C:\n    def g(self):\n        """Do it."""\n\n    @property\n    def p(self):\n'
                        '        """A value."""\n')
    assert undocumented(planted) == ["f: no Args:", "C.g: no Returns:"]
