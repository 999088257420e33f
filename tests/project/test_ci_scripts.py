""".ci/apt-mirror, which .ci/debian-source (the source packages of .ci/ft-python) and
wheels/chroot.py (debootstrap) take the Debian archive from (no mirror is named in the
project): it reads both of apt's source formats as apt would, on fake configurations. And
.ci/pip-install, which hands uv pip's configuration."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, ".ci", "apt-mirror")

pytestmark = pytest.mark.skipif(
    not os.path.exists(SCRIPT) or shutil.which("bash") is None or shutil.which("awk") is None,
    reason="needs the source tree's .ci/ and bash and awk")


def mirror(tmp_path, sources_list="", **parts):
    """What the script prints for a sources.list and files of sources.list.d (name: text)."""
    (tmp_path / "sources.list").write_text(sources_list)
    folder = tmp_path / "sources.list.d"
    folder.mkdir()
    for name, text in parts.items():
        (folder / name.replace("_", ".")).write_text(text)
    run = subprocess.run([SCRIPT, str(tmp_path / "sources.list"), str(folder)],
                         capture_output=True, text=True, timeout=30)
    return run.stdout.strip() if run.returncode == 0 else run.stderr


def test_deb822_sources_skip_security_disabled_and_source_only_stanzas(tmp_path):
    text = """Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://off.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm
Components: main

# a comment
Types: deb deb-src
URIs: http://mirror.example/debian/
  http://second.example/debian
Suites: bookworm bookworm-updates
Components: contrib main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
    assert mirror(tmp_path, debian_sources=text) == "http://mirror.example/debian"


def test_one_line_entries_with_options_and_comments(tmp_path):
    text = """# deb http://commented.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] https://docker.example/linux/debian bookworm stable
deb http://mirror.example/debian-security bookworm-security main
deb-src http://src.example/debian bookworm main
deb [signed-by=/usr/share/keyrings/a.gpg] https://mirror.example/debian bookworm main # note
"""
    assert mirror(tmp_path, text) == "https://mirror.example/debian"


def test_sources_list_comes_before_the_parts_and_disabled_files_are_not_read(tmp_path):
    assert mirror(tmp_path, "deb http://first.example/debian trixie main\n",
                  other_list="deb http://second.example/debian trixie main\n",
                  debian_sources_disabled="Types: deb\nURIs: http://x.example/debian\n"
                                          "Suites: trixie\nComponents: main\n") == \
        "http://first.example/debian"


def test_no_debian_archive_is_a_clear_failure(tmp_path):
    message = mirror(tmp_path, "deb http://mirror.example/debian-security trixie-security main\n")
    assert "no enabled 'deb' entry of a Debian release with 'main'" in message


def test_the_ci_scripts_name_no_host():
    """The build scripts take their sources from the machine's configuration, not a URL."""
    folder = os.path.join(ROOT, ".ci")
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            assert "://" not in f.read(), name


def _pip_install_script():
    """.ci/pip-install's functions (run from its source: an import would leave bytecode in
    .ci/, which holds scripts only)."""
    path = os.path.join(ROOT, ".ci", "pip-install")
    namespace = {"__name__": "pip_install"}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), namespace)
    return namespace


def test_pip_install_hands_uv_pips_settings_or_leaves_the_install_to_pip():
    uv_environment = _pip_install_script()["uv_environment"]
    environment = uv_environment({
        "extra-index-url": "/srv/simple /srv/more", "find-links": "/opt/a\n/opt/b",
        "constraint": "/etc/c.txt", "disable-pip-version-check": "1"})
    assert environment == {"UV_INDEX_STRATEGY": "unsafe-best-match", "UV_COMPILE_BYTECODE": "1",
                           "UV_EXTRA_INDEX_URL": "/srv/simple /srv/more",
                           "UV_FIND_LINKS": "/opt/a,/opt/b", "UV_CONSTRAINT": "/etc/c.txt"}
    assert uv_environment({"require-hashes": "1"}) is None
