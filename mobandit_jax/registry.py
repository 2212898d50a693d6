"""One registry type for policies, environments and metric sets (gymnax ``registration.py`` style).

A :class:`Registry` maps names to entries. Policies are named ``family/name`` (``preference/prefucb``,
``slate/thv_ucb``); a bare name resolves where it is unique (``prefucb``, ``thv_ucb``), so a spec may
write either. A bare name that several families share (``pareto_ucb``: ``preference/pareto_ucb`` and
``slate/pareto_ucb``) is refused with the choices unless the family is decided: by the full name, by
``family = "slate"`` in the spec's entry, or by the spec's other policies (:meth:`Registry.resolve`'s
``among``: exactly one of the name's families holds one of them). A plugin never changes what a built-in bare
name means: a plugin's row that shares a built-in's bare name is reached by its full name.
Environments are named by their ``kind``; a policy family (:func:`register_family`) by its name: its kind
(online or identifier), its metric set, its truth, whether it reads the cone, how to read its recommended set
and an example context, registered once and read by the plan, the truth table, the results and the tests.

Each ``register_*`` works as a call or, with its callable left out, as a decorator::

    mb.register_policy("my_ucb", "preference", my_ucb, configure, doc="...", c=1.0)

    @mb.register_env("my_env", doc="...", keys=("means",))
    def build(section, config) -> EnvInstance: ...

    mb.register_family("my_family", kind="online", metrics=build_metrics, truth=my_truth, reads_cone=True)

``configure(ctx, **options) -> (factory_kwargs, params)`` reads the experiment :class:`Context` and the
policy's options (the ``**defaults`` give their names and types); ``factory(**factory_kwargs)`` returns a
:class:`Policy` or :class:`Identifier`. The compile key of a built policy is its registry name and the
factory's arguments, so two grid points share one compiled function exactly when they call the factory
with equal arguments; an argument that is one of the environment's own functions (``ctx.env.sample``,
``.prefix_table``, ``.reset``) counts by name, the environment's code being named by its ``static_key``.
A name registered twice is refused (:class:`RegistryError`), built-ins included.
"""
from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import Callable
from typing import NamedTuple

from .errors import did_you_mean
from .types import Context, EnvInstance, Final, Identifier, Policy


class RegistryError(ValueError):
    """A registration that clashes with a registered name, or a bad registration or lookup."""


class PolicyEntry(NamedTuple):
    """A policy row: the factory, how to configure it from a context, and its option defaults."""

    name: str
    family: str
    factory: Callable
    configure: Callable[..., tuple]
    doc: str
    defaults: dict
    module: str
    plugin: bool = False  # registered while a plugin module was imported (:func:`plugin_rows`)


class EnvEntry(NamedTuple):
    """An environment row: ``build(section, config) -> EnvInstance``, with its allowed keys."""

    name: str
    build: Callable[..., EnvInstance]
    doc: str
    keys: tuple
    module: str
    plugin: bool = False  # registered while a plugin module was imported (:func:`plugin_rows`)


ONLINE, IDENTIFIER = "online", "identifier"  # a family's kind: a Policy run round by round, or one Identifier call
KINDS = {ONLINE: Policy, IDENTIFIER: Identifier}
BUDGET_STOPS = {  # how a budget B stops a family's run
    "engine": "the engine stops the run before the pull whose cost would exceed B",
    "own": "the method keeps its own spend within B (IdentifyResult.spent <= B)",
}


class FamilyEntry(NamedTuple):
    """A policy family: everything the plan, the truth table, the results and the tests read about it.

    ``metrics(ctx) -> (MetricSet, mparams)`` builds its metric set for a :class:`Context`;
    ``truth(mparams, slate_size) -> {name: array}`` (jittable) is what those metric params, after the metric
    set's ``prepare``, score against (``truth.json``); ``truth_json(plain) -> plain`` finishes that entry as
    ``truth.json`` writes it; ``reads_cone``: its policies and metrics read ``[preference] W`` (else they see
    the instance projected under the cone); ``recommended(final, ctx) -> (K,) bool`` reads the set a run
    recommends from its :class:`~mobandit_jax.types.Final`; ``example(seed) -> Context`` is a small context
    its policies run on (the conformance test); ``budget`` names how a budget stops it (:data:`BUDGET_STOPS`);
    ``true_set(truth, means) -> (K,) bool | None`` is the set a recommendation is compared with, read from its
    ``truth.json`` entry (plain data) and the ``(K, d)`` means the family sees (None: none).
    """

    name: str
    kind: str
    metrics: Callable
    truth: Callable
    truth_json: Callable
    reads_cone: bool
    recommended: Callable
    example: Callable | None
    budget: str
    doc: str
    module: str
    true_set: Callable | None = None
    plugin: bool = False  # registered while a plugin module was imported (:func:`plugin_rows`)

    def cone(self, W, dim: int):
        """The cone its policies and metrics read: ``W``, or the Pareto order ``I_d`` where the spec gives none;
        None for a family that does not read the cone (it sees the instance projected under ``W``).

        Args:
          W: the spec's ``(M, d)`` preference matrix, or None.
          dim: d, the arms' objectives.

        Returns:
          ``(M, d)`` float numpy array, or None.
        """
        import numpy as np

        if not self.reads_cone:
            return None
        return np.eye(dim) if W is None else np.asarray(W, float)


