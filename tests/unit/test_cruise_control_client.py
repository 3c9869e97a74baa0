"""The client parses every answer recorded from a real Cruise Control, and maps errors to Ballast's taxonomy."""

import json
import re
from pathlib import Path

import httpx
import pytest

from services.adapters.cruise_control import (
    AuthorizationError,
    ClusterModelNotReady,
    ConnectionFailed,
    CruiseControlClient,
    CruiseControlState,
    ErrorResponse,
    OngoingExecution,
    OptimizationResult,
    ProgressResponse,
    RequestRejected,
    ServletFull,
    UserTasks,
    topic_regex,
)
from services.adapters.cruise_control.errors import classify
from services.common.settings import CruiseControlSettings

RECORDED = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cruise-control-recorded"


def _model_for(name: str) -> type:
    if "error" in name or "failure" in name or name == "CC-Broker-not-exist.json":
        return ErrorResponse
    if name.startswith(("CC-User-task", "user-tasks-success")):
        return UserTasks
    if name.startswith("CC-State") and "error" not in name:
        return CruiseControlState
    if name == "CC-Rebalance-no-goals-in-progress.json":
        return ProgressResponse
    if "error" in name or "failure" in name or name == "CC-Broker-not-exist.json":
        return ErrorResponse
    if name == "CC-Stop.json":
        return dict
    return OptimizationResult


RECORDED_FILES = sorted(p.name for p in RECORDED.glob("*.json"))


def test_all_recorded_files_are_covered() -> None:
    assert len(RECORDED_FILES) >= 25


@pytest.mark.parametrize("name", RECORDED_FILES)
def test_parses_recorded_response(name: str) -> None:
    document = json.loads((RECORDED / name).read_text())
    model = _model_for(name)
    if model is dict:
        assert document["message"]
        return
    parsed = model.model_validate(document)
    if isinstance(parsed, UserTasks):
        for task in parsed.user_tasks:
            assert task.user_task_id and task.status
            if task.original_response and task.original_response.startswith("{"):
                assert isinstance(task.original_result(), dict)
    elif isinstance(parsed, ErrorResponse):
        assert parsed.error_message or parsed.stack_trace
        assert classify(500, parsed.error_message).message
    elif isinstance(parsed, OptimizationResult):
        assert parsed.summary.num_replica_movements >= 0
    elif isinstance(parsed, CruiseControlState):
        assert parsed.executor is not None and parsed.executor.state


def test_recorded_not_enough_valid_windows_is_cluster_model_not_ready() -> None:
    body = json.loads((RECORDED / "CC-Rebalance-NotEnoughValidWindows-error.json").read_text())
    error = classify(500, body["errorMessage"])
    assert isinstance(error, ClusterModelNotReady)
    assert error.message == "Cluster model not ready"
    assert error.temporary


@pytest.mark.parametrize(
    ("status", "text", "kind"),
    [
        (401, "", AuthorizationError),
        (500, "x: There are already 5 active user tasks, which has reached the servlet capacity.", ServletFull),
        (500, "c.l.OngoingExecutionException: Cannot execute new proposals while there is an ongoing execution.",
         OngoingExecution),
        (500, "Error processing POST request '/topic_configuration' due to: 'a.b.KafkaCruiseControlException: "
              "java.lang.RuntimeException: Requested RF cannot be more than number of alive brokers.'.", RequestRejected),
    ],
)
def test_error_taxonomy(status: int, text: str, kind: type) -> None:
    assert isinstance(classify(status, text), kind)


def test_rejected_message_keeps_the_cause() -> None:
    text = ("Error processing POST request '/topic_configuration' due to: 'com.x.KafkaCruiseControlException: "
            "java.lang.RuntimeException: Unable to change replication factor (RF) of topics [t] to 5 since there are "
            "only 3 alive brokers in the cluster. Requested RF cannot be more than number of alive brokers.'.")
    message = classify(500, text).message
    assert message.startswith("Request failed (500), Unable to change replication factor")
    assert message.endswith("Requested RF cannot be more than number of alive brokers.")


def test_topic_regex_matches_exactly_the_named_topics() -> None:
    regex = topic_regex(["a.c", "x-y", "b_z", "dots.and-dashes"])
    pattern = re.compile(regex)
    for name in ("a.c", "x-y", "b_z", "dots.and-dashes"):
        assert pattern.fullmatch(name)
    for name in ("abc", "a.cc", "xzy", "dotsXand-dashes", "a.c|abc"):
        assert not pattern.fullmatch(name)
    assert regex == r"a\.c|b_z|dots\.and\-dashes|x\-y"


