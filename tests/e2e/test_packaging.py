"""The release: `.github/workflows/release.yml`'s build step run as its runner runs it (in a
copy of this checkout's files, with `build` and `twine` in a fresh venv), the sdist and the
wheel it makes read back (what the wheel holds, what pip reads of its metadata), the tag
check, the publish job's trusted publishing; and the README's install lines from the package
index, run as written against the files that release would upload (a local folder of links
standing in for the index, where `a2a-recorder` is not yet).

Needs the package index (build, twine, pipx, uv and the recorder's dependencies come from
it): skipped, saying why, when it cannot be reached.
"""

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
import yaml
from installs import pip, readme_line, run_line

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]
LIMIT = 600  # seconds, for a build or an install (downloads on a cold cache)
GOLDEN = ROOT / "transcripts" / "02-message-reply.http"


def workflow() -> dict:  # type: ignore[type-arg]
    value: dict = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))  # type: ignore[type-arg]
    return value


def build_step(name: str) -> dict:  # type: ignore[type-arg]
    (step,) = [s for s in workflow()["jobs"]["build"]["steps"] if s.get("name", "") == name]
    return step  # type: ignore[no-any-return]


def run_step(step: dict, cwd: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:  # type: ignore[type-arg]
    """A workflow step's `run:`, as a runner runs it (bash -eo pipefail), its `env:` given."""
    environ = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env}
    environ.pop("PYTHONPATH", None)
    environ.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )


def checkout_copy(folder: Path) -> Path:
    """The files a fresh clone of this checkout has (tracked, and new ones not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory, index_reachable: None) -> Path:
    """The checkout's copy after the release workflow's build step: its `dist/` folder."""
    runner = tmp_path_factory.mktemp("release-runner") / "venv"
    venv.EnvBuilder(with_pip=True).create(runner)
    clone = checkout_copy(tmp_path_factory.mktemp("release-clone"))
    built = run_step(
        build_step("Build the sdist and the wheel, and check them"), clone, runner / "bin"
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert built.stdout.count("PASSED") == 2, built.stdout  # twine check --strict, each file
    return clone / "dist"


def test_the_release_builds_one_sdist_and_one_wheel(release: Path) -> None:
    assert sorted(path.name for path in release.iterdir()) == [
        f"a2a_recorder-{VERSION}-py3-none-any.whl",
        f"a2a_recorder-{VERSION}.tar.gz",
    ]


def test_the_wheel_holds_the_package_and_says_what_pip_needs(release: Path) -> None:
    (wheel,) = release.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"a2a_recorder-{VERSION}.dist-info"
        metadata = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    # every module of the package, and the data it reads at run time
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "recorder").rglob("*.py")}
    assert modules <= names, sorted(modules - names)
    for data in (
        "recorder/py.typed",
        "recorder/default_rules.yaml",
        "recorder/replay/reports/html_report.css",
        "recorder/replay/reports/html_report.js",
        "recorder/bindings/a2a_v1.py",  # the A2A 1.0 messages the [grpc] extra builds
    ):
        assert data in names, data
    assert f"{info}/licenses/LICENSE" in names
    assert not {name for name in names if name.startswith(("tests/", "transcripts/"))}
    # what pip and the index read
    assert metadata["Name"] == "a2a-recorder" and metadata["Version"] == VERSION
    assert metadata["Requires-Python"] == PROJECT["requires-python"]
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().startswith("# ")  # the README, as the index shows it
    assert set(metadata.get_all("Provides-Extra")) >= {"grpc", "kit", "language"}
    requires = metadata.get_all("Requires-Dist")
    core = [r for r in requires if "extra ==" not in r]
    grpc = [r for r in requires if 'extra == "grpc"' in r]
    # the core and the gRPC binding install beside any a2a-sdk an agent pins: neither names one
    assert not [r for r in core + grpc if r.startswith("a2a-sdk")], core + grpc
    assert any(r.startswith("a2a-sdk") for r in requires if 'extra == "kit"' in r)
    assert "recorder = recorder.cli:main" in entry_points
    assert "recorder = recorder.replay.pytest_plugin" in entry_points  # pytest11


def test_the_sdist_holds_the_sources_the_license_and_the_changelog(release: Path) -> None:
    (sdist,) = release.glob("*.tar.gz")
    top = f"a2a_recorder-{VERSION}/"
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(top) for name in archive.getnames()}
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"} <= names
    assert "recorder/cli/__init__.py" in names and "recorder/replay/reports/html_report.js" in names
    assert not {name for name in names if name.startswith("tests/")}  # (they need the repo)


def test_the_tag_must_name_the_version_and_the_changelog_its_section(tmp_path: Path) -> None:
    step = build_step("The tag names the version being built")
    for name in ("pyproject.toml", "CHANGELOG.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    here = Path(sys.executable).parent
    assert run_step(step, tmp_path, here, TAG=f"v{VERSION}").returncode == 0
    wrong = run_step(step, tmp_path, here, TAG="v99.0.0")
    assert wrong.returncode == 1
    assert f"the tag v99.0.0 is not v{VERSION}" in wrong.stderr
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(changelog.read_text().replace(f"## {VERSION}\n", "## later\n"))
    missing = run_step(step, tmp_path, here, TAG=f"v{VERSION}")
    assert missing.returncode == 1 and f"no section ## {VERSION}" in missing.stderr


def test_the_release_publishes_on_a_tag_by_trusted_publishing() -> None:
    spec = workflow()
    # (PyYAML reads the key `on` as True)
    assert spec[True] == {"push": {"tags": ["v*"]}}
    assert spec["permissions"] == {"contents": "read"}
    publish = spec["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    (upload,) = [s for s in publish["steps"] if "gh-action-pypi-publish" in s.get("uses", "")]
    assert not upload.get("with")  # no password, no token: the job's OpenID Connect identity


def index_env(release: Path) -> dict[str, str]:
    """pip's and uv's settings that put the release's files beside the package index."""
    links = " ".join(filter(None, (os.environ.get("PIP_FIND_LINKS", ""), str(release))))
    return {"PIP_FIND_LINKS": links, "UV_FIND_LINKS": str(release)}


