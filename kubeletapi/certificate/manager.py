"""A certificate manager: keeps one certificate (the node's client or serving one) renewed from
the API server (client-go's util/certificate manager).

The renewal deadline is a random point between 70 % and 90 % of the certificate's lifetime
(notBefore to notAfter), so nodes joined together do not renew together; a certificate whose
subject or names no longer match the template, or none at all, is renewed at once. A failed
renewal is counted (renew_errors), logged with its reason and retried after 2, 4, 8, 16 s, then
every 32 s (with 10 % jitter), as client-go does. Every new pair goes to the PEM store first,
then to `on_rotated` (the API clients' credentials, the secure port's context).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Sequence

from kubeletapi.certificate.csr import CsrApi, Template, new_key, request_pem, submit, wait_certificate
from kubeletapi.certificate.store import KeyPair, PemStore
from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput, KubeletError

log = logging.getLogger(__name__)

WAIT_TIMEOUT_S = 15 * 60  # client-go's certificateWaitTimeout
BACKOFF_FIRST_S, BACKOFF_CAP_S, BACKOFF_JITTER = 2.0, 32.0, 0.1


def rotation_deadline(pair: KeyPair, fraction: float) -> float:
    """notBefore + (0.7 + 0.2 * fraction) of the lifetime; `fraction` in [0, 1)."""
    lifetime = pair.not_after - pair.not_before
    return pair.not_before + lifetime * (0.7 + 0.2 * fraction)


def backoff_delays(rng: Callable[[], float]) -> Callable[[int], float]:
    """The wait before retry `n` (0-based): 2 s doubling to 32 s, each up to 10 % longer."""

    def delay(n: int) -> float:
        base = min(BACKOFF_FIRST_S * 2.0**n, BACKOFF_CAP_S)
        return base * (1 + BACKOFF_JITTER * rng())

    return delay


class CertificateManager:
    """One certificate, its renewal loop and the figures /metrics shows of it."""

    def __init__(
        self,
        name: str,
        store: PemStore,
        template: Callable[[], Template],
        signer: str,
        usages: Sequence[str],
        api: Callable[[], CsrApi],
        clock: Clock,
        *,
        initial: KeyPair | None = None,
        on_rotated: Callable[[KeyPair], None] = lambda _: None,
        rng: Callable[[], float] = random.random,
        wait_timeout_s: float = WAIT_TIMEOUT_S,
    ) -> None:
        self.name = name
        self.store = store
        self.renew_errors = 0
        self.rotations = 0
        self._template = template
        self._signer = signer
        self._usages = tuple(usages)
        self._api = api
        self._clock = clock
        self.on_rotated = on_rotated  # set by the wiring once it knows where the pair goes
        self._rng = rng
        self._delay = backoff_delays(rng)
        self._wait_timeout_s = wait_timeout_s
        self.current = store.current() or initial

    def ttl(self) -> float:
        """Seconds until the current certificate expires (whole seconds, as the kubelet's
        gauge); +Inf without one."""
        if self.current is None:
            return math.inf
        return float(math.trunc(self.current.not_after - self._clock.now()))

    def next_deadline(self) -> float:
        """When to renew (wall clock): now without a usable certificate."""
        current = self.current
        if current is None or not self._template().matches(current.leaf):
            return self._clock.now()
        return rotation_deadline(current, self._rng())

    async def run(self) -> None:
        """Renew before every deadline, forever (until cancelled)."""
        while True:
            deadline = self.next_deadline()
            if self.current is not None:
                log.info(
                    "Certificate rotation deadline determined: %s certificate expires at %.0f, renewing in %.0fs",
                    self.name,
                    self.current.not_after,
                    max(0.0, deadline - self._clock.now()),
                )
            wait = deadline - self._clock.now()
            if wait > 0:
                await self._clock.sleep(wait)
            await self.renew_with_backoff()

    async def renew_with_backoff(self) -> None:
        """Renew until it works: each failure counted and logged, the next try backed off."""
        failures = 0
        while True:
            try:
                await self.renew()
                return
            except KubeletError as exc:
                self.renew_errors += 1
                delay = self._delay(failures)
                failures += 1
                log.warning(
                    "Failed to renew the %s certificate (attempt %d), retrying in %.1fs: %s",
                    self.name,
                    failures,
                    delay,
                    exc,
                )
                await self._clock.sleep(delay)

    async def renew(self) -> KeyPair:
        """One renewal: a fresh key, a CSR, its certificate, stored and handed on."""
        template = self._template()
        key_pem = new_key()
        api = self._api()
        name = await submit(api, request_pem(key_pem, template), self._signer, self._usages)
        log.info("Requested a %s certificate: CertificateSigningRequest %s", self.name, name)
        cert_pem = await wait_certificate(api, name, self._clock, self._wait_timeout_s)
        pair = KeyPair.parse(cert_pem, key_pem, f"the certificate of CertificateSigningRequest {name}")
        if not template.matches(pair.leaf):
            raise InvalidInput(
                f"CertificateSigningRequest {name}: the issued certificate does not carry "
                "the requested subject and names"
            )
        self.store.update(pair, self._clock.now())
        self.current = pair
        self.rotations += 1
        log.info(
            "Rotated the %s certificate: serial %x, valid until %.0f (%s)",
            self.name,
            pair.serial,
            pair.not_after,
            self.store.current_path,
        )
        self.on_rotated(pair)
        return pair
