"""The API against its own OpenAPI schema (capability `intake`): schemathesis generates
requests, valid and invalid, for every operation and checks every answer."""

from __future__ import annotations

import httpx
import hypothesis
import hypothesis.errors
import pytest
import schemathesis
import trio
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.transport.requests import ManagedCookiesSession

from tests.helpers.api_clients import (
    transcribe,
    uploaded,
)
from transcriber.db.database import Database
from transcriber.owners import NewOwner


def intake(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("intake", title)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
OPENAI_CHECKS = [c for c in CHECKS if c is not not_a_server_error]

# Bounded, and the same examples every run, so CI is repeatable and quick: 12 examples of
# each operation and mode, about 800 requests (20 cost 30 s more of a test run at its limit).
SETTINGS = hypothesis.settings(
    max_examples=12,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    suppress_health_check=list(hypothesis.HealthCheck),
)


def fuzz(base_url: str, token: str, recording_id: str) -> tuple[int, list[str]]:
    """Run every operation's examples (in a thread: schemathesis calls synchronously);
    returns how many requests went out and the problems found."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    auth = {"Authorization": f"Bearer {token}"}
    sent = 0
    problems: list[str] = []
    # One session for every request (its cookies dropped after each, as schemathesis
    # does for a session of its own): kept-alive connections, not one per request.
    session = ManagedCookiesSession()
    for result in schema.get_all_operations():
        operation = result.ok()
        # Generated ids only ever miss; the real one reaches the answers of a record.
        ids: list[dict[str, str]] = [{}]
        # Not the record's own DELETE: the real record must outlive the run for the
        # operations after it (tests/integration/test_deletion.py deletes real ones).
        if "{recording_id}" in operation.path and (operation.method.upper(), operation.path) != (
            "DELETE",
            "/v1/recordings/{recording_id}",
        ):
            ids.append({"recording_id": recording_id})
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            for path_parameters in ids:
                strategy = operation.as_strategy(
                    generation_mode=mode, path_parameters=path_parameters or None
                )

                @SETTINGS
                @hypothesis.given(case=strategy)
                def check(case: schemathesis.Case) -> None:
                    nonlocal sent
                    response = case.call(
                        base_url=base_url, session=session, headers=auth, timeout=30
                    )
                    sent += 1
                    # (check() runs within this iteration: it sees its own operation.)
                    if operation.path.startswith("/v1/audio/"):  # noqa: B023
                        # No worker runs here: an audio request the OpenAI-compatible
                        # endpoint accepts waits in vain and answers 504, by design.
                        case.validate_response(response, checks=OPENAI_CHECKS, headers=auth)
                        assert response.status_code < 500 or (
                            response.status_code == 504
                            and response.json()["error"]["code"] == "still_working"
                        )
                        return
                    case.validate_response(response, checks=CHECKS, headers=auth)

                try:
                    check()
                except hypothesis.errors.Unsatisfiable:
                    pass  # no invalid request exists (GET /healthz takes nothing)
                except (Exception, BaseExceptionGroup) as e:  # all reported
                    problems.append(
                        f"{operation.label} ({mode.value}, "
                        f"{'real id' if path_parameters else 'any id'}): {e}"
                    )
    session.close()
    return sent, problems


@intake("The API keeps to its published schema")
async def test_the_api_keeps_to_its_schema(
    db: Database, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribe(db)
    with trio.fail_after(120):
        sent, problems = await trio.to_thread.run_sync(fuzz, base_url, ann.token, rid)
    assert problems == [], "\n\n".join(problems)
    assert sent >= 200  # the run really exercised the API
    # The real record was reached, not only missed ids: it is still there and whole.
    assert (await as_ann.get(f"/v1/recordings/{rid}")).json()["done"] is True
