"""The certificate machinery without an API server: the PEM store's layout, CSRs as the signers
want them, the renewal deadline and back-off on a fake clock, and the bootstrap's decisions and
retries. A hand-written API double signs with a CA of its own (as the controller-manager would),
leaves requests pending, denies them or refuses the credentials. tests/cluster/test_bootstrap.py
does the same against the real control plane."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import ipaddress
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from prometheus_client import CollectorRegistry, generate_latest

from kubeletapi.certificate.bootstrap import Bootstrap
from kubeletapi.certificate.csr import (
    CLIENT_SIGNER,
    CLIENT_USAGES,
    CSR_PATH,
    CertificateRefused,
    Template,
    digested_name,
    new_key,
    request_pem,
    submit,
    wait_certificate,
)
from kubeletapi.certificate.manager import CertificateManager, backoff_delays, rotation_deadline
from kubeletapi.certificate.store import KeyPair, PemStore
from kubeletapi.clock import FakeClock
from kubeletapi.errors import Conflict, InvalidInput, NotFound, Unauthorized
from kubeletapi.kubeconfig import ClientConfig, load_kubeconfig
from kubeletapi.kubelet.certificates import serving_template
from kubeletapi.metrics.certificates import ClientCertificateCollector

TEMPLATE = Template("system:node:n1", ("system:nodes",))
Json = dict[str, Any]


class FakeCA:
    """Signs CSRs the way the controller-manager's signer does: notBefore backdated 5 minutes."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-ca")])
        now = dt.datetime.fromtimestamp(clock.now(), dt.UTC)
        self.name = name
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(1)
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.serial = 100

    def sign(self, csr_pem: bytes, lifetime_s: float) -> bytes:
        csr = x509.load_pem_x509_csr(csr_pem)
        now = dt.datetime.fromtimestamp(self.clock.now(), dt.UTC)
        self.serial += 1
        builder = (
            x509.CertificateBuilder()
            .subject_name(csr.subject)
            .issuer_name(self.name)
            .public_key(csr.public_key())
            .serial_number(self.serial)
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(seconds=lifetime_s))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        )
        for ext in csr.extensions:
            builder = builder.add_extension(ext.value, ext.critical)
        return builder.sign(self.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


class FakeCsrApi:
    """The CSR endpoints of an API server; `mode` decides what becomes of a new request."""

    def __init__(self, ca: FakeCA, mode: str = "approve", lifetime_s: float = 3600) -> None:
        self.ca = ca
        self.mode = mode
        self.lifetime_s = lifetime_s
        self.csrs: dict[str, Json] = {}
        self.creates = 0
        self.refuse = 0  # creates to answer 401 first
        self.closed = 0

    async def create(self, path: str, body: Json) -> Json:
        assert path == CSR_PATH
        self.creates += 1
        if self.refuse > 0:
            self.refuse -= 1
            raise Unauthorized(f"POST {path}: 401 Unauthorized")
        meta = body["metadata"]
        name = meta.get("name") or f"csr-{len(self.csrs)}"
        if name in self.csrs:
            raise Conflict(f"POST {path}: 409 already exists")
        csr = {"metadata": {"name": name}, "spec": body["spec"], "status": {}}
        self.csrs[name] = csr
        self.decide(name)
        return csr

    def decide(self, name: str) -> None:
        csr = self.csrs[name]
        if self.mode == "approve":
            cert = self.ca.sign(base64.b64decode(csr["spec"]["request"]), self.lifetime_s)
            csr["status"] = {
                "conditions": [{"type": "Approved", "reason": "AutoApproved"}],
                "certificate": base64.b64encode(cert).decode(),
            }
        elif self.mode == "deny":
            csr["status"] = {"conditions": [{"type": "Denied", "reason": "Nope", "message": "denied by test"}]}

    async def get(self, path: str) -> Json:
        name = path.rsplit("/", 1)[1]
        if name not in self.csrs:
            raise NotFound(path)
        return self.csrs[name]

    async def close(self) -> None:
        self.closed += 1


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


async def drive(clock: FakeClock, until: Callable[[], bool], step: float = 1.0, limit: float = 100_000) -> float:
    """Advance the fake clock `step` at a time until `until()`; the fake seconds it took."""
    spent = 0.0
    while not until():
        if spent > limit:
            raise AssertionError(f"not done after {limit} fake seconds")
        await asyncio.sleep(0.01)
        clock.advance(step)
        spent += step
    return spent


def issued_pair(ca: FakeCA, lifetime_s: float, template: Template = TEMPLATE) -> KeyPair:
    key = new_key()
    return KeyPair.parse(ca.sign(request_pem(key, template), lifetime_s), key, "test")


# --- the PEM store -------------------------------------------------------------------------------
def test_store_writes_timestamped_files_and_moves_the_current_link(tmp_path: Path) -> None:
    clock = FakeClock()
    ca = FakeCA(clock)
    store = PemStore(tmp_path / "pki", "kubelet-client")
    assert store.current() is None
    first = issued_pair(ca, 3600)
    path1 = store.update(first, clock.now())
    clock.advance(2)
    second = issued_pair(ca, 3600)
    path2 = store.update(second, clock.now())
    assert path1 != path2 and path1.exists() and path2.exists()  # old pairs stay, as client-go leaves them
    assert os.readlink(store.current_path) == path2.name  # relative link to the newest
    assert path2.stat().st_mode & 0o777 == 0o600
    current = store.current()
    assert current is not None and current.serial == second.serial
    assert current.key_pem == second.key_pem


def test_store_ignores_a_broken_current_file_and_refuses_a_mismatched_key(tmp_path: Path) -> None:
    store = PemStore(tmp_path, "kubelet-server")
    store.current_path.write_text("not pem")
    assert store.current() is None
    ca = FakeCA(FakeClock())
    pair = issued_pair(ca, 60)
    with pytest.raises(InvalidInput, match="does not match"):
        KeyPair.parse(pair.cert_pem, new_key(), "mixed")


def test_store_names_the_directory_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = PemStore(blocker / "pki", "kubelet-client")
    with pytest.raises(Exception, match=f"cert dir {blocker / 'pki'}: cannot"):
        store.save_pending_key(new_key())


# --- CSRs ----------------------------------------------------------------------------------------
def test_request_carries_the_template_and_the_digested_name_is_stable() -> None:
    key = new_key()
    template = Template("system:node:n1", ("system:nodes",), ("n1",), ())
    csr = x509.load_pem_x509_csr(request_pem(key, template))
    assert csr.subject.rfc4514_string() == "CN=system:node:n1,O=system:nodes"
    assert csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    ) == ["n1"]
    name = digested_name(key, template, CLIENT_USAGES)
    assert name.startswith("node-csr-") and name == digested_name(key, template, CLIENT_USAGES)
    assert name != digested_name(new_key(), template, CLIENT_USAGES)


