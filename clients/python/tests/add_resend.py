"""add_resend.py PROXY_URL DIRECT_URL QUEUE [debounce]: one add through a proxy that swallows its reply and
cuts the connection; the client re-sends it once with the same request id. Prints the answer and
the request id of every send. With `debounce`, the add starts a debounce burst (key 'doc')."""

import sys

from _common import client, emit

from delayq_client import Queue

direct = Queue(client(sys.argv[2]), sys.argv[3])
direct.protocol.load(direct.redis, ["add"])  # so the first command through the proxy is the add itself
q = Queue(client(sys.argv[1]), sys.argv[3], protocol=direct.protocol)
at = q.protocol.script("add").arg_names.index("request_id")
sends = []
call = q.protocol.call


def counted(redis_client, name, keys, argv):
    sends.append(argv[at])
    return call(redis_client, name, keys, argv)


q.protocol.call = counted
if sys.argv[4:] == ["debounce"]:
    emit(**q.add({"once": True}, id="resent", debounce={"key": "doc", "delay_ms": 60000}), sends=sends)
else:
    emit(**q.add({"once": True}, id="resent", delay_ms=60000), sends=sends)
