"""JSON logs, one object per line, with the request id. Log ids and sizes, never data values."""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) +
               f".{int(record.msecs):03d}Z", "level": record.levelname, "logger": record.name,
               "msg": record.getMessage()}
        rid = request_id_var.get()
        if rid:
            out["request_id"] = rid
        for key in ("method", "path", "status", "duration_ms", "tenant", "key_id"):
            if hasattr(record, key):
                out[key] = getattr(record, key)
        if record.exc_info and record.exc_info[0] is not None:
            # The type and where it was raised, never the message: messages may hold data.
            out["exception"] = record.exc_info[0].__name__
            tb = record.exc_info[2]
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            if tb is not None:
                out["at"] = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        return json.dumps(out)


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("uvicorn.access",):
        logging.getLogger(noisy).disabled = True