_PLUGIN = contextvars.ContextVar("mobandit_plugin", default=None)  # set only inside plugin_rows


@contextlib.contextmanager
def plugin_rows(module: str):
    """Rows registered in this block belong to plugin module ``module`` (whatever module their callables come
    from) and are marked as a plugin's, so an edited plugin's rows can all be dropped before it is imported again
    (:mod:`mobandit_jax.plugins`); nested blocks: the innermost's.

    Args:
      module: the plugin module's name in ``sys.modules``.
    """
    token = _PLUGIN.set(module)
    try:
        yield
    finally:
        _PLUGIN.reset(token)


class Registry(dict):
    """Names -> entries of one kind; adding a name twice is an error, unless a plugin module replaces a
    row another plugin module registered (two specs' plugins, or an edited copy, in one process)."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def add(self, entry):
        """Add ``entry`` under ``entry.name``; refuses a name already registered."""
        old = self.get(entry.name)
        if old is not None and not (old.plugin and entry.plugin):
            raise RegistryError(f"{self.kind} {entry.name!r} is registered already (by {self[entry.name].module}); "
                                "choose another name")
        self[entry.name] = entry
        return entry

    def resolve(self, name: str, family: str | None = None, among=()) -> str:
        """The registered name of ``name``: itself, ``family/name``, or the one ``*/name``.

        Args:
          name: a registered name, or a bare name (the part after ``/``).
          family: the family a spec's entry names (``family = "slate"``), or None.
          among: the families of the spec's other policies: a bare name that several families share resolves to
            the one of those families that is among them, where exactly one is.

        Returns:
          The registered name.

        Raises:
          RegistryError: one line, for an unknown name (with the closest registered name), a name not in
            ``family``, or a bare name that several families share and nothing decides (naming the choices).
        """
        found = self.matches(name, family)
        decided = [k for k in found if self[k].family in set(among)] if len(found) > 1 else found
        if len(decided) == 1:
            return decided[0]
        raise self._unresolved(name, family, found)

    def matches(self, name: str, family: str | None = None) -> list:
        """The registered names that ``name`` may mean: ``family/name``, else itself, else each ``*/name``
        (:meth:`bare`), those of ``family`` where one is given.

        Args:
          name: a registered name, or a bare name.
          family: the family a spec's entry names, or None.

        Returns:
          The registered names (none: an unknown name, or none in ``family``).
        """
        if family and f"{family}/{name}" in self:
            return [f"{family}/{name}"]
        found = [name] if name in self else self.bare(name)
        return [k for k in found if self[k].family == family] if family else found

    def _unresolved(self, name: str, family: str | None, found: list) -> RegistryError:
        """The one-line error of a name that :meth:`resolve` cannot decide (``found``: its :meth:`matches`): an
        unknown family, a name of another family, a name that several families share, or an unknown name."""
        families = sorted({entry.family for entry in self.values()})
        if family and family not in families:
            return RegistryError(f"unknown family = {family!r}{did_you_mean(family, families)}; families: "
                                 f"{', '.join(families)}")
        elsewhere = self.matches(name)
        if family and elsewhere and not found:
            return RegistryError(f"{self.kind} {name!r} is in family {self[elsewhere[0]].family!r}, not family = "
                                 f"{family!r}; drop 'family' or write the registered one (see `mobandit list`)")
        if len(found) > 1:
            choices = " or ".join(repr(k) for k in found)
            return RegistryError(f"{self.kind} {name!r} is registered in {len(found)} families: write {choices} "
                                 f"(or add family = {self[found[0]].family!r} to its entry)")
        where = f" in family {family!r}" if family else ""
        bare = {k.rpartition("/")[2] for k in self}
        hint = did_you_mean(name, sorted(bare | set(self)))
        known = "; see `mobandit list`" if hint else f"; registered: {', '.join(sorted(self))}"
        return RegistryError(f"unknown {self.kind} {name!r}{where}{hint}{known}")

    def bare(self, name: str) -> list:
        """The registered names whose part after ``/`` is ``name``, in registration order; a built-in row hides a
        plugin's row of the same bare name (a plugin never changes what a built-in bare name means).

        Args:
          name: a bare name.

        Returns:
          The registered names.
        """
        found = [k for k in self if k.rpartition("/")[2] == name]
        builtin = [k for k in found if not self[k].plugin]
        return builtin or found


POLICIES = Registry("policy")
ENVS = Registry("env kind")
FAMILIES = Registry("policy family")


def _origin(fn) -> tuple:
    """``(module, plugin)`` of a row: the plugin being imported and True, else the callable's own module and
    False."""
    plugin = _PLUGIN.get()
    return (plugin, True) if plugin is not None else (getattr(fn, "__module__", None) or "?", False)


def register_policy(name: str, family: str, factory: Callable | None = None, configure: Callable | None = None,
                    doc: str = "", **defaults):
    """Register a policy as ``family/name``; without ``factory``, a decorator of the factory.

    Args:
      name: ``name`` or ``family/name``.
      family: the policy family it belongs to (:func:`register_family`).
      factory: ``factory(**factory_kwargs) -> Policy | Identifier``.
      configure: ``configure(ctx, **options) -> (factory_kwargs, params)``.
      doc: a one-line description.
      **defaults: each option's default, which also names the options a spec may give and their types.

    Returns:
      ``factory`` (or, without it, the decorator).
    """
    if factory is None:
        return lambda fn: (register_policy(name, family, fn, configure, doc, **defaults), fn)[1]
    if not callable(factory) or not callable(configure):
        raise RegistryError(f"policy {name!r}: factory and configure must be callables")
    if "/" in family or not family:
        raise RegistryError(f"policy {name!r}: family {family!r} must be a non-empty name without '/'")
    key = name if name.startswith(f"{family}/") else f"{family}/{name}"
    if "/" in key[len(family) + 1:] or key == f"{family}/":
        raise RegistryError(f"policy name {name!r} must be 'name' or '{family}/name'")
    POLICIES.add(PolicyEntry(key, family, factory, configure, doc, dict(defaults), *_origin(factory)))
    return factory


def register_env(name: str, build: Callable | None = None, doc: str = "", keys=()):
    """Register an environment kind; without ``build``, a decorator of it.

    Args:
      name: the ``[env] kind``.
      build: ``build(section, config) -> EnvInstance``.
      doc: a one-line description.
      keys: the keys ``[env]`` may hold besides ``kind``.

    Returns:
      ``build`` (or, without it, the decorator).
    """
    if build is None:
        return lambda fn: (register_env(name, fn, doc, keys), fn)[1]
    ENVS.add(EnvEntry(name, build, doc, tuple(keys), *_origin(build)))
    return build


def metric_params(mparams, slate_size: int):
    """The default truth of a family.

    Args:
      mparams: the prepared metric params.
      slate_size: the slate size (unused).

    Returns:
      ``mparams`` as they are.
    """
    return mparams


def as_is(plain: dict) -> dict:
    """The default ``truth_json``.

    Args:
      plain: the truth as plain data.

    Returns:
      ``plain`` unchanged.
    """
    return plain


def identified(final: Final, ctx: Context):
    """The default recommended set of an identifier family.

    Args:
      final: the run's :class:`Final`.
      ctx: the run's :class:`Context` (unused).

    Returns:
      ``(K,)`` bool, its ``IdentifyResult.recommended``.
    """
    return final.result.recommended


def empirical_optimal(final: Final, ctx: Context):
    """The default recommended set of an online family: the arms pulled whose empirical mean no other pulled
    arm's C-dominates (the cone ``ctx.W``; the Pareto order where the family reads no cone).

    Args:
      final: the run's :class:`Final` (final means and pulls).
      ctx: the run's :class:`Context`.

    Returns:
      ``(K,)`` bool.
    """
    import jax.numpy as jnp

    from .kernels.dominance import cone_dominance

    W = jnp.eye(ctx.dim) if ctx.W is None else jnp.asarray(ctx.W)
    pulled = final.pulls > 0
    return pulled & ~jnp.any(cone_dominance(final.means, W) & pulled[:, None], axis=0)


def register_family(name: str, *, kind: str, metrics: Callable, truth: Callable | None = None,
                    truth_json: Callable | None = None, reads_cone: bool = False, recommended: Callable | None = None,
                    example: Callable | None = None, budget: str | None = None, doc: str = "",
                    true_set: Callable | None = None):
    """Register a policy family once; the plan, the truth table, the results and the tests read it.

    Args:
      name: the family's name, as ``register_policy``'s ``family`` (no ``/``).
      kind: ``"online"`` (its policies are :class:`Policy`) or ``"identifier"`` (:class:`Identifier`).
      metrics: ``build(ctx) -> (MetricSet, mparams)``, its metric set for a :class:`Context`.
      truth: ``truth(mparams, slate_size) -> {name: array}``, jittable: what the prepared metric params score
        against, written to ``truth.json`` (default: the metric params themselves).
      truth_json: ``f(plain) -> plain``: the truth entry as ``truth.json`` writes it (default: as is).
      reads_cone: whether its policies and metrics read ``[preference] W`` (else they see the projection of the
        instance under the cone, :func:`mobandit_jax.problems.cone.apply_cone`).
      recommended: ``f(final, ctx) -> (K,) bool``, the set a run recommends (default: an identifier's
        ``IdentifyResult.recommended``; an online family's empirical C-optimal set, :func:`empirical_optimal`).
      example: ``f(seed) -> Context``, a small context its policies run on (the conformance test).
      budget: how a budget stops it, a key of :data:`BUDGET_STOPS` (default: ``"engine"`` for an online family,
        ``"own"`` for an identifier).
      doc: a one-line description.
      true_set: ``f(truth, means) -> (K,) bool | None``, the true set its recommended sets are compared with
        (``truth.json``'s ``true_set``, the reports' "in true set"), from its ``truth.json`` entry as plain data
        and the ``(K, d)`` means it sees (default: none).

    Returns:
      The :class:`FamilyEntry` registered.
    """
    if kind not in KINDS:
        raise RegistryError(f"family {name!r}: kind = {kind!r}; allowed: {sorted(KINDS)}")
    if "/" in name or not name:
        raise RegistryError(f"family {name!r} must be a non-empty name without '/'")
    budget = budget or ("engine" if kind == ONLINE else "own")
    if budget not in BUDGET_STOPS:
        raise RegistryError(f"family {name!r}: budget = {budget!r}; allowed: {sorted(BUDGET_STOPS)}")
    for what, fn in (("metrics", metrics), ("truth", truth), ("truth_json", truth_json),
                     ("recommended", recommended), ("example", example), ("true_set", true_set)):
        if fn is not None and not callable(fn):
            raise RegistryError(f"family {name!r}: {what} must be a callable")
    default = identified if kind == IDENTIFIER else empirical_optimal
    module, plugin = _origin(metrics)
    return FAMILIES.add(FamilyEntry(name, kind, metrics, truth or metric_params, truth_json or as_is,
                                    bool(reads_cone), recommended or default, example, budget, doc, module,
                                    true_set, plugin))


OPTION_SECTIONS = ("Options:", "Args:")  # the docstring sections that document a policy's options


def _documented(doc: str | None) -> dict:
    """``{name: text}`` of the ``Options:`` / ``Args:`` sections of a Google-style docstring (continuations joined)."""
    found: dict = {}
    lines = inspect.cleandoc(doc or "").splitlines()
    for i, line in enumerate(lines):
        if line.strip() not in OPTION_SECTIONS:
            continue
        base = len(line) - len(line.lstrip())
        item, indent = None, None
        for entry in lines[i + 1:]:
            depth = len(entry) - len(entry.lstrip())
            if entry.strip() and depth <= base:
                break
            if indent is None and entry.strip():
                indent = depth
            name, colon, text = entry.strip().partition(":")
            if depth == indent and colon and name.isidentifier():
                item = name
                found[item] = text.strip()
            elif item is not None and entry.strip():
                found[item] += " " + entry.strip()
    return found


class PolicyOption(NamedTuple):
    """One option of a registered policy: its default (from the registration), the values it allows and its
    meaning (from the ``Options:`` section of the docstring of its configure function, its factory, or its
    module, whichever documents it first)."""

    name: str
    default: object
    allowed: str
    meaning: str


def policy_options(name: str) -> list:
    """The options of a registered policy, documented.

    Args:
      name: a registered policy name (or a bare name that resolves to one).

    Returns:
      A :class:`PolicyOption` per option, in registration order; ``meaning`` and ``allowed`` are ``""``
      where no docstring documents the option.
    """
    import sys

    entry = POLICIES[POLICIES.resolve(name)]
    sources = [entry.configure, entry.factory, sys.modules.get(getattr(entry.configure, "__module__", "")),
               sys.modules.get(getattr(entry.factory, "__module__", ""))]
    docs: dict = {}
    for source in sources:
        for key, text in _documented(getattr(source, "__doc__", None)).items():
            if key not in docs or (" Allowed: " in text and " Allowed: " not in docs[key]):
                docs[key] = text  # the first source that documents it, or the first that says what it allows
    out = []
    for key, default in entry.defaults.items():
        meaning, _, allowed = docs.get(key, "").partition(" Allowed: ")
        out.append(PolicyOption(key, default, allowed.rstrip("."), meaning.strip()))
    return out


def family_metrics() -> dict:
    """Every registered family's metrics, as its example context builds them.

    Returns:
      ``{family: (Metric, ...)}``; a metric set per objective (``reward_0``, ``reward_1``, ...) is listed for
      the example's objectives. A family registered without an example context (a plugin may leave it out) is
      left out: its metrics depend on the context it runs in.
    """
    return {name: tuple(entry.metrics(entry.example(0))[0].metrics) for name, entry in sorted(FAMILIES.items())
            if entry.example is not None}


def make_policy(name: str, ctx, **options):
    """Build a registered policy for a context, validating option names.

    Args:
      name: its registered name, or a bare name that resolves to one.
      ctx: the :class:`Context` of the experiment.
      **options: its options (the others take their defaults).

    Returns:
      ``(policy, params, compile_key)``.
    """
    entry = POLICIES[POLICIES.resolve(name)]
    unknown = sorted(set(options) - set(entry.defaults))
    if unknown:
        raise KeyError(f"policy {entry.name!r} got unknown option(s) {unknown}"
                       f"{did_you_mean(unknown[0], entry.defaults)}; allowed: {sorted(entry.defaults)}")
    kwargs, params = entry.configure(ctx, **{**entry.defaults, **options})
    policy = entry.factory(**kwargs)
    family = FAMILIES.get(entry.family)
    want = KINDS[family.kind] if family is not None else (Policy, Identifier)
    if not isinstance(policy, want):
        needs = f"a {want.__name__} (family {entry.family!r} is {family.kind})" if family else "a Policy or Identifier"
        raise RegistryError(f"policy {entry.name!r} (from {entry.module}): its factory returned "
                            f"{type(policy).__name__}, not {needs}")
    return policy, params, (entry.name,) + tuple(sorted((k, _env_part(v, ctx)) for k, v in kwargs.items()))


ENV_PARTS = ("sample", "reset", "prefix_table")


def _env_part(value, ctx):
    """A factory argument for a compile key: one of the context environment's own functions stands for its part's
    name, since the environment's ``static_key`` (beside it in the runner's group key) identifies its code."""
    env = getattr(ctx, "env", None)
    for part in ENV_PARTS:
        if env is not None and value is not None and value is getattr(env, part, None):
            return ("env", part)
    return value


def make_env(section: dict, config: dict | None = None) -> EnvInstance:
    """Build the environment named by ``section['kind']``, rejecting unknown keys by name.

    Args:
      section: the spec's ``[env]`` table.
      config: the whole resolved spec.

    Returns:
      The :class:`EnvInstance`.
    """
    kind = section.get("kind")
    if kind not in ENVS:
        raise KeyError(f"unknown env kind {kind!r}{did_you_mean(kind, ENVS)}; registered kinds: {sorted(ENVS)}")
    entry = ENVS[kind]
    unknown = sorted(set(section) - set(entry.keys) - {"kind"})
    if unknown:
        raise KeyError(f"env kind {kind!r} got unknown key(s) {unknown}{did_you_mean(unknown[0], entry.keys)}; "
                       f"allowed: {sorted(entry.keys)}")
    inst = entry.build(section, config or {})
    if not isinstance(inst, EnvInstance):
        raise RegistryError(f"env kind {kind!r} (from {entry.module}): its build returned {type(inst).__name__}, "
                            "not an EnvInstance")
    return inst


def make_metrics(family: str, ctx):
    """Build the metric set of ``family`` for a context.

    Args:
      family: a registered family's name.
      ctx: the :class:`Context` its metrics see.

    Returns:
      ``(MetricSet, mparams)``.
    """
    return family_of(family).metrics(ctx)


def family_of(name: str) -> FamilyEntry:
    """The registered family ``name``.

    Args:
      name: a family's name.

    Returns:
      Its :class:`FamilyEntry`.

    Raises:
      KeyError: naming the registered families, for an unknown one.
    """
    if name not in FAMILIES:
        raise KeyError(f"no family {name!r} is registered (mb.register_family){did_you_mean(name, FAMILIES)}; "
                       f"families: {sorted(FAMILIES)}")
    return FAMILIES[name]
