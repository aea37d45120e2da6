"""Runs delayq's published Lua scripts, knowing nothing but protocol/manifest.json.

KEYS and ARGV are built by name, in the manifest's order; replies are read by the manifest's
reply field names; codes come from the manifest. Nothing here knows a script's positions.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import redis

#: A script's reply as redis-py gives it: nested lists of bytes and ints.
Reply = Any
#: One row of a parsed reply: field name -> str (bytes for the raw fields), or an int.
Row = Dict[str, Any]

PROTOCOL_VERSION = 4


class ProtocolError(RuntimeError):
    """The manifest, a script or a reply is not what this client was built for."""


def find_manifest(path: Optional[str] = None) -> str:
    """The manifest given, else $DELAYQ_PROTOCOL/manifest.json, else ../../../protocol/ from here."""
    if path:
        return path
    env = os.environ.get("DELAYQ_PROTOCOL")
    if env:
        return os.path.join(env, "manifest.json")
    here = os.path.dirname(os.path.abspath(__file__))
    for up in (os.path.join(here, "protocol"), os.path.join(here, "..", "..", "..", "protocol")):
        candidate = os.path.normpath(os.path.join(up, "manifest.json"))
        if os.path.exists(candidate):
            return candidate
    raise ProtocolError("protocol/manifest.json not found: pass manifest_path= or set DELAYQ_PROTOCOL")


class Script:
    """One published script: its source, SHA and the manifest entry that names its KEYS/ARGV."""

    def __init__(self, name: str, entry: Dict[str, Any], source: str) -> None:
        self.name = name
        self.entry = entry
        self.source = source
        self.sha = hashlib.sha1(source.encode("utf-8")).hexdigest()
        self.key_names: List[str] = [k["name"] for k in entry["keys"]]
        self.key_templates: List[str] = [k["key"] for k in entry["keys"]]
        self.arg_names: List[str] = [a["name"] for a in entry["args"]]
        items = entry.get("items")
        self.item_fields: Optional[List[str]] = [f["name"] for f in items["fields"]] if items else None
        reply = entry.get("reply", {})
        self.reply_fields: List[str] = reply.get("fields", [])
        self.reply_each: List[str] = reply.get("each", [])
        self.codes: Dict[str, Any] = entry.get("codes", {})
        self.code_names: Dict[Any, str] = {v: k for k, v in self.codes.items()}

    def code(self, value: Any) -> str:
        """A reply's code by its name in the manifest (the value itself when it has none)."""
        return self.code_names.get(value, value)


