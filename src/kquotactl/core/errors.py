"""Errors the tool reports to people: each carries a one-line message and an exit code.

Anything raised as a :class:`QuotaError` is printed as ``kquotactl: error: <message>`` with no traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_PENDING = 2  # manifests: changes pending (plan, apply --dry-run, a declined apply)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it


def one_line(text: str, limit: int = 1000) -> str:
    """An error message as people see it: one line, whatever the user typed into it.

    Messages quote user input (names, keys, file contents), which can hold newlines, NUL, terminal escapes,
    bidi overrides or bytes that are not UTF-8; those are shown escaped (``\\n``, ``\\x00``, ``\\udcff``), and a
    message is cut at ``limit`` characters (a 1 MB name is not echoed back).
    """
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} characters)"
    return text


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
}


def missing_extra(e: ImportError) -> str | None:
    """The one line for an optional dependency that is not installed (which extra installs it), else None."""
    top = (e.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (
        f"this needs the optional package {top!r}: pip install 'kquotactl[{extra}]' "
        f"(pipx: pipx install --force 'kquotactl[{extra}]')"
    )


class QuotaError(Exception):
    """Base class: a problem the user can act on."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(QuotaError):
    """The command line is wrong (missing or conflicting options)."""


class InvalidValue(QuotaError):
    """A quota key or value is not acceptable."""


class InvalidRequest(QuotaError):
    """An entity or request Kafka itself would answer with INVALID_REQUEST."""

    def __init__(self, message: str) -> None:
        super().__init__(f"INVALID_REQUEST: {message}")


class InvalidConfigs(QuotaError):
    """Deleting keys that are not set (Kafka: ``Invalid config(s): a,b``)."""

    def __init__(self, keys: list[str], entity_desc: str) -> None:
        super().__init__(f"Invalid config(s): {','.join(keys)} (not set on {entity_desc}; use --if-exists to ignore)")
        self.keys = keys


class BackendUnavailable(QuotaError):
    """The cluster could not be reached, or refused us (auth, version)."""


class ConflictError(QuotaError):
    """The live state changed under us and the change could not be applied safely."""


class PartialFailure(QuotaError):
    """Some entities were applied and some were not; the message says exactly which."""

    def __init__(
        self, message: str, applied: list[str], not_applied: list[str], unknown: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.applied = applied
        self.not_applied = not_applied
        self.unknown = unknown or []  # in a transaction whose answer was lost: all or none of them written


class Interrupted(PartialFailure):
    """Ctrl-C in the middle of writes: what was applied, what was not, and what is unknown (exit 130)."""

    exit_code = EXIT_INTERRUPTED
