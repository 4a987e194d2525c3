"""docs/api-coverage.md is what tests/api/api_coverage.py generates from PyTorch 2.13, and its
"absent on purpose" entries are honest (each names something PyTorch has and ember lacks)."""
from __future__ import annotations

import fnmatch
import sys
import pathlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import api_coverage as ac  # noqa: E402

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.__version__.startswith(ac.TORCH_VERSION),
                                reason=f"the coverage document is generated from PyTorch {ac.TORCH_VERSION}")


@pytest.fixture(scope="module")
def rows():
    return ac.coverage()


def test_document_is_current(rows):
    want = ac.render(rows)
    have = ac.DOC.read_text(encoding="utf-8") if ac.DOC.exists() else ""
    assert have == want, "docs/api-coverage.md is out of date: run `python tests/api/api_coverage.py --write`"


def test_absent_on_purpose_entries_match_names_ember_lacks(rows):
    by_title = {r["title"]: r for r in rows}
    for title, entries in ac.ABSENT.items():
        tnames = ac.public_names(ac._resolve(dict((t, p) for t, p, _, _ in ac.NAMESPACES)[title]))
        eobj = ac._resolve(by_title[title]["ember"])
        for pattern, reason in entries:
            assert reason.strip(), f"{title}: {pattern} has no reason"
            hits = [n for n in tnames if fnmatch.fnmatchcase(n, pattern)]
            assert hits, f"{title}: '{pattern}' matches no PyTorch name (stale entry)"
            assert not [n for n in hits if eobj is not None and hasattr(eobj, n)], \
                f"{title}: '{pattern}' is listed as absent but ember has some of it"


def test_counts_add_up(rows):
    for r in rows:
        n_abs = sum(len(v[1]) for v in r["absent"].values())
        assert len(r["present"]) + n_abs + len(r["missing"]) == r["total"], r["title"]
        assert set(r["present"]).isdisjoint(r["missing"])
