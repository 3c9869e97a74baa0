"""structlog set-up: JSON lines (console renderer on a TTY), with the correlation id bound per event."""

from __future__ import annotations

import logging
import logging.config
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog
from structlog.contextvars import bind_contextvars, bound_contextvars, merge_contextvars


def configure_logging(service: str, *, level: str = "info", fmt: str = "auto") -> None:
    use_console = _use_console(fmt)
    structlog.configure(
        processors=[*_SHARED, structlog.processors.StackInfoRenderer(), structlog.processors.format_exc_info,
                    _renderer(use_console)],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    bind_contextvars(service=service)
    _process["service"] = service
    logging.config.dictConfig(stdlib_logging_config(level, fmt))


def _use_console(fmt: str) -> bool:
    return fmt == "console" or (fmt == "auto" and sys.stderr.isatty())


# The service this process runs: on every line, also those logged from a library's callbacks, which do not run in
# the context the service name is bound in.
_process: dict[str, str] = {}


def _add_service(_logger: object, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    if "service" in _process:
        event_dict.setdefault("service", _process["service"])
    return event_dict


# What every line carries, Ballast's own and the libraries' alike.
_SHARED = [merge_contextvars, _add_service, structlog.processors.add_log_level,
           structlog.processors.TimeStamper(fmt="iso", utc=True)]


def _renderer(use_console: bool) -> structlog.typing.Processor:
    return structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()


def stdlib_logging_config(level: str = "info", fmt: str = "json") -> dict[str, Any]:
    """Libraries (faust, aiokafka, aiohttp, httpx) log through stdlib logging: their records become the same JSON
    lines as Ballast's own (the service, level, timestamp, the logger's name, a traceback as one field), at WARNING
    unless asked for debug. Faust's worker takes this too, instead of its own coloured plain-text format."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"structlog": {
            "()": structlog.stdlib.ProcessorFormatter,
            "foreign_pre_chain": [*_SHARED, structlog.stdlib.add_logger_name,
                                  structlog.processors.format_exc_info],
            "processors": [structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                           _renderer(_use_console(fmt))],
        }},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": sys.stderr, "formatter": "structlog"}},
        "root": {"level": "DEBUG" if level == "debug" else "WARNING", "handlers": ["stderr"]},
    }


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
