"""``mobandit list --options`` and ``--metrics``: every option documented once (defaults from the registration,
meaning and allowed values from a docstring), every metric listed and defined in docs/metrics.md."""
import re
from pathlib import Path

import pytest

from mobandit_jax import registry
from mobandit_jax.cli import main
from mobandit_jax.plugins import load

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_list_options_cohv_ucb_shows_alpha_with_its_default(capsys):
    assert main(["list", "--options", "cohv_ucb"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "budgeted/cohv_ucb:"
    alpha = next(line for line in out if line.strip().startswith("alpha = "))
    assert alpha.strip().startswith("alpha = 2.0  [a finite number >= 0]  exploration constant")
    assert [line.split()[0] for line in out[1:]] == ["alpha", "s_r", "s_c", "eta"]


def test_a_bare_name_lists_every_family_of_it_and_an_unknown_one_is_one_line(capsys):
    assert main(["list", "--options", "pareto_ucb"]) == 0
    out = capsys.readouterr().out
    assert "preference/pareto_ucb:" in out and "slate/pareto_ucb:" in out and "m0 = 2  [a number >= 1]" in out
    assert main(["list", "--options", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown policy 'nope'" in err[0]


def test_every_registered_option_has_a_meaning_and_allowed_values():
    load([])
    for name, entry in registry.POLICIES.items():
        if entry.plugin:  # a test's plugin, registered earlier in this process
            continue
        for option in registry.policy_options(name):
            assert option.meaning and option.allowed, (name, option)
            assert option.default == registry.POLICIES[name].defaults[option.name]


def test_documented_reads_google_sections_with_continuations():
    def f():
        """Summary.

        Options:
          a: first meaning,
            continued. Allowed: 'x' or 'y'.
          b: second. Allowed: a number > 0.

        Returns:
          nothing: not an option.
        """
    assert registry._documented(f.__doc__) == {"a": "first meaning, continued. Allowed: 'x' or 'y'.",
                                               "b": "second. Allowed: a number > 0."}


def test_list_metrics_names_every_metric_and_docs_define_each(capsys):
    assert main(["list", "--metrics"]) == 0
    out = capsys.readouterr().out
    page = (DOCS / "metrics.md").read_text()
    listed = registry.family_metrics()
    assert set(listed) == {name for name, entry in registry.FAMILIES.items() if entry.example is not None}
    for family, metrics in listed.items():
        if not registry.FAMILIES[family].module.startswith("mobandit_jax"):
            continue  # a plugin family a test of this process registered: not on the package's metrics page
        assert f"{family}:" in out and f"(`{family}`)" in page
        for m in metrics:
            name = re.sub(r"_\d+$", "_<j>", m.name)
            assert re.search(rf"^  {re.escape(name)} +\S", out, re.M), name
            assert f"| `{name}` |" in page, name
    assert "regret_gap               the played arm's preference gap" in out and "lower is better" in out


@pytest.mark.parametrize("flags", [["--options", "cohv_ucb", "--metrics"]])
def test_options_and_metrics_together_is_a_usage_error(flags, capsys):
    with pytest.raises(SystemExit) as done:
        main(["list", *flags])
    assert done.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
