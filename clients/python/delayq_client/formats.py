"""Decoders of the stored formats the manifest's `formats` names (JOB_BODY, RUN_STATE, CLAIM_GROUPS),
and the one encoder a producer needs (PACKED_TAIL)."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Union

from .protocol import ProtocolError


def _int(text: Union[str, bytes], what: str) -> int:
    t = text.decode("ascii") if isinstance(text, bytes) else text
    if not t or not (t.isdigit() or (t[0] == "-" and t[1:].isdigit())):
        raise ProtocolError("%s %r is not a whole number" % (what, t))
    return int(t)


def packed_tail(priority: int, max_attempts: Union[int, str], timeout_ms: Union[int, str], name: str, data: str) -> str:
    """PACKED_TAIL, an add's `data` when `item_fields` is 'packed': the job's JOB_BODY from its
    priority on, <priority>:<max attempts or empty>[/<timeout ms>]:<backoff length>:<trace
    length>[/<name length>]:<backoff><trace><name><data>. This client sends no backoff or trace;
    the name's length counts bytes of UTF-8."""
    limits = "%s/%s" % (max_attempts, timeout_ms) if timeout_ms != "" else str(max_attempts)
    if not name:
        return "%d:%s:0:0:%s" % (priority, limits, data)
    return "%d:%s:0:0/%d:%s%s" % (priority, limits, len(name.encode("utf-8")), name, data)


def decode_body(body: Union[str, bytes]) -> Dict[str, Any]:
    """JOB_BODY: <seq>:<created ms>:<priority>:<max attempts or empty>[/<timeout ms>]:<backoff
    length>:<trace length>[/<name length>]:<backoff><trace><name><data>. The lengths count bytes,
    so `body` is bytes. The timeout is only in the body of a job with one of its own, the name's
    length and the name only in a named job's body."""
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogateescape")
    parts = body.split(b":", 6)
    if len(parts) != 7:
        raise ProtocolError("unreadable body header")
    seq, created, priority, max_attempts, blen, tlen, rest = parts
    timeout_ms: Optional[int] = None
    if b"/" in max_attempts:
        max_attempts, timeout = max_attempts.split(b"/", 1)
        timeout_ms = _int(timeout, "timeout")
        if timeout_ms < 1:
            raise ProtocolError("timeout below 1")
    nlen = 0
    if b"/" in tlen:
        tlen, nlen_text = tlen.split(b"/", 1)
        nlen = _int(nlen_text, "name length")
        if nlen < 1:
            raise ProtocolError("name length below 1")
    bl = _int(blen, "backoff length")
    tl = _int(tlen, "trace length")
    if bl < 0 or tl < 0 or bl + tl + nlen > len(rest):
        raise ProtocolError("body lengths past its end")
    name = rest[bl + tl : bl + tl + nlen].decode("utf-8") if nlen else None
    data_text = rest[bl + tl + nlen :].decode("utf-8")
    return {
        "seq": _int(seq, "seq"),
        "created_ms": _int(created, "created ms"),
        "priority": _int(priority, "priority"),
        "max_attempts": _int(max_attempts, "max attempts") if max_attempts else None,
        "timeout_ms": timeout_ms,
        "backoff": rest[:bl].decode("utf-8") or None,
        "trace": rest[bl : bl + tl].decode("utf-8") or None,
        "name": name,
        "data_json": data_text,
    }


def decode_run(run: Union[str, bytes, None]) -> Dict[str, Any]:
    """RUN_STATE: <attempts>[/<max attempts>]:<due ms>:<token>:<started ms>:<worker>:<last error>;
    '' when the job never left scheduled; the short form <due ms> (no colon) for a job promoted to
    ready. The max attempts is there only for a job that went dead out of attempts: the max that
    applied (its own, or the worker's default)."""
    if isinstance(run, bytes):
        run = run.decode("utf-8", "replace")
    none = {"attempts": 0, "max_attempts": None, "due_ms": None, "token": "", "started_ms": None, "worker": "", "last_error": None}
    if not run:
        return none
    if ":" not in run:
        return dict(none, due_ms=_int(run, "due ms"))
    parts = run.split(":", 5)
    if len(parts) != 6:
        raise ProtocolError("unreadable run state")
    attempts, due, token, started, worker, last_error = parts
    max_attempts = None
    if "/" in attempts:
        attempts, max_text = attempts.split("/", 1)
        max_attempts = _int(max_text, "max attempts")
        if max_attempts < 1:
            raise ProtocolError("max attempts below 1")
    return {
        "attempts": _int(attempts, "attempts"),
        "max_attempts": max_attempts,
        "due_ms": _int(due, "due ms") if due else None,
        "token": token,
        "started_ms": _int(started, "started ms") if started else None,
        "worker": worker,
        "last_error": last_error or None,
    }


def decode_claim_groups(text: Optional[str]) -> Dict[int, str]:
    """CLAIM_GROUPS: <job position>\\t<group>\\n… -> {position: group}. Positions count from 1
    (read from claim.lua: the manifest does not say)."""
    out: Dict[int, str] = {}
    for line in (text or "").split("\n"):
        if not line:
            continue
        pos, _, group = line.partition("\t")
        out[_int(pos, "job position")] = group
    return out


def decode_backoff(spec: Optional[str]) -> Optional[Dict[str, Any]]:
    """A job's own backoff: the manifest's JSON form, or the compact f:<ms> / e:<ms>:<max>:<jitter>
    the Node library writes. None when neither reads."""
    if not spec:
        return None
    if spec.startswith("{"):
        try:
            b = json.loads(spec)
        except ValueError:
            return None
        return b if isinstance(b, dict) and b.get("type") in ("fixed", "exponential") else None
    parts = spec.split(":")
    try:
        nums = [int(x) for x in parts[1:]]
    except ValueError:
        return None
    if parts[0] == "f" and len(nums) == 1:
        return {"type": "fixed", "delay": nums[0]}
    if parts[0] == "e" and len(nums) == 3:
        return {"type": "exponential", "delay": nums[0], "maxDelay": nums[1], "jitter": nums[2] == 1}
    return None
