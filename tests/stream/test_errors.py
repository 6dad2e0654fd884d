"""The error hierarchy: the drawn tree is the real one, mappings, and no secret leaks."""

from __future__ import annotations

import re

import httpx2
import pytest

import sdk._errors as errors
from sdk._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ContextOverflowError,
    InternalServerError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    RequestTooLargeError,
    SDKError,
    api_error_from_body,
    error_class_for_status,
    error_class_for_type,
    error_from_transport,
    redact,
)


def _public_classes() -> dict[str, type]:
    import importlib

    found: dict[str, type] = {}
    for name in (
        "sdk._errors",
        "sdk",
        "sdk.session",
        "sdk.chunking",
        "sdk.scheduler",
        "sdk.server",
        "sdk.tokens",
    ):
        mod = importlib.import_module(name)
        for attr in getattr(mod, "__all__", ()):
            obj = getattr(mod, attr)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                found[attr] = obj
    return found


def test_docstring_tree_matches_the_classes() -> None:
    """The tree drawn in sdk/_errors.py is the classes' real hierarchy (each drawn under
    its first base), and draws every error class of the module."""
    doc = errors.__doc__ or ""
    classes = _public_classes()
    parents: list[tuple[int, type]] = []
    seen = set()
    for line in doc.splitlines():
        m = re.match(r"^(\s*(?:[│ ]*)(?:[├└]── )?)([A-Z][A-Za-z]+)\b", line)
        if not m or m.group(2) not in classes:
            continue
        depth = len(m.group(1))
        cls = classes[m.group(2)]
        while parents and parents[-1][0] >= depth:
            parents.pop()
        if parents:
            assert cls.__bases__[0] is parents[-1][1], (
                f"{cls.__name__} is drawn under {parents[-1][1].__name__}"
            )
        parents.append((depth, cls))
        seen.add(cls)
    declared = {getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)}
    assert declared <= seen


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (413, RequestTooLargeError),
        (429, RateLimitError),
        (500, InternalServerError),
        (503, InternalServerError),
        (529, OverloadedError),
        (418, APIError),
    ],
)
def test_status_mapping(status: int, cls: type[APIError]) -> None:
    assert error_class_for_status(status) is cls
    err = api_error_from_body(b"<html>nope</html>", status=status, request_id="req_1")
    assert type(err) is cls and err.status == status and err.request_id == "req_1"


def test_type_wins_over_status_and_overflow_is_detected() -> None:
    assert error_class_for_type("overloaded_error") is OverloadedError
    assert error_class_for_type("no_such_type") is None
    body = {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": "r",
    }
    err = api_error_from_body(body, status=200)
    assert type(err) is OverloadedError and err.request_id == "r" and err.message == "Overloaded"
    long = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    assert type(api_error_from_body(long, status=400)) is ContextOverflowError
    oai = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    assert type(api_error_from_body(oai, status=400)) is ContextOverflowError
    terse = {
        "error": {"message": "too big", "type": "invalid_request_error", "code": "context_length_exceeded"}
    }
    assert type(api_error_from_body(terse, status=400)) is ContextOverflowError
    vllm = {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens.",
        "type": "BadRequestError",
        "code": 400,
    }
    assert type(api_error_from_body(vllm, status=400)) is ContextOverflowError
    llama = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size",
            "type": "exceed_context_size_error",
        }
    }
    assert type(api_error_from_body(llama, status=400)) is ContextOverflowError
    other = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: must be positive"},
    }
    assert type(api_error_from_body(other, status=400)) is BadRequestError


def test_an_engine_500_for_input_its_model_does_not_take_is_a_bad_request() -> None:
    """llama-server answers an image for a model without its projector with a 500: the
    request can never succeed, so it is a BadRequestError (not retried by clients that
    see the scheduling server's 400 for it); another 500 stays a server error."""
    hint = "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"
    llama = {"error": {"code": 500, "message": hint, "type": "server_error"}}
    err = api_error_from_body(llama, status=500)
    assert type(err) is BadRequestError and err.status == 500
    audio = {"error": {"code": 500, "message": "audio input is not supported", "type": "server_error"}}
    assert type(api_error_from_body(audio, status=500)) is BadRequestError
    other = {"error": {"code": 500, "message": "the slot crashed", "type": "server_error"}}
    assert type(api_error_from_body(other, status=500)) is not BadRequestError


def test_api_keys_never_appear() -> None:
    key = "sk-ant-api03-SECRETSECRETSECRET_xyz-123"
    body = {
        "error": {"type": "authentication_error", "message": f"invalid x-api-key: {key}"},
        "echo": {"authorization": f"Bearer {key}"},
    }
    err = api_error_from_body(body, status=401)
    assert isinstance(err, AuthenticationError)
    for text in (str(err), repr(err), err.message, repr(err.body), repr(err.args)):
        assert "SECRET" not in text, text
    assert "SECRET" not in redact(f"Authorization: Bearer {key} and api_key={key} and sk-proj-ABCDEFGHIJ")
    conn = APIConnectionError(f"failed with key {key}")
    assert "SECRET" not in str(conn) + repr(conn)


def test_transport_errors_translate_in_one_place() -> None:
    req = httpx2.Request("GET", "http://x")
    assert isinstance(error_from_transport(httpx2.ReadTimeout("slow", request=req)), APITimeoutError)
    assert (
        type(error_from_transport(httpx2.RemoteProtocolError("peer closed", request=req)))
        is APIConnectionError
    )
    assert type(error_from_transport(ConnectionResetError())) is APIConnectionError
    assert error_from_transport(ValueError("not transport")) is None
    same = SDKError("x")
    assert error_from_transport(same) is same
