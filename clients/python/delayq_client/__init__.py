"""delayq_client: a Python client of delayq, built only from the published protocol
(protocol/manifest.json and protocol/scripts/*.lua)."""

from .protocol import Protocol, ProtocolError
from .queue import Queue
from .validate import TooCostlyError
from .worker import Job, Worker

__all__ = ["Job", "Protocol", "ProtocolError", "Queue", "TooCostlyError", "Worker"]
