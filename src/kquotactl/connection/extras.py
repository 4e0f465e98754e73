"""Which optional package installs which extra, and the one line that says so (printed by the CLI, and by a
backend that needs one, such as ZooKeeper SASL)."""

from __future__ import annotations

# optional dependency (top-level module) -> the pyproject extra that installs it
EXTRAS = {
    "numpy": "impact",
    "pyarrow": "impact",
    "pyspark": "impact",
    "pandas": "impact",
    "matplotlib": "impact",
    "kafka": "admin",
    "puresasl": "sasl",
    "requests": "observe",
    "prometheus_client": "observe",
    "confluent_kafka": "observe",  # verify --drive
}


def missing_extra(e: ImportError) -> str | None:
    """The one line for an optional dependency that is not installed (which extra installs it), else None."""
    top = (e.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    # Both lines add the extra to the kquotactl already installed, wherever it came from (a checkout, a wheel,
    # PyPI): pip takes the installed kquotactl for the requirement and installs only the extra's packages.
    return (
        f"this needs the optional package {top!r}: pip install 'kquotactl[{extra}]' "
        f"(pipx: pipx runpip kquotactl install 'kquotactl[{extra}]')"
    )
