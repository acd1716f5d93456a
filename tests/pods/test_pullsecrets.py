"""pods/pullsecrets.py: imagePullSecrets to registry credentials as the kubelet's keyring matches
them (docker.io normalization, glob hosts, ports, path prefixes, the Docker Hub fallback), both
Secret types, and the errors of a malformed Secret."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from kubeletapi.errors import InvalidInput, NotFound
from kubeletapi.pods.pullsecrets import Keyring, PullCredentials, docker_config, repository, urls_match
from kubeletapi.runtime.types import AuthConfig

P = pytest.param
Json = dict[str, Any]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config_json(auths: Json, name: str = "regcred") -> Json:
    return {"metadata": {"name": name, "namespace": "ns"}, "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": b64(json.dumps({"auths": auths}))}}


def dockercfg(entries: Json, name: str = "oldcred") -> Json:
    return {"metadata": {"name": name, "namespace": "ns"}, "type": "kubernetes.io/dockercfg",
            "data": {".dockercfg": b64(json.dumps(entries))}}


def user(name: str) -> Json:
    return {"username": name, "password": f"{name}-pw"}


def auth(name: str) -> AuthConfig:
    return AuthConfig(username=name, password=f"{name}-pw")


class Secrets:
    """The Secret cache: objects by name, NotFound with the cache's message otherwise."""

    def __init__(self, *secrets: Json) -> None:
        self.secrets = {s["metadata"]["name"]: s for s in secrets}
        self.asked: list[tuple[str, str]] = []

    async def get(self, namespace: str, name: str) -> Json:
        self.asked.append((namespace, name))
        if name not in self.secrets:
            raise NotFound(f'secret "{name}" not found')
        return self.secrets[name]


@pytest.mark.parametrize(("image", "repo"), [
    P("busybox", "docker.io/library/busybox", id="bare"),
    P("busybox:1.36", "docker.io/library/busybox", id="tag"),
    P("library/busybox@sha256:abc", "docker.io/library/busybox", id="digest"),
    P("someone/app:v1", "docker.io/someone/app", id="user"),
    P("docker.io/busybox", "docker.io/library/busybox", id="docker.io"),
    P("index.docker.io/someone/app", "docker.io/someone/app", id="index.docker.io"),
    P("registry.example.com:5000/team/app:v2", "registry.example.com:5000/team/app", id="host-port"),
    P("localhost/app", "localhost/app", id="localhost"),
    P("quay.io/coreos/etcd", "quay.io/coreos/etcd", id="other-registry"),
])
def test_the_repository_is_normalized_like_parse_image_name(image: str, repo: str) -> None:
    assert repository(image) == repo


@pytest.mark.parametrize(("glob", "target", "matches"), [
    P("*.example.com", "registry.example.com/app", True, id="glob-host"),
    P("*.example.com", "a.b.example.com/app", False, id="glob-needs-as-many-parts"),
    P("*.example.com", "registry.other.com/app", False, id="glob-other-domain"),
    P("registry.example.com:5000", "registry.example.com:5000/app", True, id="port"),
    P("registry.example.com:5000", "registry.example.com/app", False, id="port-differs"),
    P("registry.example.com", "registry.example.com:5000/app", False, id="port-missing"),
    P("quay.io/coreos", "quay.io/coreos/etcd", True, id="path-prefix"),
    P("quay.io/coreos", "quay.io/other/etcd", False, id="path-not-prefix"),
    P("reg*.example.com", "registry.example.com/app", True, id="glob-in-a-part"),
    P("registry.*.com", "registry.example.com/app", True, id="glob-middle-part"),
])
def test_urls_match(glob: str, target: str, matches: bool) -> None:
    assert urls_match(glob, target) is matches


def test_more_specific_keys_come_first_and_schemes_and_v1_v2_are_dropped() -> None:
    keyring = Keyring()
    keyring.add({"quay.io": auth("host"), "https://quay.io/v2/coreos": auth("path"),
                 "http://quay.io/v1/": auth("v1")})
    assert keyring.lookup("quay.io/coreos/etcd") == [auth("path"), auth("host"), auth("v1")]
    assert keyring.lookup("quay.io/other/app") == [auth("host"), auth("v1")]
    assert keyring.lookup("gcr.io/other/app") == []


