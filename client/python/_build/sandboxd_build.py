"""A minimal PEP 517 / PEP 660 build backend for the sandboxd package, standard library only.

pip builds the wheel with it offline (no setuptools to download): it zips the sandboxd/
package with the metadata that pyproject.toml states. Only what this one package needs.
"""
import base64
import hashlib
import os
import zipfile

NAME = "sandboxd"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"
SCRIPTS = {"sandboxd-mcp": "sandboxd.mcp:main"}


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Client for sandboxd (sync and asyncio, MCP server)\n"
            "Requires-Python: >=3.9\nLicense: MIT\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, VERSION, readme))


def _dist_info_files():
    di = "%s-%s.dist-info" % (NAME, VERSION)
    entry = "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in SCRIPTS.items())
    wheel = "Wheel-Version: 1.0\nGenerator: sandboxd_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG
    return di, {di + "/METADATA": _metadata(), di + "/WHEEL": wheel,
                di + "/entry_points.txt": entry}


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (name, digest, len(data))


def _write_wheel(wheel_directory, files):
    fname = "%s-%s-%s.whl" % (NAME, VERSION, TAG)
    di, meta = _dist_info_files()
    files = dict(files)
    files.update({k: v.encode() for k, v in meta.items()})
    record = "".join(_record_line(n, d) for n, d in sorted(files.items()))
    record += di + "/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(wheel_directory, fname), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in sorted(files.items()):
            z.writestr(n, d)
        z.writestr(di + "/RECORD", record)
    return fname


def _package_files():
    out = {}
    pkg = os.path.join(HERE, NAME)
    for root, dirs, names in os.walk(pkg):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in names:
            if n.endswith((".py", ".typed")):
                path = os.path.join(root, n)
                with open(path, "rb") as f:
                    out[os.path.relpath(path, HERE).replace(os.sep, "/")] = f.read()
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The source tree on sys.path through a .pth file."""
    return _write_wheel(wheel_directory, {"%s.pth" % NAME: (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    import tarfile
    base = "%s-%s" % (NAME, VERSION)
    fname = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, fname), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/sandboxd_build.py"] + \
                sorted(_package_files()):
            t.add(os.path.join(HERE, rel), arcname=base + "/" + rel)
    return fname
