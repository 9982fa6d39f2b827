"""Reads about users and about the service itself."""

import tomllib
from functools import lru_cache
from importlib import metadata

from django.conf import settings

PACKAGE_NAME = "ticketing"


@lru_cache(maxsize=1)
def service_version() -> str:
    """The installed package's version; from pyproject.toml in a source checkout not installed."""
    try:
        return metadata.version(PACKAGE_NAME)
    except metadata.PackageNotFoundError:
        pass
    try:
        with open(settings.BASE_DIR / "pyproject.toml", "rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"
