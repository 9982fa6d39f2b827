"""Read settings from the environment, failing at start with a sentence that names the setting."""

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false (1/0, yes/no, on/off), not {raw!r}.")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {raw!r}.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated addresses or CIDR blocks (`10.0.0.5, 192.168.0.0/24, fd00::/8`); unset or
    empty is none. A block of every address (`/0`) is refused: it would trust anyone."""
    networks = []
    for item in env_list(name, []):
        try:
            network = ipaddress.ip_network(item)
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"{name} must be IP addresses or CIDR blocks, comma-separated; {exc}."
            ) from None
        if network.prefixlen == 0:
            raise ImproperlyConfigured(
                f"{name} must not hold {item}: every address would be trusted, so any client "
                "could choose the address it is counted as."
            )
        networks.append(network)
    return tuple(networks)
