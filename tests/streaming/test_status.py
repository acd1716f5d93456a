"""The error channel's bytes: v4/v5 JSON status (metav1.Status) and v1 plain text."""

from __future__ import annotations

import pytest

from kubeletapi.gofmt import go_list, go_quote
from kubeletapi.streaming import status as st

EXIT_3 = (
    b'{"status":"Failure","message":"command terminated with non-zero exit code: error executing command '
    b'[sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode",'
    b'"message":"3"}]}}'
)


@pytest.mark.parametrize(
    ("status", "json_bytes", "text"),
    [
        pytest.param(st.success(), b'{"status":"Success"}', None, id="success"),
        pytest.param(st.non_zero_exit(["sh", "-c", "exit 3"], 3), EXIT_3,
                     b"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3",
                     id="non-zero-exit"),
        pytest.param(
            st.exec_failed("container is not running"),
            b'{"status":"Failure","message":"Internal error occurred: error executing command in container: '
            b'container is not running","reason":"InternalError","code":500}',
            b"Internal error occurred: error executing command in container: container is not running",
            id="exec-internal-error",
        ),
        pytest.param(
            st.attach_failed("gone"),
            b'{"status":"Failure","message":"Internal error occurred: error attaching to container: gone",'
            b'"reason":"InternalError","code":500}',
            b"Internal error occurred: error attaching to container: gone",
            id="attach-internal-error",
        ),
        pytest.param(
            st.exec_failed("a <b> & c"),
            b'{"status":"Failure","message":"Internal error occurred: error executing command in container: '
            b'a \\u003cb\\u003e \\u0026 c","reason":"InternalError","code":500}',
            b"Internal error occurred: error executing command in container: a <b> & c",
            id="go-json-escapes",
        ),
    ],
)
def test_status_bytes(status: st.Status, json_bytes: bytes, text: bytes | None) -> None:
    assert st.render(status, json_status=True) == json_bytes
    assert st.render(status, json_status=False) == text


def test_exit_code_is_a_decimal_string_in_causes() -> None:
    assert b'"message":"255"' in st.non_zero_exit(["false"], 255).to_json()


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param([], "[]", id="empty"),
        pytest.param(["echo"], "[echo]", id="one"),
        pytest.param(["sh", "-c", "echo a b"], "[sh -c echo a b]", id="spaces-not-quoted"),
    ],
)
def test_go_list(items: list[str], expected: str) -> None:
    assert go_list(items) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("c", '"c"', id="plain"),
        pytest.param('a"b\\', '"a\\"b\\\\"', id="quote-and-backslash"),
        pytest.param("a\tb\n", '"a\\tb\\n"', id="escapes"),
        pytest.param("\x00\x7f", '"\\x00\\x7f"', id="control-bytes"),
        pytest.param("é", '"é"', id="printable-unicode-kept"),
        pytest.param("\u00a0", '"\\u00a0"', id="non-printable-unicode"),
    ],
)
def test_go_quote(text: str, expected: str) -> None:
    assert go_quote(text) == expected
