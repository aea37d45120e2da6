"""Checks a call's inputs before anything is sent: a bad one raises ValueError naming the field."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, NoReturn, Optional, Sequence, Set, Tuple, Union

# The Node library's rules (src/options.ts); the manifest does not carry them.
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.:-]{1,50}$")
MAX_PRIORITY = 1000000
MAX_ATTEMPTS = 1000000
MAX_PAYLOAD_BYTES = 512 * 1024
MAX_MS = 2**53 - 1
MAX_DELAY_MS = 10 * 365 * 24 * 3600 * 1000  # a delay, a dedup window, a debounce delay: at most 10 years
MIN_RUN_AT_MS = 978307200000  # 2001-01-01: a run_at before it can only be seconds (src/limits.ts)
MAX_RUN_AT_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
MAX_RESULT_BYTES = 16384  # a kept result larger than this is replaced by a note (src/limits.ts)
MAX_RATE_TOKENS = 1000000  # a job's cost


def fail(field: str, why: str) -> NoReturn:
    raise ValueError("%s %s" % (field, why))


class TooCostlyError(ValueError):
    """An add refused by the script (CODE too_costly): a job's cost is above the max of a rate
    limit that applies to it (the queue's, or its group's). Nothing was written."""


def options(v: Any, field: str, known: Sequence[str], required: Sequence[str] = ()) -> Dict[str, Any]:
    """A dict of only the `known` keys, with every `required` one given (not None)."""
    if not isinstance(v, dict):
        fail(field, "must be a dict with %s (got %s)" % (", ".join(known), type(v).__name__))
    for k in sorted(v, key=str):
        if k not in known:
            fail("%s.%s" % (field, k), "is not part of %s (known: %s)" % (field.rsplit(".", 1)[-1], ", ".join(known)))
    for k in required:
        if v.get(k) is None:
            fail("%s.%s" % (field, k), "must be given")
    return v


def queue_name(v: Any, field: str = "queue name") -> str:
    if not isinstance(v, str) or not _NAME.match(v):
        fail(field, "must be 1-100 characters of A-Z a-z 0-9 _ . : - (got %r)" % (v,))
    return v


def prefix(v: Any, field: str = "prefix") -> str:
    if not isinstance(v, str) or not _PREFIX.match(v):
        fail(field, "must be 1-50 characters of A-Z a-z 0-9 _ . : - (got %r)" % (v,))
    return v


def job_id(v: Any, field: str = "id") -> str:
    """1-256 characters of valid Unicode, no control characters (the manifest's `id` type)."""
    if not isinstance(v, str):
        fail(field, "must be a string (got %s)" % type(v).__name__)
    if not 1 <= len(v) <= 256:
        fail(field, "must be 1-256 characters (got %d)" % len(v))
    for ch in v:
        o = ord(ch)
        if o < 0x20 or 0x7F <= o <= 0x9F:
            fail(field, "must not contain control characters (U+%04X)" % o)
        if 0xD800 <= o <= 0xDFFF:
            fail(field, "must be valid Unicode (a lone surrogate U+%04X)" % o)
    return v


def whole(v: Any, field: str, low: Optional[int] = None, high: Optional[int] = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            fail(field, "must be a whole number (got %r)" % (v,))
    if low is not None and v < low:
        fail(field, ("must not be negative (got %d)" % v) if low == 0 else "must be at least %d (got %d)" % (low, v))
    if high is not None and v > high:
        fail(field, "must be at most %d (got %d)" % (high, v))
    return v


def _ms(v: Any, field: str) -> Union[int, float]:
    """A number of milliseconds as the Node library takes it: any finite number (not a bool),
    fractions rounded up (src/queue.ts Math.ceil)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)):
        fail(field, "must be a number of milliseconds (got %r)" % (v,))
    return v


def when(delay_ms: Any, run_at: Any, field: str = "") -> Tuple[Union[int, str], Union[int, str]]:
    """Exactly one of delay_ms and run_at is sent; neither means now (delay 0). The bounds and
    the rounding are the Node library's (src/options.ts): a delay of 0 to 10 years, a run_at in
    epoch milliseconds from 2001 (a time in seconds is refused, not due in 1970) to 9999."""
    if delay_ms is not None and run_at is not None:
        fail(field + "delay_ms", "and run_at: give one, not both")
    if run_at is not None:
        at = _ms(run_at, field + "run_at")
        if at < MIN_RUN_AT_MS:
            fail(field + "run_at", "must be epoch milliseconds, not seconds: %r is before 2001 "
                 "(use time.time() * 1000 + delay, or multiply seconds by 1000)" % (run_at,))
        if at > MAX_RUN_AT_MS:
            fail(field + "run_at", "must not be after the year 9999 (got %r)" % (run_at,))
        return "", int(math.ceil(at))
    d = _ms(0 if delay_ms is None else delay_ms, field + "delay_ms")
    if d < 0:
        fail(field + "delay_ms", "must not be negative (got %r)" % (delay_ms,))
    if d > MAX_DELAY_MS:
        fail(field + "delay_ms", "must be at most %d ms (10 years) (got %r)" % (MAX_DELAY_MS, delay_ms))
    return int(math.ceil(d)), ""


def _finite(v: Any, seen: Set[int]) -> Any:
    """`v` with every NaN and infinity as None, as JavaScript's JSON.stringify writes them (null);
    a container met again inside itself raises ValueError, as JSON.stringify throws."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (dict, list, tuple)):
        if id(v) in seen:
            raise ValueError("Circular reference detected")
        seen.add(id(v))
        try:
            if isinstance(v, dict):
                return {k: _finite(x, seen) for k, x in v.items()}
            return [_finite(x, seen) for x in v]
        finally:
            seen.discard(id(v))
    return v


def to_json(v: Any) -> str:
    """JSON text as the Node library writes it (JSON.stringify): compact, non-ASCII as it is,
    NaN and infinities as null. Raises TypeError or ValueError for what JSON cannot hold
    (a set, a datetime, a Decimal, a circular list)."""
    try:
        return json.dumps(_finite(v, set()), allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        raise ValueError("nested too deeply")


def payload(data: Any, field: str = "data", max_bytes: int = MAX_PAYLOAD_BYTES) -> str:
    try:
        text = to_json(data)
    except (TypeError, ValueError) as e:
        fail(field, "must be JSON-serializable (%s)" % e)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        fail(field, "must be valid Unicode")
    if size > max_bytes:
        fail(field, "is %d bytes of JSON, over the limit of %d" % (size, max_bytes))
    return text


def flag(v: Any, field: str) -> bool:
    if not isinstance(v, bool):
        fail(field, "must be True or False (got %r)" % (v,))
    return v
