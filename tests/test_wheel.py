"""The wheel ships the front-end bundle, built by npm from a clean checkout.

The checkout's files (tracked plus untracked-but-not-ignored, as a fresh
clone would have them: no ``attnwidget/static/``, no ``js/node_modules/``) are
copied to a temporary directory and ``python -m build --wheel`` runs there,
which makes hatch-jupyter-builder run ``npm install`` and ``npm run build``.
About 3-15 s (npm install is served from npm's cache after the first run).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IGNORED = {".git", ".venv", "node_modules", "static", "dist", "build", "__pycache__"}


def checkout_files() -> list[str]:
    """Files a fresh clone would have (git's view; a plain copy outside git)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [
            str(path.relative_to(ROOT))
            for path in ROOT.rglob("*")
            if path.is_file() and not IGNORED & set(path.relative_to(ROOT).parts)
        ]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm is needed to build the front end (install Node.js 18+)")
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    for name in checkout_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    assert not (source / "attnwidget" / "static" / "widget.js").exists()

    command = [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp / "dist")]
    if all(importlib.util.find_spec(m) for m in ("hatchling", "hatch_jupyter_builder")):
        command.append("--no-isolation")  # use this environment's backend: no downloads
    env = {k: v for k, v in os.environ.items() if k not in {"HATCH_JUPYTER_BUILDER_SKIP_NPM"}}
    result = subprocess.run(
        command, cwd=source, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"wheel build failed:\n{result.stdout}\n{result.stderr}"
    assert "npm run build" in result.stdout + result.stderr  # the bundle was built here
    wheels = list((tmp / "dist").glob("attnwidget-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def test_wheel_contains_the_built_bundle(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "attnwidget/static/widget.js" in names
        assert "attnwidget/py.typed" in names  # type checkers read the package's hints
        bundle = zf.read("attnwidget/static/widget.js").decode("utf-8")
    assert len(bundle) > 5_000
    assert "as default" in bundle  # an ES module with a default export (render)
    assert "saliency" in bundle  # the view dispatch table
    assert "attnw-tok" in bundle  # the stylesheet travels inside the bundle
    # Nothing is fetched at run time: no imports from URLs, no CDN.
    # The bundle fetches nothing: the only URLs in it are the XML namespace
    # names the SVG export and the calculator's MathML must write
    # (identifiers for createElementNS, never requested).
    namespaces = (
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xhtml",
        "http://www.w3.org/1998/Math/MathML",
    )
    remaining = bundle
    for name in namespaces:
        remaining = remaining.replace(name, "")
    assert "https://" not in remaining and "http://" not in remaining
    assert "import(" not in bundle


def test_wheel_ships_no_front_end_sources(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert not [n for n in names if n.startswith("js/") or "node_modules" in n]
    assert "attnwidget/views/saliency/saliency_view.py" in names
