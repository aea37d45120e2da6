"""flows.py URL QUEUE: flows from Python (docs/flows.md).
  Adds 'child-a', 'child-b' and 'parent' (depends_on both, on_child_failure 'ignore',
  wait_at_most_ms 60000) in one add_bulk, and the flow 'tree' (two children, one with a child of
  its own) with add_flow, twice; refuses a bad depends_on; signals 'waiter' (a Node worker holds
  it waiting for 'payment') and 'nobody'."""

import sys
import time

from _common import client, emit

from delayq_client import Queue

url, queue = sys.argv[1], sys.argv[2]
r = client(url)
q = Queue(r, queue)
added = q.add_bulk(
    [
        {"id": "child-a", "data": {"n": 1}},
        {"id": "child-b", "data": {"n": 2}},
        {"id": "parent", "data": {"n": 3}, "depends_on": ["child-a", "child-b"], "on_child_failure": "ignore", "wait_at_most_ms": 60000},
    ]
)
emit(states=[a["state"] for a in added])
flow = {"data": {"n": 10}, "opts": {"id": "tree"}, "children": [{"data": {"n": 11}}, {"data": {"n": 12}, "children": [{"data": {"n": 13}}]}]}
tree = q.add_flow(flow)
emit(tree=[tree["id"], tree["state"], [(c["id"], c["state"]) for c in tree["children"]], tree["children"][1]["children"][0]["id"]])
again = q.add_flow(flow)
emit(again=[again["result"]] + [c["result"] for c in again["children"]])
for bad in ({"depends_on": []}, {"depends_on": ["x", "x"]}, {"wait_at_most_ms": 5}, {"depends_on": ["nope"]}):
    try:
        q.add({"n": 4}, id="bad", **bad)
        emit(refused=None)
    except Exception as e:  # noqa: BLE001 - a ValueError from the client, or the script's refusal
        emit(refused=str(e))
deadline = time.time() + 10
while (q.get("waiter") or {}).get("state") != "held" and time.time() < deadline:
    time.sleep(0.02)
emit(signalled=q.signal("waiter", "payment", {"paid": True}), nobody=q.signal("nobody", "payment"))
emit(done=True)