class Protocol:
    """The manifest plus its scripts, loaded once."""

    def __init__(self, manifest_path: Optional[str] = None) -> None:
        path = find_manifest(manifest_path)
        with open(path, encoding="utf-8") as f:
            self.manifest: Dict[str, Any] = json.load(f)
        if self.manifest.get("protocol") != PROTOCOL_VERSION:
            raise ProtocolError(
                "manifest protocol %r, this client speaks %d" % (self.manifest.get("protocol"), PROTOCOL_VERSION)
            )
        self.dir = os.path.dirname(path)
        self.not_set_number: int = self.manifest["notSet"]["number"]
        self.not_set_text: str = self.manifest["notSet"]["text"]
        self.formats: Dict[str, str] = self.manifest["formats"]
        self.keys: Dict[str, str] = self.manifest["keys"]
        self._scripts: Dict[str, Script] = {}

    def script(self, name: str) -> Script:
        s = self._scripts.get(name)
        if s is None:
            entry = self.manifest["scripts"].get(name)
            if entry is None:
                raise ProtocolError("the manifest has no script %r" % name)
            with open(os.path.join(self.dir, entry["file"]), encoding="utf-8") as f:
                s = Script(name, entry, f.read())
            self._scripts[name] = s
        return s

    # --- keys -------------------------------------------------------------------------------
    @staticmethod
    def fill(template: str, prefix: str, queue: str, request_id: str = "") -> str:
        """A key template with <prefix>, <queue> and (for memo) <request id> filled in."""
        key = template.replace("<prefix>", prefix).replace("<queue>", queue)
        if "<request id>" in key:
            # "<prefix>:{<queue>}:req:<request id> (any key of the queue when request_id is '')"
            head = key.split("<request id>", 1)[0]
            key = head + request_id if request_id else head.rsplit("req:", 1)[0] + "scheduled"
        return key

    def registry_key(self, prefix: str) -> str:
        # keys.registry: "<prefix>:queues (ZSET first seen ms -> queue name; ZADD NX it ...)"
        return self.keys["registry"].split(" ", 1)[0].replace("<prefix>", prefix)

    def root(self, prefix: str, queue: str) -> str:
        return self.fill(self.keys["root"], prefix, queue)

    def wake_channel(self, prefix: str, queue: str) -> str:
        return self.fill(self.keys["wakeChannel"], prefix, queue)

    # --- calls ------------------------------------------------------------------------------
    def build(
        self,
        name: str,
        prefix: str,
        queue: str,
        args: Mapping[str, Any],
        items: Optional[Sequence[Mapping[str, Any]]] = None,
        request_id: str = "",
        item_fields: Optional[Sequence[str]] = None,
    ) -> Tuple[List[str], List[str]]:
        """KEYS and ARGV for a call, by name. `args` maps ARGV names to values; `items` is a list
        of dicts mapping item field names to values; `item_fields` cuts the item field list
        (add's items end at `trace` when `flow` is '0')."""
        s = self.script(name)
        keys = [self.fill(t, prefix, queue, request_id) for t in s.key_templates]
        values = dict(args)
        values.setdefault("root", self.root(prefix, queue))
        values.setdefault("wake", self.wake_channel(prefix, queue))
        argv = []
        for a in s.arg_names:
            if a not in values:
                raise ProtocolError("%s: no value for argument %r" % (name, a))
            argv.append(_text(values[a]))
        if items:
            if s.item_fields is None:
                raise ProtocolError("%s takes no items" % name)
            fields = item_fields or s.item_fields
            for item in items:
                for fname in fields:
                    if fname not in item:
                        raise ProtocolError("%s: item without field %r" % (name, fname))
                    argv.append(_text(item[fname]))
        return keys, argv

    def call(self, client: Any, name: str, keys: Sequence[str], argv: Sequence[str]) -> Reply:
        """EVALSHA, falling back to EVAL on NOSCRIPT (after a restart or SCRIPT FLUSH)."""
        s = self.script(name)
        try:
            return client.evalsha(s.sha, len(keys), *keys, *argv)
        except redis.exceptions.NoScriptError:
            return client.eval(s.source, len(keys), *keys, *argv)

    async def call_async(self, client: Any, name: str, keys: Sequence[str], argv: Sequence[str]) -> Reply:
        """call() on a redis.asyncio client."""
        s = self.script(name)
        try:
            return await client.evalsha(s.sha, len(keys), *keys, *argv)
        except redis.exceptions.NoScriptError:
            return await client.eval(s.source, len(keys), *keys, *argv)

    def load(self, client: Any, names: Sequence[str]) -> None:
        """SCRIPT LOAD the named scripts (so the first EVALSHA finds them)."""
        for n in names:
            s = self.script(n)
            sha = client.script_load(s.source)
            if _str(sha) != s.sha:
                raise ProtocolError("%s: server SHA %s differs from ours %s" % (n, sha, s.sha))

    def parse(self, name: str, reply: Reply, raw: Sequence[str] = ("body",)) -> Tuple[Row, List[Row]]:
        """A reply as (fields dict, list of per-item dicts), by the manifest's names. Text comes
        back as str, except the names in `raw` (a packed body's lengths count bytes)."""
        s = self.script(name)
        if not isinstance(reply, list):
            raise ProtocolError("%s: reply %r is not an array" % (name, reply))
        nf = len(s.reply_fields)
        if len(reply) < nf:
            raise ProtocolError("%s: reply of %d elements, expected at least %d" % (name, len(reply), nf))
        fields = {f: reply[i] if f in raw else _str(reply[i]) for i, f in enumerate(s.reply_fields)}
        rest = reply[nf:]
        each = s.reply_each
        if each and len(rest) % len(each) != 0:
            raise ProtocolError("%s: %d per-item elements is not a multiple of %d" % (name, len(rest), len(each)))
        rows: List[Row] = []
        for at in range(0, len(rest), len(each) or 1):
            rows.append({f: v if f in raw else _str(v) for f, v in zip(each, rest[at : at + len(each)])})
        return fields, rows


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _str(v: Any) -> Any:
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v
