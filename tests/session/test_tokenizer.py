"""A session counts in the model's own tokenizer: a tokenizer.json path (kept in the
file) or a tokenizer object (passed again at load)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from sdk.session import Session, SessionFileError
from sdk.session._turns import MESSAGE_OVERHEAD


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    text = ["the river was calm and the boats were slow that day"] * 40
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=300))
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def own_count(path: Path, text: str) -> int:
    return len(Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids)


def test_a_tokenizer_path_counts_and_is_kept(tokenizer_file: Path, tmp_path: Path) -> None:
    s = Session(None, model="m", context_window=4000, encoding=str(tokenizer_file))
    turn = s.add_user("the boats were slow")
    assert turn.estimate == MESSAGE_OVERHEAD + own_count(tokenizer_file, "the boats were slow")
    report = s.fit()
    assert report.tokens >= turn.estimate
    f = tmp_path / "s.json"
    s.save(f)
    loaded = Session.load(f)
    assert loaded.log.encoding == str(tokenizer_file)
    assert loaded.turns[0].estimate == turn.estimate
    loaded.add_user("and the river was calm")  # counted with the same tokenizer after load
    assert loaded.turns[1].estimate == MESSAGE_OVERHEAD + own_count(tokenizer_file, "and the river was calm")


def test_a_tokenizer_object_is_passed_again_at_load(tokenizer_file: Path, tmp_path: Path) -> None:
    tok = Tokenizer.from_file(str(tokenizer_file))
    s = Session(None, model="m", context_window=4000, encoding=tok)
    s.add_user("the river was calm")
    f = tmp_path / "s.json"
    s.save(f)
    with pytest.raises(SessionFileError, match="encoding="):
        Session.load(f)
    loaded = Session.load(f, encoding=tok)
    assert loaded.turns[0].estimate == s.turns[0].estimate


def test_an_unknown_encoding_in_a_file_is_named(tmp_path: Path) -> None:
    s = Session(None, model="m", context_window=4000)
    s.add_user("hello")
    f = tmp_path / "s.json"
    s.save(f)
    f.write_text(f.read_text().replace('"o200k_base"', '"/nowhere/tokenizer.json"'))
    with pytest.raises(SessionFileError, match="encoding"):
        Session.load(f)
