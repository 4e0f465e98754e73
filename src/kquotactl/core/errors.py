"""Errors the tool reports to people: each carries a one-line message and an exit code.

Anything raised as a :class:`QuotaError` is printed as ``kquotactl: error: <message>`` with no traceback.
"""

from __future__ import annotations

from typing import ClassVar

from kquotactl.core.wording import escaped

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_PENDING = 2  # manifests: changes pending (plan, apply --dry-run, a declined apply)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): a CI runner's stop, handled as Ctrl-C is


def one_line(text: str, limit: int = 1000) -> str:
    """An error message as people see it: one line, whatever the user typed into it.

    Messages quote user input (names, keys, file contents), which can hold newlines, NUL, terminal escapes,
    bidi overrides or bytes that are not UTF-8; those are shown escaped (``\\n``, ``\\x00``, ``\\udcff``), and a
    message is cut at ``limit`` characters (a 1 MB name is not echoed back).
    """
    text = escaped(text)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} characters)"
    return text


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
    """Deleting keys that are not set (Kafka: ``Invalid config(s): a,b``); the CLI adds how to ignore it."""

    def __init__(self, keys: list[str], entity_desc: str) -> None:
        super().__init__(f"Invalid config(s): {','.join(keys)} (not set on {entity_desc})")
        self.keys = keys
        self.entity_desc = entity_desc


class InputProblem:
    """What is wrong with one command input, as data: ``source`` names the input (``"add_config"``, ``"observed"``:
    the CLI words it as its flag), ``value`` the offending item when it is quoted, ``detail`` what is wrong."""

    source: str
    value: str | None
    detail: str

    def _init_problem(self, source: str, detail: str, value: str | None) -> str:
        self.source, self.detail, self.value = source, detail, value
        return f"{source}{'' if value is None else f' {value!r}'}: {detail}"


class MalformedInput(UsageError, InputProblem):
    """A command input is malformed (see :class:`InputProblem`)."""

    def __init__(self, source: str, detail: str, value: str | None = None) -> None:
        super().__init__(self._init_problem(source, detail, value))


class InputValueError(InvalidValue, InputProblem):
    """A command input holds a value that is not acceptable (see :class:`InputProblem`)."""

    def __init__(self, source: str, detail: str, value: str | None = None) -> None:
        super().__init__(self._init_problem(source, detail, value))


class MissingInput(UsageError):
    """A computation lacks an input the caller can give: ``kind`` says which (``"replay-limit"``: a replay needs a
    limit or a connection to resolve one; ``"ip"``/``"client"``: the key needs that kind of connection;
    ``"unlimited"``: the connection has no limit for the key; ``"broker-count"``: a cluster-wide view offline needs
    the broker count; ``"cluster-budgets"``: a cluster-wide alter sets nothing; ``"budget-brokers"``: budgets to
    divide without a broker count), ``key`` the quota key. The CLI names the flags."""

    MESSAGES: ClassVar[dict[str, str]] = {
        "replay-limit": "a replay needs the quota: a limit, or a connection to resolve it",
        "ip": "{key} is an ip quota: it needs an ip",
        "client": "{key} is a user/client-id quota: it needs a user and/or a client-id",
        "unlimited": "{key} is unlimited for this connection: nothing would be throttled",
        "broker-count": "a cluster-wide view without a cluster needs the broker count",
        "cluster-budgets": "cluster-wide budgets need the values to set",
        "budget-brokers": "the manifests declare cluster-wide budgets (cluster:): give the broker count they divide by",
    }

    def __init__(self, kind: str, key: str = "") -> None:
        super().__init__(self.MESSAGES[kind].format(key=key))
        self.kind, self.key = kind, key


class NothingToChange(UsageError):
    """An alter that neither sets nor removes a key (the CLI says which options give keys)."""

    def __init__(self) -> None:
        super().__init__("nothing to change")


