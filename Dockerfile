# kubeletapi for the docker-compose monitoring stack (docker-compose.yml): the agent, its C shim
# prebuilt, started by deploy/docker/entrypoint.sh. It runs as root in a privileged container with
# the host's PID namespace and cgroups, as a kubelet does (see the README's docker compose section).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# gcc and libc6-dev build the per-container shim (plain C against libc); mount is used by the
# entrypoint to take the manifests away when the container stops (it is in the base image already).
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev mount \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/kubeletapi

# Dependencies first, from pyproject.toml alone: editing the code or the README reuses this layer.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The package itself, a normal (wheel) install: the wheel carries the shim's source,
# kubeletapi/runtime/process/shim/shim.c. The source tree is staged outside the working directory
# and removed once installed, so nothing but the installed package can be imported. Prebuilding
# the shim here (into the installed package's shim/bin, named after the source's hash) keeps the
# first pod start fast.
COPY README.md LICENSE /tmp/kubeletapi-src/
COPY kubeletapi /tmp/kubeletapi-src/kubeletapi
RUN cp pyproject.toml /tmp/kubeletapi-src/ \
    && pip install --no-deps /tmp/kubeletapi-src \
    && rm -rf /tmp/kubeletapi-src \
    && python -m kubeletapi.runtime.process.shimbuild \
    && kubeletapi --version

COPY deploy/docker/entrypoint.sh ./deploy/docker/entrypoint.sh
RUN chmod 0755 deploy/docker/entrypoint.sh \
    && mkdir -p /var/lib/kubeletapi/certs /var/lib/kubelet /var/log/pods /etc/kubeletapi/manifests \
    && chmod 0755 /var/lib/kubeletapi/certs

# Secure API (TLS), read-only port (plain HTTP); healthz stays on the container's loopback.
EXPOSE 10250 10255
ENTRYPOINT ["/opt/kubeletapi/deploy/docker/entrypoint.sh"]
