"""Copies delayq's published protocol into the package as it is built, so an installed client
finds it in delayq_client/protocol/ (protocol.find_manifest looks there first). The manifest is
kept in git beside the Node library (../../protocol/manifest.json); the scripts are not: the
Node build writes them (../../protocol/scripts/, `npm run build` in the repository root), so a
fresh clone builds that first. Everything else is in pyproject.toml."""

import json
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# $DELAYQ_PROTOCOL builds from a copy of this directory elsewhere (the packaging test does).
PROTOCOL = os.environ.get("DELAYQ_PROTOCOL") or os.path.normpath(os.path.join(HERE, "..", "..", "protocol"))
BUILD_FIRST = "run `npm ci && npm run build` in the delayq repository root first (it writes protocol/scripts/)"


def check_protocol(root):
    """Fails the build, saying what to do, unless `root` has the manifest and every script it
    names, each generated for the manifest's protocol and package version."""
    manifest_path = os.path.join(root, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise SystemExit("delayq-client: %s not found: build from a delayq checkout" % manifest_path)
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    for name, entry in sorted(manifest["scripts"].items()):
        path = os.path.join(root, entry["file"])
        if not os.path.isfile(path):
            raise SystemExit(
                "delayq-client: %s not found: the scripts are generated, not kept in git: %s" % (path, BUILD_FIRST)
            )
        # The header's first line: `--[[ delayq protocol <n> · <name> (delayq <version>) · …`.
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        made_for = "delayq protocol %s · %s (delayq %s)" % (manifest["protocol"], name, manifest["package"]["version"])
        if made_for not in first:
            raise SystemExit("delayq-client: %s was not generated for this manifest (%s): %s" % (path, made_for, BUILD_FIRST))


class BuildWithProtocol(build_py):
    def run(self):
        check_protocol(PROTOCOL)
        super().run()
        target = os.path.join(self.build_lib, "delayq_client", "protocol")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(PROTOCOL, target, ignore=shutil.ignore_patterns("*.md"))


setup(cmdclass={"build_py": BuildWithProtocol})
