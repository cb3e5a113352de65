import json

import pytest

from mirage.errors import FetchError
from mirage.traces import fetch as fetch_mod


def test_urls_are_pinned_to_the_publishers_commit():
    url = fetch_mod.published_url("ls6")
    assert fetch_mod.COMMIT in url and url.endswith("/data/ls6-a100.log") and "zhaozhang/Mirage" in url
    with pytest.raises(FetchError, match="source: file"):
        fetch_mod.published_url("mycluster")


def test_offline_fetch_says_where_to_place_the_file(tmp_path, monkeypatch):
    # Point at a closed local port: the same failure path as a machine without network.
    monkeypatch.setattr(fetch_mod, "URL", "http://127.0.0.1:9/{repo}/{commit}/{file}")
    out = tmp_path / "raw" / "ls6-a100.log"
    with pytest.raises(FetchError) as err:
        fetch_mod.fetch("ls6", out, timeout=5)
    assert "place it by hand at" in str(err.value) and str(out) in str(err.value)
    assert not out.exists() and not out.with_name(out.name + ".part").exists()


def test_checksum_is_verified_and_recorded(tmp_path, ls6_path):
    good = tmp_path / "ls6-a100.log"
    good.write_bytes(ls6_path.read_bytes())
    info = fetch_mod.record("ls6", good)
    assert info["verified"] and info["sha256"].startswith("e1ff7c8e")
    assert json.loads((tmp_path / "ls6-a100.log.sha256.json").read_text())["license"] == "CC BY 4.0"
    bad = tmp_path / "corrupt.log"
    bad.write_bytes(good.read_bytes()[:-10])
    with pytest.raises(FetchError, match="does not match"):
        fetch_mod.record("ls6", bad)
    other = tmp_path / "frontera-rtx.log"
    other.write_text("anything")
    assert fetch_mod.record("frontera", other)["verified"] is False
