"""Value formats of k8s.io/apimachinery/pkg/util/validation: each check returns its messages.

An empty list means the value is valid; the message texts (regex hints included) are
apimachinery's, because users compare them with what the API server says.
"""

from __future__ import annotations

import re


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_RE, _SUBDOMAIN_RE = re.compile(f"^{_LABEL_FMT}$"), re.compile(f"^{_SUBDOMAIN_FMT}$")
_KEY_RE, _VALUE_RE = re.compile(f"^{_KEY_FMT}$"), re.compile(f"^({_KEY_FMT})?$")
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_VALUE_MSG = "a valid label must be an empty string or " + _KEY_MSG.replace("must consist", "consist")


def dns1123_label(value: str) -> list[str]:
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _LABEL_RE.match(value):
        dots = bool(_SUBDOMAIN_RE.match(value))
        errs.append("must not contain dots" if dots else regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    errs = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not _SUBDOMAIN_RE.match(value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def qualified_name(value: str) -> list[str]:
    """IsQualifiedName / IsLabelKey: an optional DNS subdomain prefix and '/', then a name."""
    errs: list[str] = []
    name = value
    if value.count("/") > 1:
        example = regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {example} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if "/" in value:
        prefix, name = value.split("/")
        errs += (
            ["prefix part must be non-empty"] if not prefix else [f"prefix part {m}" for m in dns1123_subdomain(prefix)]
        )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _KEY_RE.match(name):
        errs.append("name part " + regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value(value: str) -> list[str]:
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _VALUE_RE.match(value):
        errs.append(regex_error(_VALUE_MSG, f"({_KEY_FMT})?", "MyValue", "my_value", "12345"))
    return errs


def port_name(value: str) -> list[str]:
    """IsValidPortName: an IANA_SVC_NAME."""
    errs = ["must be no more than 15 characters"] if len(value) > 15 else []
    if not re.fullmatch("[-a-z0-9]+", value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value[:1] == "-" or value[-1:] == "-":
        errs.append("must not begin or end with a hyphen")
    return errs


def env_var_name(value: str) -> list[str]:
    """IsRelaxedEnvVarName: any printable ASCII except '='."""
    errs = ["environment variable name must be non-empty"] if not value else []
    if any(not (" " <= ch <= "~") or ch == "=" for ch in value):
        errs.append("a valid environment variable name must consist only of printable ASCII characters other than '='")
    return errs


def config_key(value: str) -> list[str]:
    errs = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not re.fullmatch("[-._a-zA-Z0-9]+", value):
        msg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
        errs.append(regex_error(msg, "[-._a-zA-Z0-9]+", "key.name", "KEY_NAME", "key-name"))
    if value in (".", ".."):
        errs.append(f"must not be '{value}'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def port_number(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]
