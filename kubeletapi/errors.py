"""The one error vocabulary of kubeletapi.

Every layer raises these; the HTTP layer maps them to status codes in one place
(server/errors.py) and the command line maps StartupError/ConfigError to exit code 1.
"""

from __future__ import annotations


class KubeletError(Exception):
    """Base of every error kubeletapi raises on purpose."""


class NotFound(KubeletError):
    """The named object (pod, container, check, node) does not exist."""


class InvalidInput(KubeletError):
    """A request, manifest or file is malformed; the message says where and why."""


class Unavailable(KubeletError):
    """A dependency (runtime, webhook, cgroup) cannot answer right now."""


class Unauthorized(Unavailable):
    """An API server did not accept the credentials (401): a wrong or expired token or certificate."""


class NotSupported(KubeletError):
    """The operation is valid but this node or runtime does not offer it."""


class Conflict(KubeletError):
    """The request conflicts with existing state (a duplicate pod, a port in use)."""


class Forbidden(KubeletError):
    """An API server refused the request by its authorization (403); the message names the object."""


class Gone(KubeletError):
    """An API server no longer has the requested version (410): a watch must list afresh."""


class NetworkError(KubeletError):
    """A network plugin (CNI) could not set up, check or tear down a pod's network; the message
    names the plugin, the operation and the plugin's own error."""


class ConfigError(InvalidInput):
    """The configuration (flags or --config file) is invalid: start-up stops with exit code 1."""


class StartupError(KubeletError):
    """Start-up cannot proceed (port in use, unreadable certificate): exit code 1."""
