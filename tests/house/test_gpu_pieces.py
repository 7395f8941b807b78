"""tools/gpu/receive.sh, as a GPU host runs it once per transfer: pieces kept as they arrive,
joined only once all are there, the tar's sha256 checked before anything is unpacked."""

import hashlib
import io
import shutil
import subprocess
import tarfile

from tests.helpers import ROOT


def staged(tmp_path, data: dict[str, bytes], size: int):
    """What tools/gpu/models.sh leaves: .gpu-stage/models/pNN/{piece.NN, TAR_SHA256}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, body in data.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            t.addfile(info, io.BytesIO(body))
    blob = buf.getvalue()
    parts = [blob[i:i + size] for i in range(0, len(blob), size)]
    dirs = []
    for i, part in enumerate(parts):
        d = tmp_path / "stage" / f"p{i:02d}"
        d.mkdir(parents=True)
        (d / f"piece.{i:02d}").write_bytes(part)
        (d / "TAR_SHA256").write_text(f"{hashlib.sha256(blob).hexdigest()} {len(parts)}\n")
        dirs.append(d)
    return dirs


def transfer(tmp_path, piece_dir) -> subprocess.CompletedProcess:
    """One transfer: the tree holds this piece alone."""
    tree = tmp_path / "tree"
    shutil.rmtree(tree / ".gpu-stage", ignore_errors=True)
    (tree / ".gpu-stage" / "models").mkdir(parents=True)
    shutil.copytree(piece_dir, tree / ".gpu-stage" / "models" / piece_dir.name)
    env = {"PATH": "/usr/bin:/bin", "KNEE_PIECES": str(tmp_path / "pieces"),
           "KNEE_WHEELS": str(tmp_path / "wheels")}
    return subprocess.run(["bash", str(ROOT / "tools" / "gpu" / "receive.sh")], cwd=tree,
                          env=env, capture_output=True, text=True, timeout=60)


def test_pieces_join_once_all_arrived_and_unpack_the_wheels(tmp_path):
    wheels = {"a-1-py3-none-any.whl": b"A" * 3000, "b-2-py3-none-any.whl": b"B" * 5000}
    dirs = staged(tmp_path, wheels, 4096)
    assert len(dirs) >= 3
    for d in dirs[:-1]:
        r = transfer(tmp_path, d)
        assert r.returncode == 3 and "pieces on this host" in r.stdout
    r = transfer(tmp_path, dirs[-1])
    assert r.returncode == 0, r.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "wheels").iterdir()} == wheels


def test_a_damaged_piece_unpacks_nothing(tmp_path):
    dirs = staged(tmp_path, {"a-1-py3-none-any.whl": b"A" * 9000}, 4096)
    damaged = dirs[1] / "piece.01"
    damaged.write_bytes(b"X" + damaged.read_bytes()[1:])
    for d in dirs:
        r = transfer(tmp_path, d)
    assert r.returncode == 1 and "a piece is damaged" in r.stderr
    assert not list((tmp_path / "wheels").iterdir())