def test_wait_reports_a_denied_request_with_its_reason() -> None:
    clock = FakeClock()
    api = FakeCsrApi(FakeCA(clock), mode="deny")

    async def go() -> None:
        name = await submit(api, request_pem(new_key(), TEMPLATE), CLIENT_SIGNER, CLIENT_USAGES)
        await wait_certificate(api, name, clock, 60)

    with pytest.raises(CertificateRefused, match=r"denied.*Nope.*denied by test"):
        run(go())


def test_wait_gives_up_on_a_pending_request_after_its_timeout() -> None:
    clock = FakeClock()
    api = FakeCsrApi(FakeCA(clock), mode="pending")

    async def go() -> float:
        name = await submit(api, request_pem(new_key(), TEMPLATE), CLIENT_SIGNER, CLIENT_USAGES)
        task = asyncio.create_task(wait_certificate(api, name, clock, 30))
        spent = await drive(clock, task.done)
        with pytest.raises(Exception, match="not approved after 30s"):
            await task
        return spent

    assert 30 <= run(go()) <= 32


# --- the renewal deadline and loop ---------------------------------------------------------------
def test_deadline_is_between_70_and_90_percent_of_the_lifetime() -> None:
    ca = FakeCA(FakeClock())
    pair = issued_pair(ca, 3300)  # notBefore 5 minutes back: a lifetime of 3600 s
    lifetime = pair.not_after - pair.not_before
    assert rotation_deadline(pair, 0.0) == pytest.approx(pair.not_before + 0.7 * lifetime)
    assert rotation_deadline(pair, 0.999999) == pytest.approx(pair.not_before + 0.9 * lifetime, abs=0.01)


def test_backoff_doubles_from_2_to_32_seconds_with_10_percent_jitter() -> None:
    assert [backoff_delays(lambda: 0.0)(n) for n in range(7)] == [2, 4, 8, 16, 32, 32, 32]
    assert backoff_delays(lambda: 0.5)(0) == pytest.approx(2.1)