def installed_env() -> dict[str, str]:
    """This environment less the checkout's PYTHONPATH: an installed command runs its own."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def recorder_checks(command: Path) -> None:
    """The installed command runs: `recorder check` passes a golden."""
    done = subprocess.run(
        [str(command), "check", str(GOLDEN)],
        capture_output=True,
        text=True,
        timeout=60,
        env=installed_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.timeout(LIMIT * 4)
def test_the_readmes_index_lines_install_the_release(release: Path, tmp_path: Path) -> None:
    user = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(user)
    bin_ = user / "bin"
    env = index_env(release)

    installed = run_line(readme_line("pip install a2a-recorder"), tmp_path, bin_, **env)
    assert installed.returncode == 0, installed.stderr
    recorder_checks(bin_ / "recorder")

    # pipx and uv, each installed as the user would have them, each giving the command a venv
    # of its own
    tools = pip(bin_ / "python", "install", "-q", "--no-compile", "pipx", "uv")
    assert tools.returncode == 0, tools.stderr
    piped = run_line(
        readme_line("pipx install a2a-recorder"),
        tmp_path,
        bin_,
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "pipx-bin"),
        **env,
    )
    assert piped.returncode == 0, piped.stdout + piped.stderr
    recorder_checks(tmp_path / "pipx-bin" / "recorder")
    uv = run_line(
        readme_line("uv tool install a2a-recorder"),
        tmp_path,
        bin_,
        UV_TOOL_DIR=str(tmp_path / "uv-tools"),
        UV_TOOL_BIN_DIR=str(tmp_path / "uv-bin"),
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        UV_PYTHON=str(bin_ / "python"),
        **env,
    )
    assert uv.returncode == 0, uv.stdout + uv.stderr
    recorder_checks(tmp_path / "uv-bin" / "recorder")

    # the [kit] line: the bundled agent's a2a-sdk comes with it
    with_kit = run_line(readme_line("pip install 'a2a-recorder[kit]'"), tmp_path, bin_, **env)
    assert with_kit.returncode == 0, with_kit.stderr
    kit = subprocess.run(
        [str(bin_ / "python"), "-c", "import recorder.kit.app"],
        capture_output=True,
        text=True,
        timeout=120,
        env=installed_env(),
        check=False,
    )
    assert kit.returncode == 0, kit.stderr
