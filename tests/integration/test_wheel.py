"""What users install is a wheel, not this checkout: the sdist and the wheel built as ``python -m build`` builds
them (the wheel from the sdist), every package and data file inside, and the main job run from the wheel alone,
installed (not editable) into a fresh virtual environment with its console script on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def source_files() -> list[Path]:
    """The files a clean clone of this tree has (tracked, and new ones git does not ignore), relative to ROOT."""
    if (ROOT / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout
        return [Path(p) for p in out.decode().split("\0") if p and (ROOT / p).is_file()]
    skip = {".venv", ".git", "__pycache__", "build", "dist", ".searchapp", ".pytest_cache", ".ruff_cache"}
    return [p.relative_to(ROOT) for p in ROOT.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(ROOT).parts) and not p.name.endswith(".egg-info")]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and wheel of a copy of this tree (so the build writes nothing into the checkout)."""
    tree = tmp_path_factory.mktemp("tree")
    for rel in source_files():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tree / rel)
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # A package missing from the configuration is a warning of setuptools', not a failure: none may be printed.
    assert "absent from the `packages` configuration" not in res.stdout + res.stderr
    return {"wheel": next(out.glob("searchapp-*.whl")), "sdist": next(out.glob("searchapp-*.tar.gz"))}


def expected_in_wheel() -> set[str]:
    """Every module and data file of the package as it sits in the wheel: searchapp/ as it is, migrations/ as
    searchapp/migrations/."""
    names = set()
    for rel in source_files():
        parts = rel.parts
        if parts[0] not in ("searchapp", "migrations") or "__pycache__" in parts:
            continue
        names.add("/".join(("searchapp", *parts)) if parts[0] == "migrations" else rel.as_posix())
    return names


def test_the_wheel_holds_every_package_and_data_file(dist: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    expected = expected_in_wheel()
    packages = {n for n in expected if n.endswith("/__init__.py")}
    data = {n for n in expected if not n.endswith(".py")}
    assert {"searchapp/ingest/markup/__init__.py", "searchapp/migrations/versions/__init__.py"} <= packages
    assert {"searchapp/server/static/index.html", "searchapp/migrations/alembic.ini"} <= data
    assert expected - names == set()
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "searchapp = searchapp.cli:main" in zipfile.ZipFile(dist["wheel"]).read(entry_points).decode()


def test_the_sdist_builds_the_same_wheel_and_carries_the_build_files(dist: dict[str, Path]) -> None:
    with tarfile.open(dist["sdist"]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"pyproject.toml", "setup.py", "README.md", "migrations/env.py", "searchapp/server/static/app.js"} <= names


def test_the_main_job_runs_from_the_wheel_in_a_fresh_environment(dist: dict[str, Path], tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # pip of this environment installs into the new one (--python), as pipx installs an app: the console script
    # lands in the new environment's bin/.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(dist["wheel"])], check=True, capture_output=True)
    # The dependencies (torch, the model package...) are this environment's, seen through a path file: a path
    # line adds the folder without running its .pth files, so this checkout's editable install stays out.
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "work"
    shutil.copytree(ROOT / "data" / "sample", work / "data" / "sample")
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": ""}

    def searchapp(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["searchapp", *args], cwd=work, env=env, capture_output=True, text=True, timeout=600)

    where = subprocess.run([str(python), "-c", "import searchapp; print(searchapp.__file__)"], cwd=work, env=env,
                           check=True, capture_output=True, text=True).stdout
    assert where.startswith(str(purelib)), where  # the wheel's package, not this checkout's
    assert shutil.which("searchapp", path=env["PATH"]) == str(venv / "bin" / "searchapp")
    version = searchapp("--version")
    assert version.returncode == 0 and version.stdout.startswith("searchapp "), version.stderr
    ingest = searchapp("ingest", "data/sample")
    assert ingest.returncode == 0, ingest.stderr[-2000:]
    assert "failed" not in ingest.stdout.replace("failed 0", ""), ingest.stdout
    query = searchapp("query", "how are passages split?", "--json")
    assert query.returncode == 0, query.stderr[-2000:]
    import json

    hits = json.loads(query.stdout)["hits"]
    assert hits and all(Path(h["path"]).is_relative_to(work / "data" / "sample") for h in hits)
