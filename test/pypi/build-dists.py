"""Builds real, small Python distributions for the fixture Simple index.

Run by test/pypi/fixture-index.ts as `/usr/bin/python3 build-dists.py OUT_DIR`
with a JSON list of distributions on stdin; prints a JSON list describing
each file built. Standard library only (zipfile, tarfile, gzip), so it runs
on a bare Debian python3.

The output is deterministic: the same request gives the same bytes (fixed
timestamps, owners and modes; gzip without a name or mtime), so a test may
pin a digest.

A wheel (PEP 427, binary distribution format) holds one module and
`{dist}-{ver}.dist-info/` with METADATA (core metadata 2.1), WHEEL and
RECORD. An sdist (PEP 625 name, `.tar.gz`) holds `{dist}-{ver}/PKG-INFO`,
a setuptools `setup.py` and the module, so pip can build it offline with
`--no-build-isolation` (Debian's python3-pip depends on python3-setuptools).
"""

import base64
import gzip
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import zipfile

# 1980 is the earliest time a zip entry can carry; any fixed time will do.
FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
FIXED_TAR_MTIME = 1577836800  # 2020-01-01T00:00:00Z


def escaped(name):
    """The distribution name as file names carry it (binary distribution format, "Escaping")."""
    return re.sub(r"[-_.]+", "_", name).lower()


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def core_metadata(spec):
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + spec["project"],
        "Version: " + spec["version"],
        "Summary: fixture distribution " + spec["project"] + " " + spec["version"],
    ]
    if spec.get("requiresPython"):
        lines.append("Requires-Python: " + spec["requiresPython"])
    for requirement in spec.get("requiresDist", []):
        lines.append("Requires-Dist: " + requirement)
    return ("\n".join(lines) + "\n").encode("utf-8")


def module_source(spec):
    return ('"""Fixture module of %s."""\n__version__ = %r\n' % (spec["project"], spec["version"])).encode("utf-8")


def build_wheel(spec):
    dist = escaped(spec["project"])
    version = spec["version"]
    filename = "%s-%s-py3-none-any.whl" % (dist, version)
    info = "%s-%s.dist-info" % (dist, version)
    metadata = core_metadata(spec)
    entries = [
        (dist + ".py", module_source(spec)),
        (info + "/METADATA", metadata),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: build-dists.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = "".join("%s,%s,%d\n" % (path, record_hash(data), len(data)) for path, data in entries)
    record += info + "/RECORD,,\n"
    entries.append((info + "/RECORD", record.encode("utf-8")))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in entries:
            entry = zipfile.ZipInfo(path, date_time=FIXED_ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return filename, buffer.getvalue(), metadata


def build_sdist(spec):
    dist = escaped(spec["project"])
    version = spec["version"]
    root = "%s-%s" % (dist, version)
    filename = root + ".tar.gz"
    metadata = core_metadata(spec)
    setup = (
        "from setuptools import setup\n"
        "setup(name=%r, version=%r, py_modules=[%r], install_requires=%r%s)\n"
        % (
            spec["project"],
            version,
            dist,
            list(spec.get("requiresDist", [])),
            ", python_requires=%r" % spec["requiresPython"] if spec.get("requiresPython") else "",
        )
    ).encode("utf-8")
    entries = [
        (root + "/PKG-INFO", metadata),
        (root + "/setup.py", setup),
        (root + "/" + dist + ".py", module_source(spec)),
    ]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path, data in entries:
            entry = tarfile.TarInfo(path)
            entry.size = len(data)
            entry.mtime = FIXED_TAR_MTIME
            entry.mode = 0o644
            entry.uid = entry.gid = 0
            entry.uname = entry.gname = ""
            archive.addfile(entry, io.BytesIO(data))
    compressed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=0) as gz:
        gz.write(raw.getvalue())
    return filename, compressed.getvalue(), metadata


def main():
    out_dir = sys.argv[1]
    specs = json.load(sys.stdin)
    built = []
    for spec in specs:
        maker = build_wheel if spec["kind"] == "wheel" else build_sdist
        filename, data, metadata = maker(spec)
        path = os.path.join(out_dir, filename)
        with open(path, "wb") as handle:
            handle.write(data)
        built.append({
            "filename": filename,
            "path": path,
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "metadata": metadata.decode("utf-8"),
            "metadataSha256": hashlib.sha256(metadata).hexdigest(),
        })
    json.dump(built, sys.stdout)


if __name__ == "__main__":
    main()