class NotAPlan(UsageError):
    """A file that is not a saved kquotactl plan (the CLI says how to write one)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not a kquotactl plan")
        self.name = name


class NothingLogged(UsageError):
    """A log (``path``) with no apply to resume (``staged``: no staged apply); the CLI says how to write one."""

    def __init__(self, path: str, staged: bool = False) -> None:
        super().__init__(
            f"{path}: no staged apply in this log" if staged else f"{path}: no apply in this log to resume"
        )
        self.path, self.staged = path, staged


class LogMismatch(UsageError):
    """A manifest entry (``source``, the entity as ``entity_text``) that asks for other values than the apply logged
    in ``path`` (``staged``: its stages): not resumed, nothing written. The CLI says how to start again."""

    def __init__(self, source: str, entity_text: str, path: str, staged: bool = False) -> None:
        logged = f"the logged stages in {path}" if staged else f"the apply logged in {path}"
        super().__init__(f"{source}: {entity_text} asks for other values than {logged}: not resumed, nothing written")
        self.source, self.entity_text, self.path, self.staged = source, entity_text, path, staged


class ApplyRefused(UsageError):
    """What apply refuses once it has read what to apply, as data: ``kind`` says which (``"stage-options"``: stage
    settings for the logged apply without stages in ``path``; ``"verify-sample"``: a sample without verifying;
    ``"interval-unstaged"``: an interval without stages; ``"interval-needed"``: ``count`` stages without one),
    ``fields`` the values quoted. The CLI names the options (``kquotactl.cli.errorwords.APPLY``)."""

    MESSAGES: ClassVar[dict[str, str]] = {
        "stage-options": "{path} logs an apply without stages: the stage settings do not apply",
        "verify-sample": "a verify sample goes with verifying",
        "interval-unstaged": "an interval is the wait between stages: it needs stages",
        "interval-needed": "a staged apply ({count} stages) needs the interval between its stages",
    }

    def __init__(self, kind: str, **fields: str) -> None:
        super().__init__(self.MESSAGES[kind].format(**fields))
        self.kind, self.fields = kind, fields


class VerifyRefused(UsageError):
    """What verify cannot do, as data: ``kind`` says which (``"controller"``: a controller does not describe
    quotas; ``"no-entity"``: nothing set to wait for; ``"no-bootstrap"``, ``"ip"``, ``"ssl"``, ``"user"``,
    ``"client-id"``: a producer that could not be driven as the entity's connection), ``fields`` the names quoted.
    The CLI names the options that fix it (``kquotactl.cli.errorwords.VERIFY``)."""

    MESSAGES: ClassVar[dict[str, str]] = {
        "controller": "verify asks each broker: a controller does not describe quotas",
        "no-entity": "no such entity: {entity} has no quotas",
        "no-bootstrap": "a driven producer needs the brokers' bootstrap address",
        "ip": "a driven producer sends producer_byte_rate: verify a user or client-id entity, not an ip",
        "ssl": "a driven producer over SSL without SASL: the principal is the certificate's name; use a SASL listener",
        "user": "the entity is user {entity!r} but the producer authenticates as {user!r}",
        "client-id": "the driven client-id {client_id!r}: the entity is client-id {named!r}",
    }

    def __init__(self, kind: str, **fields: str) -> None:
        super().__init__(self.MESSAGES[kind].format(**fields))
        self.kind, self.fields = kind, fields


class TooManyDeletions(UsageError):
    """A plan that removes quotas from more entities than allowed (``limit``); the CLI names its option."""

    def __init__(self, deletions: int, limit: int, entities: str) -> None:
        super().__init__(f"the plan removes quotas from {entities}, more than the limit of {limit}")
        self.deletions, self.limit, self.entities = deletions, limit, entities


class BackendUnavailable(QuotaError):
    """The cluster could not be reached, or refused us (auth, version)."""


class ConflictError(QuotaError):
    """The live state changed under us and the change could not be applied safely."""


class PartialFailure(QuotaError):
    """Some entities were applied and some were not; the message says exactly which."""

    def __init__(
        self,
        message: str,
        applied: list[str],
        not_applied: list[str],
        unknown: list[str] | None = None,
        cause: str | None = None,
        read_back: bool = False,
    ) -> None:
        super().__init__(message)
        self.applied = applied
        self.not_applied = not_applied
        self.unknown = unknown or []  # the write in flight when it stopped, whose answer never came
        self.cause = message if cause is None else cause  # why it stopped, without the counts
        # the backend already read the write in flight back where it could: what is unknown, reading again
        # (a stale broker without a controller quorum) cannot settle
        self.read_back = read_back


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises :class:`KeyboardInterrupt` (the CLI installs the handler), so that every
    place that reports an interrupted write reports a terminated one the same way."""


class Interrupted(PartialFailure):
    """Ctrl-C in the middle of writes: what was applied, what was not, and what is unknown (exit 130)."""

    exit_code = EXIT_INTERRUPTED
