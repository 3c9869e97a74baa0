"""structlog set-up: JSON lines (console renderer on a TTY), with the correlation id bound per event."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from structlog.contextvars import bind_contextvars, bound_contextvars, merge_contextvars


def configure_logging(service: str, *, level: str = "info", fmt: str = "auto") -> None:
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer = structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    bind_contextvars(service=service)
    # Libraries (faust, aiokafka, httpx) log through stdlib logging; keep them quiet unless asked.
    logging.basicConfig(level=logging.WARNING if level != "debug" else logging.DEBUG, stream=sys.stderr)


NOISY_LIBRARIES = ("aiokafka", "faust", "mode", "httpx", "httpcore", "asyncio")


def quiet_libraries(level: int = logging.WARNING) -> None:
    """Libraries log through stdlib logging at DEBUG once faust's worker has configured logging; aiokafka alone
    then builds a debug record for every message sent (8% of a busy service's CPU). Keep them at WARNING."""
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(level)


@contextmanager
def correlation(correlation_id: str | None, **more: object) -> Iterator[None]:
    """Bind the correlation id (and more context) to every log line inside the block."""
    with bound_contextvars(correlation_id=correlation_id, **more):
        yield


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)
