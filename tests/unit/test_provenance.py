"""What embedded an index's vectors (encode/provenance.py): read from the settings rows, checked, and the rows a
run adds."""

from __future__ import annotations

import json

import pytest

from searchapp.encode.encoder import LazyEncoder
from searchapp.encode.provenance import ROWS, EmbeddedWith, Provenance
from searchapp.encode.spec import EncoderSpec
from searchapp.errors import SchemaError
from tests.fakes import FakeEncoder


def test_the_rows_are_read_and_a_run_adds_only_what_they_lack() -> None:
    held = Provenance.from_settings({"vectors_precision": '["fp32"]', "vectors_device": '["cpu"]', "other": "1"})
    assert held == Provenance(("fp32",), ("cpu",), ())
    assert Provenance.from_settings({}) == Provenance()
    rows = held.recording(EmbeddedWith("bf16", "cpu", "torch"))
    assert rows == {"vectors_precision": '["bf16", "fp32"]', "vectors_encoder": '["torch"]'}
    assert Provenance.from_settings(rows) == Provenance(("bf16", "fp32"), (), ("torch",))
    assert held.recording(EmbeddedWith("fp32", None, None)) == {}  # nothing new, nothing said: no write


@pytest.mark.parametrize("value", ["not json", '"fp32"', "[1]", '{"a": 1}'])
@pytest.mark.parametrize("row", list(ROWS.values()))
def test_a_row_that_is_not_a_list_of_names_is_named(row: str, value: str) -> None:
    with pytest.raises(SchemaError, match=f"settings row {row}: .* is not a JSON list of names"):
        Provenance.from_settings({row: value})


def test_an_encoder_given_from_outside_says_only_what_it_says() -> None:
    spec = EncoderSpec(precision="fp32")
    assert EmbeddedWith.of(FakeEncoder(), None) == EmbeddedWith(None, None, None)

    class Says(FakeEncoder):
        precision = "fp32"

    assert EmbeddedWith.of(Says(), None) == EmbeddedWith("fp32", "cpu", None)
    # The spec's own encoder: its precision and device, and the backend that made the loaded encoder.
    assert EmbeddedWith.of(LazyEncoder(FakeEncoder), spec) == EmbeddedWith("fp32", "cpu", None)
    assert json.loads(Provenance().recording(EmbeddedWith.pinned(spec))["vectors_encoder"]) == [
        spec.ingests_with.name]
