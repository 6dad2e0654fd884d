"""Every corpus file, at every budget: invariants hold and boundaries match the snapshot."""

from __future__ import annotations

import pytest

from sdk.chunking import Chunker
from tests.corpus import (
    BUDGETS,
    CorpusFile,
    corpus_files,
    load_snapshot,
    render_snapshot,
    save_snapshot,
    updating,
)
from tests.invariants import check_chunks

FILES = corpus_files()


@pytest.mark.parametrize("cf", FILES, ids=[f.name for f in FILES])
def test_corpus_file(cf: CorpusFile) -> None:
    text = cf.read()
    by_budget = {}
    for budget in BUDGETS:
        chunks = Chunker(budget).chunk(text, kind=cf.kind, filename=cf.path.name)
        check_chunks(text, chunks, budget)
        by_budget[budget] = chunks
    got = render_snapshot(by_budget)
    if updating():
        save_snapshot(cf, got)
        return
    want = load_snapshot(cf)
    assert want is not None, f"no snapshot for {cf.name}; run with SEAM_UPDATE_SNAPSHOTS=1 and review it"
    assert got == want
