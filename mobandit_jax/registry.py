"""One registry type for policies, environments and metric sets (gymnax ``registration.py`` style).

A :class:`Registry` maps names to entries. Policies are named ``family/name`` (``preference/prefucb``,
``slate/thv_ucb``); a bare name resolves where it is unique (``prefucb``, ``thv_ucb``), so a spec may
write either. A bare name that several families share names the one registered first (``pareto_ucb``:
the preference family's, which the package registers before the slate family's); ``family = "slate"``
in a spec, or the full name, picks another, and a plugin never changes what a built-in bare name means.
Environments are named by their ``kind``; metric sets by the policy family they score.

Each ``register_*`` works as a call or, with its callable left out, as a decorator::

    mb.register_policy("my_ucb", "preference", my_ucb, configure, doc="...", c=1.0)

    @mb.register_env("my_env", doc="...", keys=("means",))
    def build(section, config) -> EnvInstance: ...

    @mb.register_metrics("my_family")
    def build(ctx) -> tuple[MetricSet, mparams]: ...

``configure(ctx, **options) -> (factory_kwargs, params)`` reads the experiment :class:`Context` and the
policy's options (the ``**defaults`` give their names and types); ``factory(**factory_kwargs)`` returns a
:class:`Policy` or :class:`Identifier`. The compile key of a built policy is its registry name and the
factory's arguments, so two grid points share one compiled function exactly when they call the factory
with equal arguments; an argument that is one of the environment's own functions (``ctx.env.sample``,
``.prefix_table``, ``.reset``) counts by name, the environment's code being named by its ``static_key``.
A name registered twice is refused (:class:`RegistryError`), built-ins included.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from .types import EnvInstance, Identifier, Policy


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


class EnvEntry(NamedTuple):
    """An environment row: ``build(section, config) -> EnvInstance``, with its allowed keys."""

    name: str
    build: Callable[..., EnvInstance]
    doc: str
    keys: tuple
    module: str


class MetricsEntry(NamedTuple):
    """A metric-set row: ``build(ctx) -> (MetricSet, mparams)`` for the policy family ``name``."""

    name: str
    build: Callable
    doc: str
    module: str


PLUGIN_MODULES: set = set()  # modules imported as plugins (:mod:`mobandit_jax.runner.plugins`)
IMPORTING: list = []  # the plugin modules being imported now: a row registered meanwhile is the innermost's


class Registry(dict):
    """Names -> entries of one kind; adding a name twice is an error, unless a plugin module replaces a
    row another plugin module registered (two specs' plugins, or an edited copy, in one process)."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def add(self, entry):
        """Add ``entry`` under ``entry.name``; refuses a name already registered."""
        old = self.get(entry.name)
        if old is not None and not (old.module in PLUGIN_MODULES and entry.module in PLUGIN_MODULES):
            raise RegistryError(f"{self.kind} {entry.name!r} is registered already (by {self[entry.name].module}); "
                                "choose another name")
        self[entry.name] = entry
        return entry

    def resolve(self, name: str, family: str | None = None) -> str:
        """The registered name of ``name``: itself, ``family/name``, or the first registered ``*/name``."""
        if family and f"{family}/{name}" in self:
            return f"{family}/{name}"
        found = [name] if name in self else [k for k in self if k.rpartition("/")[2] == name]  # registration order
        if family:
            same = [k for k in found if self[k].family == family]
            if found and not same:
                raise RegistryError(f"{self.kind} {name!r} is in family {self[found[0]].family!r}, not family = "
                                    f"{family!r}; drop 'family' or write the registered one (see `mobandit list`)")
            found = same
        if found:
            return found[0]
        where = f" in family {family!r}" if family else ""
        raise RegistryError(f"unknown {self.kind} {name!r}{where}; registered: {sorted(self)}")


POLICIES = Registry("policy")
ENVS = Registry("env kind")
METRICS = Registry("metrics family")


def _module(fn) -> str:
    """The module a row belongs to: the plugin being imported, else the callable's own module."""
    return IMPORTING[-1] if IMPORTING else getattr(fn, "__module__", None) or "?"


def register_policy(name: str, family: str, factory: Callable | None = None, configure: Callable | None = None,
                    doc: str = "", **defaults):
    """Register a policy as ``family/name``; without ``factory``, a decorator of the factory."""
    if factory is None:
        return lambda fn: (register_policy(name, family, fn, configure, doc, **defaults), fn)[1]
    if not callable(factory) or not callable(configure):
        raise RegistryError(f"policy {name!r}: factory and configure must be callables")
    if "/" in family or not family:
        raise RegistryError(f"policy {name!r}: family {family!r} must be a non-empty name without '/'")
    key = name if name.startswith(f"{family}/") else f"{family}/{name}"
    if "/" in key[len(family) + 1:] or key == f"{family}/":
        raise RegistryError(f"policy name {name!r} must be 'name' or '{family}/name'")
    POLICIES.add(PolicyEntry(key, family, factory, configure, doc, dict(defaults), _module(factory)))
    return factory


def register_env(name: str, build: Callable | None = None, doc: str = "", keys=()):
    """Register an environment kind: ``build(section, config) -> EnvInstance`` (``keys``: allowed keys)."""
    if build is None:
        return lambda fn: (register_env(name, fn, doc, keys), fn)[1]
    ENVS.add(EnvEntry(name, build, doc, tuple(keys), _module(build)))
    return build


def register_metrics(family: str, build: Callable | None = None, doc: str = ""):
    """Register the metric set of a policy family: ``build(ctx) -> (MetricSet, mparams)``."""
    if build is None:
        return lambda fn: (register_metrics(family, fn, doc), fn)[1]
    METRICS.add(MetricsEntry(family, build, doc, _module(build)))
    return build


def make_policy(name: str, ctx, **options):
    """Build ``(policy, params, compile_key)`` of a registered policy, validating option names."""
    entry = POLICIES[POLICIES.resolve(name)]
    unknown = sorted(set(options) - set(entry.defaults))
    if unknown:
        raise KeyError(f"policy {entry.name!r} got unknown option(s) {unknown}; allowed: {sorted(entry.defaults)}")
    kwargs, params = entry.configure(ctx, **{**entry.defaults, **options})
    policy = entry.factory(**kwargs)
    if not isinstance(policy, (Policy, Identifier)):
        raise RegistryError(f"policy {entry.name!r} (from {entry.module}): its factory returned "
                            f"{type(policy).__name__}, not a Policy or Identifier")
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
    """Build the environment named by ``section['kind']``, rejecting unknown keys by name."""
    kind = section.get("kind")
    if kind not in ENVS:
        raise KeyError(f"unknown env kind {kind!r}; registered kinds: {sorted(ENVS)}")
    entry = ENVS[kind]
    unknown = sorted(set(section) - set(entry.keys) - {"kind"})
    if unknown:
        raise KeyError(f"env kind {kind!r} got unknown key(s) {unknown}; allowed: {sorted(entry.keys)}")
    inst = entry.build(section, config or {})
    if not isinstance(inst, EnvInstance):
        raise RegistryError(f"env kind {kind!r} (from {entry.module}): its build returned {type(inst).__name__}, "
                            "not an EnvInstance")
    return inst


def make_metrics(family: str, ctx):
    """Build the metric set of ``family`` for the context ``ctx``."""
    if family not in METRICS:
        raise KeyError(f"no metrics for family {family!r}; families: {sorted(METRICS)}")
    return METRICS[family].build(ctx)
