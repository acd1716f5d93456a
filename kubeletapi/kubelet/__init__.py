"""The composition root: builds every component from the configuration and implements Host."""

from kubeletapi.kubelet.agent import Kubelet

__all__ = ["Kubelet"]
