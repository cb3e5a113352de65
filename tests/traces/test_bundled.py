"""The real ls6 trace the project ships (data/traces/), and compressed traces in general."""

import bz2
import gzip
import hashlib
import lzma

import pandas as pd
import pytest
from paths import DATA, REPO

from mirage.errors import FetchError, TraceFormatError
from mirage.traces.clean import clean_trace
from mirage.traces.fetch import BUNDLED, PUBLISHED, bundled_trace

SHIPPED = REPO / "data" / "traces"


@pytest.mark.parametrize("compress", [lzma.compress, gzip.compress, bz2.compress],
                         ids=["xz", "gzip", "bzip2"])
def test_a_compressed_trace_reads_as_the_text_it_holds(tmp_path, compress):
    plain = DATA / "tacc_tab.log"
    packed = tmp_path / "trace.log.any"  # recognised by its bytes, not by its name
    packed.write_bytes(compress(plain.read_bytes()))
    kept, quarantine, report = clean_trace(plain, cluster="x")
    kept2, quarantine2, report2 = clean_trace(packed, cluster="x")
    pd.testing.assert_frame_equal(kept, kept2)
    pd.testing.assert_frame_equal(quarantine, quarantine2)
    assert report2["rows_in"] == report["rows_in"] > 0


def test_a_truncated_compressed_trace_is_refused_naming_the_fix(tmp_path):
    packed = tmp_path / "trace.log.xz"
    packed.write_bytes(lzma.compress((DATA / "tacc_tab.log").read_bytes())[:60])
    with pytest.raises(TraceFormatError, match="truncated or corrupt xz") as err:
        clean_trace(packed, cluster="x")
    assert "again" in str(err.value)


def test_the_shipped_trace_is_the_published_file_with_its_licence_and_attribution():
    path = bundled_trace("ls6", REPO)
    text = lzma.decompress((REPO / BUNDLED["ls6"]).read_bytes())
    assert hashlib.sha256(text).hexdigest() == PUBLISHED["ls6"][1]
    readme = (SHIPPED / "README.md").read_text()
    assert PUBLISHED["ls6"][1] in readme
    assert hashlib.sha256((REPO / BUNDLED["ls6"]).read_bytes()).hexdigest() in readme
    assert "CC" in readme and "Ding" in readme and "SC'23" in readme
    assert "Attribution 4.0" in (SHIPPED / "LICENSE-CC-BY-4.0.txt").read_text()
    # only compressed: never the uncompressed file
    assert not list(SHIPPED.glob("*.log")) and path.endswith(".xz")


def test_the_shipped_trace_reads_through_the_trace_layer_like_the_original():
    kept, quarantine, report = clean_trace(bundled_trace("ls6", REPO), cluster="ls6")
    assert report["rows_in"] == 24777 and report["rows_kept"] == 24776
    assert report["quarantined"] == {"malformed_row": 1}
    assert quarantine.iloc[0]["raw"].startswith("746545\t")


def test_a_cluster_the_project_does_not_ship_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(FetchError, match="source: fetch"):
        bundled_trace("frontera", REPO)
    with pytest.raises(FetchError, match="git checkout -- data/traces"):
        bundled_trace("ls6", tmp_path)  # a checkout without it