async def test_topic_configuration_request_shape() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = json.loads((RECORDED / "topic-config-success.json").read_text())
        return httpx.Response(200, json=body, headers={"User-Task-ID": "task-1"})

    settings = CruiseControlSettings(port=1234, rack_enabled=False, auth_enabled=True, username="u", password="p")
    async with CruiseControlClient(settings, transport=httpx.MockTransport(handler)) as client:
        submission = await client.topic_configuration({3: ["t2"], 2: ["t1", "t3"]}, reason="batch-9")
    assert submission.task_id == "task-1" and not submission.in_progress
    request = seen[0]
    assert request.method == "POST"
    assert request.url.path == "/kafkacruisecontrol/topic_configuration"
    assert request.url.params["dryrun"] == "false"
    assert request.url.params["skip_rack_awareness_check"] == "true"
    assert request.url.params["json"] == "true"
    assert request.url.params["reason"] == "batch-9"
    assert request.headers["authorization"].startswith("Basic ")
    assert json.loads(request.content) == {
        "replication_factor": {"topic_by_replication_factor": {"2": "t1|t3", "3": "t2"}}}


async def test_202_returns_task_id_in_progress() -> None:
    body = json.loads((RECORDED / "CC-Rebalance-no-goals-in-progress.json").read_text())
    transport = httpx.MockTransport(lambda r: httpx.Response(202, json=body, headers={"User-Task-ID": "t"}))
    async with CruiseControlClient(CruiseControlSettings(), transport=transport) as client:
        submission = await client.topic_configuration({2: ["a"]})
    assert submission.in_progress and submission.result is None and submission.task_id == "t"


async def test_a_task_answered_202_is_followed_by_the_same_request_naming_it() -> None:
    seen: list[httpx.Request] = []
    done = json.loads((RECORDED / "topic-config-success.json").read_text())
    computing = json.loads((RECORDED / "CC-Rebalance-no-goals-in-progress.json").read_text())

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, body = (202, computing) if len(seen) < 3 else (200, done)
        return httpx.Response(status, json=body, headers={"User-Task-ID": "t-1"})

    async with CruiseControlClient(CruiseControlSettings(), service="replicas-change",
                                   transport=httpx.MockTransport(handler)) as client:
        assert (await client.topic_configuration({2: ["a"]}, reason="batch-1")).in_progress
        assert client.computing == ["t-1"] and not client.can_ask_now
        assert (await client.follow("t-1")).in_progress
        assert not (await client.follow("t-1")).in_progress
        assert client.computing == []
    first, *follows = seen
    assert "user-task-id" not in first.headers
    for again in follows:
        assert again.headers["user-task-id"] == "t-1"
        assert (again.url, again.content) == (first.url, first.content)


async def test_connection_refused_is_connection_failed() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with CruiseControlClient(CruiseControlSettings(), transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(ConnectionFailed, match="Connection failed"):
            await client.user_tasks(["x"])


def test_every_error_says_once_whether_it_is_temporary() -> None:
    import services.adapters.cruise_control.errors as errors

    def concrete(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in [sub, *concrete(sub)]]

    kinds = concrete(errors.CruiseControlError)
    assert {k.__name__ for k in kinds} >= {"RequestRejected", "MalformedAnswer", "ConnectionFailed", "StillComputing"}
    assert not [k.__name__ for k in kinds if "temporary" not in vars(k)], "each class decides, none inherits it"
    assert [k.__name__ for k in kinds if not k.temporary] == ["RequestRejected", "MalformedAnswer"]


@pytest.mark.parametrize(("answer", "says"), [
    (httpx.Response(200, json={"summary": {}}), "sent no User-Task-ID header"),  # accepted, but which task?
    (httpx.Response(200, text="<html>proxy</html>", headers={"User-Task-ID": "t"}), "unexpected answer"),
    (httpx.Response(200, json={"loadAfterOptimization": "not a list"}, headers={"User-Task-ID": "t"}),
     "unexpected answer"),
])
async def test_an_answer_that_cannot_be_read_is_a_permanent_malformed_answer(answer: httpx.Response,
                                                                              says: str) -> None:
    from services.adapters.cruise_control import MalformedAnswer

    async with CruiseControlClient(CruiseControlSettings(), transport=httpx.MockTransport(lambda r: answer)) as client:
        with pytest.raises(MalformedAnswer, match=says) as raised:
            await client.topic_configuration({2: ["a"]})
    assert not raised.value.temporary


def test_credentials_from_files(tmp_path: Path) -> None:
    (tmp_path / "user").write_text("topic-operator\n")
    (tmp_path / "pass").write_text("s3cret\n")
    settings = CruiseControlSettings(auth_enabled=True, username_file=tmp_path / "user",
                                     password_file=tmp_path / "pass")
    assert settings.username == "topic-operator"
    assert settings.password is not None and settings.password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)


def test_auth_without_credentials_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="auth_enabled needs username and password"):
        CruiseControlSettings(auth_enabled=True)
