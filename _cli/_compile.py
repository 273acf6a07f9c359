"""``asides compile PATH --namespace NS``: what a namespace's agent would be sent now, as text,
JSON or a provider's message form. Reads the store read-only: a compile here is a preview, so
``--reader`` on an unclaimed namespace shows that reader's view without claiming it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import trio

from .._inspection._preview import STRATEGIES, compile_as_json, compile_as_text, rebuild_strategy
from .._inspection._records import INFERRED, NAME_ONLY, FoundStrategy, namespace_strategy, namespaces_on
from ..actors._namespace import normalise_namespace
from ..actors._runtime import Runtime, internal_store
from ..store._names import name_problem
from ..store._words import counted
from ._common import EXIT_OK, CliError, UsageError, dumps, reading_runtime, require_branch

__all__ = ["FORMATS", "cmd_compile"]

FORMATS = ("text", "json", "anthropic", "openai")


def _strategy_for(found: FoundStrategy, chosen: str | None, where: str) -> tuple[Any, str, list[str]]:
    """The strategy to preview with, its name, and the warnings to print where the preview may
    differ from the live compile. ``found`` is what the namespace's records say, ``chosen`` the
    ``--strategy`` given (or ``None``); ``where`` names the namespace and branch."""
    warnings: list[str] = []
    name = chosen or found.name
    if name not in STRATEGIES:
        raise CliError(
            f"{where} runs strategy {name!r}, which asides compile cannot build; pass --strategy with one of "
            f"{', '.join(sorted(STRATEGIES))}"
        )
    if chosen is not None and found.how != INFERRED and chosen != found.name:
        warnings.append(
            f"{where} records strategy {found.name!r}; this preview compiles as {chosen!r} (--strategy), which is not "
            "what the live compile sends"
        )
    elif chosen is None and found.how == INFERRED:
        warnings.append(
            f"{where} records no strategy (an open records none; set_strategy and derive do), so this preview "
            f"compiles as {name!r}, inferred from its records, with default options; the live compile may differ: "
            "pass --strategy to choose"
        )
    elif found.how == NAME_ONLY:
        warnings.append(
            f"{where} records strategy {found.name!r} without its options, so this preview uses its default options; "
            "the live compile may differ"
        )
    rebuilt = rebuild_strategy(name, found.options if name == found.name else None)
    if rebuilt.custom_estimator:
        warnings.append(
            f"{where} counts tokens with an estimator of its own, which a store cannot hold; this preview counts with "
            "the default estimator, so what fits may differ from the live compile"
        )
    if rebuilt.refused_options is not None:
        warnings.append(
            f"{where} records options for {name!r} this version cannot use ({rebuilt.refused_options}); this preview uses "
            "its default options, so the live compile may differ"
        )
    return rebuilt.strategy, name, warnings


async def _compile(rt: Runtime, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    branch, namespace = args.branch, normalise_namespace(args.namespace)
    require_branch(rt, branch)
    model = internal_store(rt).model
    known = namespaces_on(model, branch)
    if namespace not in known and args.strategy is None:
        reader = "no reader" if args.reader is None else f"reader {args.reader!r}"
        raise CliError(
            f"namespace {namespace!r} has no records on branch {branch!r} (namespaces there: "
            f"{', '.join(sorted(known)) or 'none'}); a namespace that never wrote anything compiles as passthrough for "
            f"{reader}: pass --strategy passthrough to compile it anyway"
        )
    found = namespace_strategy(model, branch, namespace)
    where = f"namespace {namespace!r} on branch {branch!r}"
    strategy, strategy_name, warnings = _strategy_for(found, args.strategy, where)
    # The runtime is read-only: a reader given for an unclaimed namespace is held in memory for
    # this preview, never recorded.
    manager = await rt.open_manager(namespace, strategy=strategy, view_reader=args.reader, branch=branch)
    try:
        compiled = await manager.preview_context(max_tokens=args.max_tokens, reserve_for_response=args.reserve)
        pending = manager.pending_work()
    finally:
        await manager.aclose()
    for warning in warnings:  # first: a refusal below may come from a strategy that was only inferred
        print(f"asides: warning: {warning}", file=sys.stderr)
    budget = args.max_tokens - args.reserve
    if compiled.token_estimate > budget:
        waiting = f"; what waits to be compressed: {pending}" if pending else ""
        raise CliError(
            f"a live compile for {where} would refuse this budget (OverBudgetError): its context needs "
            f"~{compiled.token_estimate} tokens and the budget is {budget} (--max-tokens {args.max_tokens} less --reserve "
            f"{args.reserve}); raise --max-tokens or lower --reserve{waiting}"
        )
    about = {
        "namespace": manager.namespace,
        "branch": branch,
        "reader": manager.view_reader,
        "strategy": strategy_name,
        "strategy_known": "chosen" if args.strategy is not None else found.how,
        "warnings": warnings,
    }
    return compiled, about


def cmd_compile(args: argparse.Namespace) -> int:
    if args.max_tokens < 0 or args.reserve < 0:
        raise UsageError("--max-tokens and --reserve must not be negative")
    namespace_problem = name_problem(args.namespace, what="a namespace")
    if namespace_problem is not None:
        raise UsageError(f"--namespace must name a namespace: {namespace_problem} (the default namespace is -n default)")
    reader_problem = None if args.reader is None else name_problem(args.reader, what="a reader's name")
    if reader_problem is not None:
        raise UsageError(f"--reader must name a reader: {reader_problem}")
    if args.max_tokens <= args.reserve:
        raise UsageError(
            f"--reserve {args.reserve} takes all of --max-tokens {args.max_tokens}, so nothing is left for the context: "
            "lower --reserve or raise --max-tokens"
        )

    async def run() -> tuple[Any, dict[str, Any]]:
        async with reading_runtime(args.path) as rt:
            return await _compile(rt, args)

    compiled, about = trio.run(run)
    # The agent the compile is for speaks as the assistant: its own lines and its memories.
    assistant = args.assistant or about["reader"] or "assistant"
    if args.format == "json":
        print(dumps(compile_as_json(compiled, about)))
    elif args.format == "anthropic":
        print(dumps(compiled.to_anthropic(assistant)))
    elif args.format == "openai":
        print(dumps(compiled.to_openai(assistant)))
    else:
        reader = "no reader" if about["reader"] is None else f"reader {about['reader']!r}"
        header = (
            f"# {about['namespace']} on {about['branch']}, for {reader} ({about['strategy']}): "
            f"{counted(len(compiled.messages), 'message')}, ~{compiled.token_estimate} tokens"
        )
        print(compile_as_text(compiled, header))
    return EXIT_OK
