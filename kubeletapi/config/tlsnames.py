"""The kubelet's TLS setting names: tlsCipherSuites (--tls-cipher-suites) and tlsMinVersion (--tls-min-version).

The names are Go's crypto/tls names, as k8s.io/component-base/cli/flag accepts them: every suite of
tls.CipherSuites() and tls.InsecureCipherSuites() (insecure ones are allowed by name, the kubelet
only logs them), the two legacy CHACHA20 names, and VersionTLS10..VersionTLS13. Each suite carries
its IANA id and its OpenSSL name; the table is in Go's server preference order (AES hardware), so
the cipher string built from it prefers suites as Go does whatever order the configuration lists.
TLS 1.3 suites are accepted and not configurable, in Go as in OpenSSL.

tls_problems() is the validation of the two fields (config.validate calls it); server/tls.py turns
the validated values into an SSLContext.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubeletapi.config.problems import Problem, problem


@dataclass(frozen=True)
class CipherSuite:
    go_name: str
    iana_id: int
    openssl_name: str  # "" for TLS 1.3 suites (not configurable)
    insecure: bool = False


# Go's cipherSuitesPreferenceOrder (crypto/tls/cipher_suites.go), then the TLS 1.3 suites.
CIPHER_SUITES: tuple[CipherSuite, ...] = (
    CipherSuite("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 0xC02B, "ECDHE-ECDSA-AES128-GCM-SHA256"),
    CipherSuite("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xC02F, "ECDHE-RSA-AES128-GCM-SHA256"),
    CipherSuite("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", 0xC02C, "ECDHE-ECDSA-AES256-GCM-SHA384"),
    CipherSuite("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 0xC030, "ECDHE-RSA-AES256-GCM-SHA384"),
    CipherSuite("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 0xCCA9, "ECDHE-ECDSA-CHACHA20-POLY1305"),
    CipherSuite("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xCCA8, "ECDHE-RSA-CHACHA20-POLY1305"),
    CipherSuite("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 0xC009, "ECDHE-ECDSA-AES128-SHA"),
    CipherSuite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 0xC013, "ECDHE-RSA-AES128-SHA"),
    CipherSuite("TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", 0xC00A, "ECDHE-ECDSA-AES256-SHA"),
    CipherSuite("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", 0xC014, "ECDHE-RSA-AES256-SHA"),
    CipherSuite("TLS_RSA_WITH_AES_128_GCM_SHA256", 0x009C, "AES128-GCM-SHA256", insecure=True),
    CipherSuite("TLS_RSA_WITH_AES_256_GCM_SHA384", 0x009D, "AES256-GCM-SHA384", insecure=True),
    CipherSuite("TLS_RSA_WITH_AES_128_CBC_SHA", 0x002F, "AES128-SHA", insecure=True),
    CipherSuite("TLS_RSA_WITH_AES_256_CBC_SHA", 0x0035, "AES256-SHA", insecure=True),
    CipherSuite("TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", 0xC012, "ECDHE-RSA-DES-CBC3-SHA", insecure=True),
    CipherSuite("TLS_RSA_WITH_3DES_EDE_CBC_SHA", 0x000A, "DES-CBC3-SHA", insecure=True),
    CipherSuite("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", 0xC023, "ECDHE-ECDSA-AES128-SHA256", insecure=True),
    CipherSuite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", 0xC027, "ECDHE-RSA-AES128-SHA256", insecure=True),
    CipherSuite("TLS_RSA_WITH_AES_128_CBC_SHA256", 0x003C, "AES128-SHA256", insecure=True),
    CipherSuite("TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", 0xC007, "ECDHE-ECDSA-RC4-SHA", insecure=True),
    CipherSuite("TLS_ECDHE_RSA_WITH_RC4_128_SHA", 0xC011, "ECDHE-RSA-RC4-SHA", insecure=True),
    CipherSuite("TLS_RSA_WITH_RC4_128_SHA", 0x0005, "RC4-SHA", insecure=True),
    CipherSuite("TLS_AES_128_GCM_SHA256", 0x1301, ""),
    CipherSuite("TLS_AES_256_GCM_SHA384", 0x1302, ""),
    CipherSuite("TLS_CHACHA20_POLY1305_SHA256", 0x1303, ""),
)
# component-base keeps these names "for backward compatibility" (Go 1.13's spelling).
LEGACY_NAMES = {
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
}
BY_NAME = {s.go_name: s for s in CIPHER_SUITES} | {old: s for s in CIPHER_SUITES
                                                   for old, new in LEGACY_NAMES.items() if s.go_name == new}
# tlsMinVersion -> (major, minor) of the protocol; "" is the kubelet's default, TLS 1.2 here (see tls.py).
TLS_VERSIONS = {"VersionTLS10": (3, 1), "VersionTLS11": (3, 2), "VersionTLS12": (3, 3), "VersionTLS13": (3, 4)}


def suites(names: Sequence[str]) -> list[CipherSuite]:
    """The configured suites in Go's preference order, each once (names already validated)."""
    wanted = {BY_NAME[n].go_name for n in names}
    return [s for s in CIPHER_SUITES if s.go_name in wanted]


def go_defaults() -> list[CipherSuite]:
    """Go's TLS 1.0-1.2 suites when none are configured: its secure ones."""
    return [s for s in CIPHER_SUITES if not s.insecure and s.openssl_name]


def tls_problems(cipher_suites: Sequence[str], min_version: str) -> list[Problem]:
    """What the kubelet refuses at start-up in these two fields, one problem each (empty: valid)."""
    problems = [
        problem("tlsCipherSuites", f"Cipher suite {name} not supported or doesn't exist")
        for name in cipher_suites if name not in BY_NAME
    ]
    if min_version and min_version not in TLS_VERSIONS:
        problems.append(problem("tlsMinVersion", f"unknown tls version {min_version!r}; "
                                f"use one of {', '.join(TLS_VERSIONS)}"))
    return problems
