"""The example-count knob of the chunking property tests."""

from __future__ import annotations

import pytest

from tests.chunking import ENV, examples


def test_default_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert examples(300) == 300
    monkeypatch.setenv(ENV, " ")
    assert examples(300) == 300


def test_the_variable_sets_every_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "10000")
    assert examples(300) == 10000
    assert examples(30) == 10000


@pytest.mark.parametrize("raw", ["many", "0", "-5", "1.5"])
def test_a_bad_value_is_refused(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(ENV, raw)
    with pytest.raises(ValueError, match=ENV):
        examples(300)
