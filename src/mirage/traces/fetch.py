"""Downloading the published traces from the paper's repository (CC BY 4.0).

The files are pinned to one commit of ``zhaozhang/Mirage``; the ls6 file's sha256 is known and
verified, the others' are recorded next to the download so a later run can tell if they changed.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from mirage.errors import FetchError
from mirage.traces.clean import sha256_file

REPOSITORY = "zhaozhang/Mirage"
COMMIT = "6de19bc72f075296d1a7fc2ab2afb13a5c8a185a"
URL = "https://raw.githubusercontent.com/{repo}/{commit}/data/{file}"

#: cluster key -> (file in the publisher's repository, expected sha256 or None if unknown)
PUBLISHED = {
    "ls6": ("ls6-a100.log", "e1ff7c8e9fde480a21ea698c56e1e874a1f0179ecf007e03c63d9d3d78a6a942"),
    "frontera": ("frontera-rtx.log", None),
    "longhorn": ("longhorn-v100.log", None),
}
ATTRIBUTION = (
    "Traces: Q. Ding, P. Zheng, S. Kudari, S. Venkataraman, Z. Zhang, 'Mirage: Towards "
    "Low-interruption Services on Batch GPU Clusters with Reinforcement Learning', SC'23; "
    "CC BY 4.0, github.com/zhaozhang/Mirage"
)


#: the published traces this project ships compressed (data/traces/, CC BY 4.0 with its
#: attribution): the offline default reads them as they are
BUNDLED = {"ls6": "data/traces/ls6-a100.log.xz"}


def bundled_trace(cluster: str, root: str | Path) -> str:
    """The path of the copy of ``cluster``'s published trace that this project ships, under
    the checkout ``root`` (``source: bundled``)."""
    if cluster not in BUNDLED:
        raise FetchError(
            f"the project ships no trace of cluster {cluster!r} (it ships: {', '.join(BUNDLED)}); "
            "use `source: fetch` (the publisher's file) or `source: file` with a path instead"
        )
    path = Path(root) / BUNDLED[cluster]
    if not path.exists():
        raise FetchError(f"the shipped {cluster} trace {path} is missing from this checkout. "
                         "Fix: restore it with `git checkout -- data/traces`")
    return str(path)


def published_url(cluster: str) -> str:
    if cluster not in PUBLISHED:
        raise FetchError(
            f"no published trace for cluster {cluster!r} (known: {', '.join(PUBLISHED)}); "
            "use `source: file` with a local path in the config instead"
        )
    return URL.format(repo=REPOSITORY, commit=COMMIT, file=PUBLISHED[cluster][0])


def fetch(cluster: str, out: str | Path, *, timeout: float = 60.0) -> dict:
    """Download ``cluster``'s trace to ``out``, verify it, and write ``out.sha256.json``."""
    url = published_url(cluster)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(partial, "wb") as fh:
            while chunk := resp.read(1 << 20):
                fh.write(chunk)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        partial.unlink(missing_ok=True)
        raise FetchError(
            f"could not download the {cluster} trace from {url} ({exc}). Offline? Download that "
            f"file on a machine with network access and place it by hand at {out}, then rerun"
        ) from None
    return record(cluster, partial, final=out, url=url)


def record(cluster: str, path: Path, *, final: Path | None = None, url: str | None = None) -> dict:
    """Verify a downloaded (or hand-placed) file, move it into place, and record its checksum."""
    final = final or path
    digest = sha256_file(path)
    expected = PUBLISHED.get(cluster, (None, None))[1]
    if expected and digest != expected:
        raise FetchError(
            f"{path}: sha256 {digest} does not match the published {expected}; the download is "
            f"corrupt or not the file of commit {COMMIT}. Delete it and fetch again"
        )
    if path != final:
        path.replace(final)
    info = {
        "cluster": cluster,
        "url": url or published_url(cluster),
        "sha256": digest,
        "verified": bool(expected),
        "bytes": final.stat().st_size,
        "license": "CC BY 4.0",
        "attribution": ATTRIBUTION,
    }
    final.with_name(final.name + ".sha256.json").write_text(json.dumps(info, indent=2) + "\n")
    return info