def manager(
    tmp_path: Path,
    api: FakeCsrApi,
    clock: FakeClock,
    initial: KeyPair | None,
    rotated: list[KeyPair],
    fraction: float = 0.5,
) -> CertificateManager:
    return CertificateManager(
        "client",
        PemStore(tmp_path, "kubelet-client"),
        lambda: TEMPLATE,
        CLIENT_SIGNER,
        CLIENT_USAGES,
        lambda: api,
        clock,
        initial=initial,
        on_rotated=rotated.append,
        rng=lambda: fraction,
    )


def test_manager_renews_at_the_deadline_and_stores_the_new_pair(tmp_path: Path) -> None:
    clock = FakeClock()
    ca = FakeCA(clock)
    api = FakeCsrApi(ca, lifetime_s=3300)
    first = issued_pair(ca, 3300)
    rotated: list[KeyPair] = []
    mgr = manager(tmp_path, api, clock, first, rotated)
    assert mgr.ttl() == pytest.approx(3300, abs=1)
    due = rotation_deadline(first, 0.5) - clock.now()  # 80 % of 3600 s from notBefore: 2580 s from now

    async def go() -> float:
        task = asyncio.create_task(mgr.run())
        spent = await drive(clock, lambda: bool(rotated), step=10)
        task.cancel()
        return spent

    spent = run(go())
    assert due <= spent <= due + 11
    assert rotated[0].serial != first.serial and mgr.current == rotated[0]
    stored = PemStore(tmp_path, "kubelet-client").current()
    assert stored is not None and stored.serial == rotated[0].serial
    assert mgr.renew_errors == 0 and api.creates == 1


def test_manager_renews_at_once_without_a_certificate_or_with_one_of_another_subject(tmp_path: Path) -> None:
    clock = FakeClock()
    ca = FakeCA(clock)
    mgr = manager(tmp_path, FakeCsrApi(ca), clock, None, [])
    assert mgr.next_deadline() == clock.now() and mgr.ttl() == float("inf")
    mgr.current = issued_pair(ca, 3600, Template("system:node:other", ("system:nodes",)))
    assert mgr.next_deadline() == clock.now()


def test_manager_counts_failures_and_backs_off_until_the_server_accepts(tmp_path: Path) -> None:
    clock = FakeClock()
    ca = FakeCA(clock)
    api = FakeCsrApi(ca)
    api.refuse = 3
    rotated: list[KeyPair] = []
    mgr = manager(tmp_path, api, clock, None, rotated, fraction=0.0)

    async def go() -> float:
        task = asyncio.create_task(mgr.renew_with_backoff())
        spent = await drive(clock, task.done, step=0.5)
        await task
        return spent

    spent = run(go())
    assert mgr.renew_errors == 3 and api.creates == 4 and len(rotated) == 1
    assert 2 + 4 + 8 <= spent <= 2 + 4 + 8 + 2  # the three back-offs, then the renewal


# --- the bootstrap -------------------------------------------------------------------------------
def bootstrap_files(tmp_path: Path, ca: FakeCA) -> tuple[Path, Path]:
    boot = tmp_path / "bootstrap.kubeconfig"
    ca_pem = ca.cert.public_bytes(serialization.Encoding.PEM)
    boot.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "b",
                "clusters": [
                    {
                        "name": "k",
                        "cluster": {
                            "server": "https://127.0.0.1:6443",
                            "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "abcdef.0123456789abcdef"}}],
                "contexts": [{"name": "b", "context": {"cluster": "k", "user": "u"}}],
            }
        )
    )
    return boot, tmp_path / "kubelet.kubeconfig"


def make_bootstrap(tmp_path: Path, api: FakeCsrApi, clock: FakeClock) -> tuple[Bootstrap, list[str]]:
    boot, kubeconfig = bootstrap_files(tmp_path, api.ca)
    tokens: list[str] = []

    def factory(config: ClientConfig) -> FakeCsrApi:
        tokens.append(config.token or "")
        return api

    return Bootstrap(
        kubeconfig, boot, PemStore(tmp_path / "pki", "kubelet-client"), "n1", clock, factory, rng=lambda: 0.0
    ), tokens


