"""Policies, one module per family; importing this package fills the registry."""
import importlib as _importlib
import pkgutil as _pkgutil

for _m in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _importlib.import_module(f"{__name__}.{_m.name}")
