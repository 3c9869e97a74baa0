"""What a service's libraries log is in the service's JSON lines (issue 18, defect 7), also once faust's worker has
set up logging (mode's setup_logging, with the configuration `ballast run` gives the worker)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.patience import WAIT_S

SERVICE = """
import logging
from mode.utils.logging import setup_logging
from services.common.logging import configure_logging, get_logger, stdlib_logging_config

configure_logging("replicas-change", fmt="json")
get_logger().info("before the worker")
setup_logging(loglevel="warning", logging_config=stdlib_logging_config("info", "json"))  # what the worker does
try:
    raise ConnectionError("Connect call failed")
except ConnectionError:
    logging.getLogger("aiokafka").error("Unable connect to node with id %s", 111, exc_info=True)
logging.getLogger("aiokafka").info("below WARNING: not shown")
logging.getLogger("faust.transport").warning("Timer overlapping")
get_logger().info("after the worker")
"""


def test_library_records_are_json_lines_with_the_service() -> None:
    done = subprocess.run([sys.executable, "-c", SERVICE], capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines()]  # every line is one JSON object
    assert [line["event"] for line in lines] == ["before the worker", "Unable connect to node with id 111",
                                                 "Timer overlapping", "after the worker"]
    assert all(line["service"] == "replicas-change" and line["timestamp"] for line in lines)
    failed = lines[1]
    assert failed["logger"] == "aiokafka" and failed["level"] == "error"
    assert "ConnectionError: Connect call failed" in failed["exception"]
    assert lines[2]["logger"] == "faust.transport" and lines[2]["level"] == "warning"