def test_bootstrap_writes_the_certificate_and_a_kubeconfig_pointing_at_it(tmp_path: Path) -> None:
    clock = FakeClock()
    api = FakeCsrApi(FakeCA(clock))
    bootstrap, tokens = make_bootstrap(tmp_path, api, clock)
    assert bootstrap.existing() is None
    config = run(bootstrap.run())
    assert tokens == ["abcdef.0123456789abcdef"] and api.closed == 1
    assert next(iter(api.csrs)).startswith("node-csr-")
    doc = yaml.safe_load(bootstrap.kubeconfig.read_text())
    user = doc["users"][0]["user"]
    assert user == {
        "client-certificate": str(tmp_path / "pki/kubelet-client-current.pem"),
        "client-key": str(tmp_path / "pki/kubelet-client-current.pem"),
    }
    assert config.client_cert_pem is not None and config.token is None
    assert not bootstrap.store.pending_key_path.exists()
    # A restart: the kubeconfig is valid, nothing is requested.
    again, _ = make_bootstrap(tmp_path, api, clock)
    assert again.existing() is not None and api.creates == 1
    # The kubeconfig lost, the stored certificate still valid: a kubeconfig is written for it.
    bootstrap.kubeconfig.unlink()
    assert again.existing() is not None and load_kubeconfig(bootstrap.kubeconfig).client_cert_pem is not None


def test_bootstrap_with_an_expired_certificate_requests_a_new_one(tmp_path: Path) -> None:
    clock = FakeClock()
    api = FakeCsrApi(FakeCA(clock), lifetime_s=600)
    bootstrap, _ = make_bootstrap(tmp_path, api, clock)
    run(bootstrap.run())
    clock.advance(601)
    assert bootstrap.existing() is None


def test_bootstrap_retries_refused_credentials_and_a_denied_request_with_a_new_key(tmp_path: Path) -> None:
    clock = FakeClock()
    api = FakeCsrApi(FakeCA(clock), mode="deny")
    api.refuse = 2
    bootstrap, _ = make_bootstrap(tmp_path, api, clock)

    async def go() -> None:
        task = asyncio.create_task(bootstrap.run())
        await drive(clock, lambda: len(api.csrs) >= 2, step=0.5)  # refused twice, then denied, then anew
        api.mode = "approve"
        await drive(clock, task.done, step=0.5)
        await task

    run(go())
    # 401 twice, denied twice (each a new key, so a new name), then issued.
    assert bootstrap.attempts == 5 and len(api.csrs) == 3
    assert bootstrap.existing() is not None


# --- /metrics ------------------------------------------------------------------------------------
def test_client_metrics_carry_the_kubelets_names_types_and_help(tmp_path: Path) -> None:
    clock = FakeClock()
    ca = FakeCA(clock)
    mgr = manager(tmp_path, FakeCsrApi(ca), clock, None, [])
    registry = CollectorRegistry()
    registry.register(ClientCertificateCollector(mgr))
    text = generate_latest(registry).decode()
    assert "kubelet_certificate_manager_client_ttl_seconds +Inf\n" in text  # no certificate yet
    assert (
        "# HELP kubelet_certificate_manager_client_expiration_renew_errors [ALPHA] Counter of certificate "
        "renewal errors.\n# TYPE kubelet_certificate_manager_client_expiration_renew_errors counter\n"
        "kubelet_certificate_manager_client_expiration_renew_errors 0.0\n"
    ) in text
    assert "_total" not in text
    mgr.current = issued_pair(ca, 600)
    mgr.renew_errors = 3
    clock.advance(100.5)
    text = generate_latest(registry).decode()
    ttl = int(mgr.current.not_after - clock.now())  # whole seconds, as the kubelet's
    assert 498 <= ttl <= 500 and f"kubelet_certificate_manager_client_ttl_seconds {ttl}.0\n" in text
    assert "kubelet_certificate_manager_client_expiration_renew_errors 3.0\n" in text


def test_serving_template_names_the_node_by_its_addresses() -> None:
    ip = ipaddress.ip_address("10.250.0.1")
    assert serving_template("n1", [ip]) == Template("system:node:n1", ("system:nodes",), ("n1",), (ip,))
    # a node named by an IP: that IP, once, and no DNS name (the kubelet's addressesToHostnamesAndIPs)
    assert serving_template("10.250.0.1", [ip]).ips == (ip,) and serving_template("10.250.0.1", [ip]).dns_names == ()
