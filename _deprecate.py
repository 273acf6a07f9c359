"""The one way asides deprecates something, as trio's ``_deprecate``.

A deprecated function, method, argument or importable name keeps working; each use warns once,
with an :class:`AsidesDeprecationWarning` that names the thing, the version of asides that
deprecated it and what to use instead. Three entry points, and one helper:

* :func:`warn_deprecated`, called where the deprecated thing is used (an argument, say);
* :func:`deprecated`, a decorator for a function or method (sync or async);
* :func:`deprecate_attributes`, which keeps names importable from a module that no longer binds
  them: ``from asides.store import open_store`` still gives ``open_store``, and warns;
* :func:`replacement`, which a deprecated thing forwards to when what replaces it lives in a
  layer above it (``Runtime.openai_session``, replaced by the OpenAI Agents integration's own
  entry point): named by its path and imported at the call, so no layer imports one above it.

Nothing here decides what is deprecated: each module names its own deprecated things, and
docs/api.md ("Deprecated names") lists them all.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, ParamSpec, TypeVar, cast

import attrs

__all__ = [
    "AsidesDeprecationWarning",
    "DeprecatedAttribute",
    "deprecate_attributes",
    "deprecated",
    "moved",
    "warn_deprecated",
]

P = ParamSpec("P")
R = TypeVar("R")


class AsidesDeprecationWarning(DeprecationWarning):
    """Warned when code uses something asides has deprecated: it still works, and the message
    says since which version and what to use instead. A ``DeprecationWarning``, so Python shows
    it by default only in ``__main__`` and under test runners; ``-W error::DeprecationWarning``
    (or a filter on this class) turns it into an error."""


def _name(thing: object) -> str:
    """``thing`` as a reader would import it: a string as it is, a class or function by its
    public home (its ``__module__``, read now, after the home has set it)."""
    if isinstance(thing, str):
        return thing
    module, qualname = getattr(thing, "__module__", None), getattr(thing, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}.{qualname}"
    return repr(thing)


def warn_deprecated(thing: object, version: str, *, instead: object, because: str | None = None, stacklevel: int = 2) -> None:
    """Warn (:class:`AsidesDeprecationWarning`) that ``thing`` is deprecated since asides
    ``version``; ``instead`` is what to use (``None``: nothing replaces it), ``because`` an
    optional reason. ``stacklevel`` as for ``warnings.warn``, counted from the caller of this
    function: the default points at the code that called it."""
    message = f"{_name(thing)} is deprecated since asides {version}"
    message += " with no replacement" if instead is None else f"; use {_name(instead)} instead"
    if because:
        message += f": {because}"
    warnings.warn(AsidesDeprecationWarning(message), stacklevel=stacklevel + 1)


def replacement(path: str) -> Any:
    """The object ``path`` names (``"package.module:Class.attribute"``), imported now: what a
    deprecated thing forwards to when its replacement lives in a layer above it (see the module
    docstring). A path that names nothing raises ``ImportError`` or ``AttributeError``."""
    module, _, attribute = path.partition(":")
    value: Any = importlib.import_module(module)
    for part in filter(None, attribute.split(".")):
        value = getattr(value, part)
    return value


def deprecated(version: str, *, instead: object, thing: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function or method so that every call warns it is deprecated (see
    :func:`warn_deprecated`) and then runs it as before. ``thing`` names it in the warning
    (``"asides.Runtime.openai_session"``); by default its ``__module__`` and ``__qualname__``,
    read at the call. An ``async def`` stays one: it warns when it is awaited. The docstring
    gains a line saying it is deprecated and what to use instead."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        wrapper: Callable[..., Any]
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                warn_deprecated(thing or wrapper, version, instead=instead)
                return await fn(*args, **kwargs)

        else:

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                warn_deprecated(thing or wrapper, version, instead=instead)
                return fn(*args, **kwargs)

        if wrapper.__doc__ is not None:
            replacement = "nothing replaces it" if instead is None else f"use {_name(instead)} instead"
            wrapper.__doc__ = f"{inspect.cleandoc(wrapper.__doc__)}\n\nDeprecated since asides {version}: {replacement}."
        return cast(Callable[P, R], wrapper)

    return wrap


@attrs.frozen
class DeprecatedAttribute:
    """A name a module no longer binds but still gives, with a warning: ``value`` is what it
    gives, ``version`` the version of asides that deprecated it, ``instead`` what to use (by
    default ``value`` itself, named by its public home)."""

    value: object
    version: str
    instead: object = attrs.field(default=None, kw_only=True)


def moved(namespace: MutableMapping[str, Any], home: str, version: str, names: Iterable[str]) -> dict[str, DeprecatedAttribute]:
    """Take ``names`` out of ``namespace`` (a module's globals, where they were imported) and
    return them as deprecated attributes whose replacement is the same name in ``home``: for a
    module that keeps giving names, for old imports, whose one public home is elsewhere. A name
    missing from ``namespace`` raises ``KeyError`` at import."""
    return {name: DeprecatedAttribute(namespace.pop(name), version, instead=f"{home}.{name}") for name in names}


def _asked_by_import_system() -> bool:
    """Whether the module ``__getattr__`` that calls this was called by the import system's
    check of a ``from package import name`` list (which asks each name before the import
    statement itself gets it), not by the code that uses the name."""
    caller = sys._getframe(2).f_code
    return caller.co_name == "_handle_fromlist" and caller.co_filename.startswith("<frozen importlib")


def deprecate_attributes(module_name: str, attributes: Mapping[str, DeprecatedAttribute]) -> None:
    """Give ``module_name`` (an imported module) a module ``__getattr__`` that serves each name
    of ``attributes`` it does not bind: the attribute's value, after a warning naming
    ``module_name.name`` and its replacement. Any other missing name raises ``AttributeError``
    as before. Called again for the same module, it adds to the names it serves; a name the
    module binds itself is refused (``RuntimeError``, at import), since it would never warn."""
    module = sys.modules[module_name]
    namespace = vars(module)
    served: dict[str, DeprecatedAttribute] | None = namespace.get("__deprecated_attributes__")
    if served is None:
        served = namespace["__deprecated_attributes__"] = {}

        def __getattr__(name: str) -> object:
            info = served.get(name)
            if info is None:
                raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
            if _asked_by_import_system():
                return info.value  # ``from package import name`` asks twice: warn at the second, in the importer's line
            warn_deprecated(f"{module_name}.{name}", info.version, instead=info.value if info.instead is None else info.instead)
            return info.value

        namespace["__getattr__"] = __getattr__
    bound = sorted(set(attributes) & set(namespace))
    if bound:
        raise RuntimeError(f"asides: {module_name} binds {', '.join(bound)} itself, so it would never warn")
    served.update(attributes)
