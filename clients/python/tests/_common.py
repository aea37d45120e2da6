"""Shared by the driver scripts test/clients/python-client.test.ts runs: the package on the path,
a client from a URL, one JSON line per result on stdout."""

import json
import os
import sys
import threading

# The source tree's package, unless the test runs the drivers against an installed one.
if not os.environ.get("DELAYQ_CLIENT_INSTALLED"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import redis  # noqa: E402

_out = threading.Lock()


def client(url):
    # A stuck server or proxy fails the call in seconds, never hangs the test.
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def emit(**fields):
    with _out:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()
