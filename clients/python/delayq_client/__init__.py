"""delayq_client: a Python client of delayq, built only from the published protocol
(protocol/manifest.json and protocol/scripts/*.lua)."""

from .protocol import Protocol, ProtocolError
from .queue import Queue
from .worker import Job, Worker

__all__ = ["Job", "Protocol", "ProtocolError", "Queue", "Worker"]
