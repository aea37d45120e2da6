"""Copies delayq's published protocol into the package as it is built: the manifest and the
scripts are generated beside the Node library (../../protocol, `npm run protocol`), and an
installed client finds them in delayq_client/protocol/ (protocol.find_manifest looks there
first). Everything else is in pyproject.toml."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# $DELAYQ_PROTOCOL builds from a copy of this directory elsewhere (the packaging test does).
PROTOCOL = os.environ.get("DELAYQ_PROTOCOL") or os.path.normpath(os.path.join(HERE, "..", "..", "protocol"))


class BuildWithProtocol(build_py):
    def run(self):
        super().run()
        if not os.path.isfile(os.path.join(PROTOCOL, "manifest.json")):
            raise SystemExit("delayq-client: %s/manifest.json not found: build from a delayq checkout" % PROTOCOL)
        target = os.path.join(self.build_lib, "delayq_client", "protocol")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(PROTOCOL, target, ignore=shutil.ignore_patterns("*.md"))


setup(cmdclass={"build_py": BuildWithProtocol})