@pytest.mark.parametrize(("location", "image", "found"), [
    P("docker.io", "busybox:1.36", True, id="docker.io-key"),
    P("index.docker.io", "busybox:1.36", True, id="index-fallback"),
    P("https://index.docker.io/v1/", "someone/app", True, id="index-v1-fallback"),
    P("index.docker.io", "quay.io/app", False, id="index-not-for-other-registries"),
    P("registry-1.docker.io", "busybox", False, id="other-hub-host"),
])
def test_docker_hub_images_use_the_docker_hub_keys(location: str, image: str, found: bool) -> None:
    keyring = Keyring()
    keyring.add({location: auth("hub")})
    assert keyring.lookup(repository(image)) == ([auth("hub")] if found else [])


def test_both_secret_types_and_the_auth_field() -> None:
    padded, unpadded = b64("alice:s3:cret"), b64("bob:pw").rstrip("=")
    assert docker_config(config_json({"r.io": {"auth": padded}, "q.io": user("carol")})) == {
        "r.io": AuthConfig(username="alice", password="s3:cret"), "q.io": auth("carol")}
    assert docker_config(dockercfg({"https://r.io": {"auth": unpadded, "email": "b@x"}})) == {
        "https://r.io": AuthConfig(username="bob", password="pw")}
    assert docker_config(config_json({}) | {"data": {".dockerconfigjson": b64("{}")}}) == {}


@pytest.mark.parametrize("secret", [
    P({"type": "Opaque", "data": {".dockerconfigjson": b64("{}")}}, id="opaque"),
    P({"type": "kubernetes.io/dockerconfigjson", "data": {}}, id="no-key"),
    P({"type": "kubernetes.io/dockercfg", "data": {".dockerconfigjson": b64("{}")}}, id="wrong-key"),
])
def test_other_secrets_give_no_config(secret: Json) -> None:
    assert docker_config(secret) is None


@pytest.mark.parametrize(("secret", "message"), [
    P(config_json({}) | {"data": {".dockerconfigjson": b64("{not json")}},
      ".dockerconfigjson of secret ns/regcred: Expecting property name", id="not-json"),
    P(config_json({}) | {"data": {".dockerconfigjson": b64('{"auths": ["r.io"]}')}},
      ".dockerconfigjson of secret ns/regcred: not an object of registry locations", id="auths-a-list"),
    P(dockercfg({"r.io": {"auth": b64("nocolon")}}),
      ".dockercfg of secret ns/oldcred: unable to parse auth field, must be formatted as "
      "base64(username:password)", id="auth-without-colon"),
    P(dockercfg({"r.io": {"auth": "!!!"}}),
      ".dockercfg of secret ns/oldcred: docker config entry r.io: the auth field is not base64", id="auth-not-b64"),
    P(dockercfg({"r.io": "alice"}),
      ".dockercfg of secret ns/oldcred: docker config entry r.io: not an object", id="entry-not-object"),
])
def test_a_malformed_secret_is_a_clear_error(secret: Json, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        docker_config(secret)
    assert str(caught.value).startswith(message)


def test_pull_credentials_join_the_pods_secrets_and_skip_unreadable_ones() -> None:
    secrets = Secrets(config_json({"registry.example.com": user("alice")}),
                      dockercfg({"*.example.com": user("bob"), "docker.io": user("hub")}))
    creds = PullCredentials(secrets)
    names = ["regcred", "", "missing", "oldcred"]
    found = asyncio.run(creds.credentials("ns", names, "registry.example.com/app:v1"))
    assert found == [auth("alice"), auth("bob")]  # the exact host before the glob (reverse order)
    assert secrets.asked == [("ns", "regcred"), ("ns", "missing"), ("ns", "oldcred")]
    assert asyncio.run(creds.credentials("ns", names, "busybox:1.36")) == [auth("hub")]
    assert asyncio.run(creds.credentials("ns", names, "quay.io/app")) == []


def test_a_malformed_pull_secret_fails_the_lookup() -> None:
    bad = config_json({}) | {"data": {".dockerconfigjson": b64("[")}}
    with pytest.raises(InvalidInput, match="of secret ns/regcred"):
        asyncio.run(PullCredentials(Secrets(bad)).credentials("ns", ["regcred"], "busybox"))
