"""The public surface: ``import asides`` gives every name the subpackages export, each the same
object, and nothing private; the subpackages keep the names SPEC section 3 gives them."""

from __future__ import annotations

import importlib

import pytest

import asides

SUBPACKAGES = ("asides.actors", "asides.store", "asides.strategies")


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_the_top_level_exports_every_name_of_each_subpackage(name):
    module = importlib.import_module(name)
    for exported in module.__all__:
        assert exported in asides.__all__, f"{name}.{exported} is not exported by asides"
        assert getattr(asides, exported) is getattr(module, exported)


def test_every_exported_name_exists_and_none_is_private():
    for exported in asides.__all__:
        assert hasattr(asides, exported), exported
        assert not exported.startswith("_") or exported == "__version__"


@pytest.mark.parametrize(
    ("name", "names"),
    [
        ("asides.actors", ["open_runtime", "Runtime", "ContextManager", "CompiledContext", "Provenance", "ReaderClaimError"]),
        ("asides.store", ["TextBlock", "text", "Message", "block_from_json", "content_for_reader", "MalformedContentError"]),
        ("asides.strategies", ["ContextStrategy", "PassthroughStrategy", "AutobiographicalStrategy", "ExtractiveModel", "Model"]),
    ],
)
def test_the_contract_names_stay_where_the_spec_puts_them(name, names):
    module = importlib.import_module(name)
    for contract in names:
        assert contract in module.__all__, f"{contract} missing from {name}"


def test_every_error_the_api_raises_on_purpose_is_an_asides_error():
    errors = [getattr(asides, n) for n in asides.__all__ if n.endswith("Error") and isinstance(getattr(asides, n), type)]
    assert errors
    for error in errors:
        assert issubclass(error, asides.AsidesError), error
