"""How the CLI words the core's errors: the core raises errors that carry data (which input, which value, what is
wrong); this module names the flags and commands that fix them. :func:`worded` is what ``kquotactl: error:`` prints.
"""

from __future__ import annotations

from kquotactl.core.errors import (
    ApplyRefused,
    InputProblem,
    InvalidConfigs,
    LogMismatch,
    MissingInput,
    NotAPlan,
    NothingLogged,
    NothingToChange,
    QuotaError,
    TooManyDeletions,
    VerifyRefused,
)
from kquotactl.core.migration import ZooKeeperWriteLost

#: a core input (:attr:`InputProblem.source`) -> the flag that gives it
FLAGS: dict[str, str] = {
    "add_config": "--add-config",
    "observed": "--observed",
    "limit": "--limit",
    "percentile": "--percentile",
    "headroom": "--headroom",
    "tail_share": "--tail-share",
    "floor": "--floor",
    "key": "--key",
}

#: :attr:`MissingInput.kind` -> what the CLI says (``{key}``: the quota key)
MISSING = {
    "replay-limit": "--replay needs the quota: give --limit VALUE, or a connection (--user/--client-id/--ip)",
    "ip": "{key} is an ip quota: give --ip",
    "client": "{key} is a user/client-id quota: give --user and/or --client-id",
    "unlimited": "{key} is unlimited for this connection: nothing would be throttled (give --limit)",
    "broker-count": "--cluster-wide offline (-f, --example) needs the broker count: add --brokers N",
    "cluster-budgets": "--cluster-wide needs the budgets to set (--add-config KEY=VALUE)",
    "budget-brokers": "the manifests declare cluster-wide budgets (cluster:): give the broker count they divide by "
    "(--brokers N)",
}

#: :attr:`kquotactl.core.principals.PrincipalError.needs` -> the flag that gives it
NEEDS = {
    "principal-type": "--principal-type ssl|kerberos",
    "kerberos-realm": "--kerberos-realm",
    "user": "--user",
    "ssl-rules": "--ssl-principal-mapping-rules",
    "kerberos-rules": "--kerberos-rules",
}

#: :attr:`kquotactl.core.verify.VerifyRefused.kind` -> what the CLI says (its fields formatted in)
VERIFY = {
    "controller": "verify asks each broker: use --bootstrap-server (controllers do not describe quotas)",
    "no-entity": "no such entity: {entity} has no quotas (give --expect to wait for values)",
    "no-bootstrap": "--drive runs a producer: give --bootstrap-server (or --drive-bootstrap with --zookeeper)",
    "ip": "--drive drives producer_byte_rate: verify a user or client-id entity, not an ip",
    "ssl": "--drive over SSL without SASL: the principal is the certificate's name; use a SASL listener",
    "user": "--drive: the entity is user {entity!r} but the producer authenticates as {user!r} "
    "(give that user's credentials with --command-config)",
    "client-id": "--drive-client-id {client_id!r}: the entity is client-id {named!r}",
}

#: :attr:`kquotactl.core.errors.ApplyRefused.kind` -> what the CLI says (its fields formatted in)
APPLY = {
    "stage-options": "{path} logs an apply without stages: --interval, --prometheus, --scrape do not apply",
    "verify-sample": "--verify-sample goes with --verify",
    "interval-unstaged": "--interval is the wait between stages: it goes with --stages N (or --resume LOG)",
    "interval-needed": "a staged apply ({count} stages) needs --interval DURATION (5m, 90s, 1h)",
}

#: the end of a plan's note on an unparsable stored value it keeps (:attr:`kquotactl.core.plan.Plan.kept`)
KEEP_HINT = " (remove it with alter --delete-config)"


def worded(e: QuotaError) -> str:
    """The one line for ``e`` as the CLI prints it: the core's message, with the flags that fix it."""
    if isinstance(e, InputProblem):
        flag = FLAGS.get(e.source, e.source)
        return f"{flag}{'' if e.value is None else f' {e.value!r}'}: {e.detail}"
    if isinstance(e, InvalidConfigs):
        return f"Invalid config(s): {','.join(e.keys)} (not set on {e.entity_desc}; use --if-exists to ignore)"
    if isinstance(e, MissingInput):
        return MISSING[e.kind].format(key=e.key)
    if isinstance(e, NothingToChange):
        return "nothing to change: give --add-config, --add-config-file or --delete-config"
    if isinstance(e, ZooKeeperWriteLost):
        return (
            f"ZooKeeper {e.where}: {e.state.summary()}; a write to ZooKeeper would be lost (it never reaches the "
            "KRaft metadata log); nothing written. Use --bootstrap-server (or --bootstrap-controller)"
        )
    if isinstance(e, NotAPlan):
        return f"{e.name} is not a kquotactl plan (write one with: kquotactl plan -o json --out FILE)"
    from kquotactl.core.verify import (  # (here, not at start-up: the simulation's modules)
        DriveBusy,
        DriveInconclusive,
        first_throttle_text,
        load_text,
        quota_id_text,
    )

    if isinstance(e, DriveInconclusive):
        return (
            f"{e.label}: cannot tell: the broker's first throttle ({first_throttle_text(e.broker_at_ms, e.broker_ms)}) "
            "matches the simulation only if the quota-id's sensor was read while idle; drive again with --scrape or "
            "--prometheus"
        )

    if isinstance(e, DriveBusy):
        return (
            f"--drive: the quota-id ({quota_id_text(e.user, e.client_id)}) still carries other traffic after "
            f"{e.waited_s:.0f}s ({load_text(e.busy)}): "
            "its first throttle would not be the limit's alone, so it cannot verify the limit (nor find it wrong); "
            "drive a quota-id nothing else uses (--drive-client-id)"
        )
    if isinstance(e, VerifyRefused):
        return VERIFY[e.kind].format(**e.fields)
    if isinstance(e, ApplyRefused):
        return APPLY[e.kind].format(**e.fields)
    if isinstance(e, NothingLogged):
        if e.staged:
            return f"{e.path}: no staged apply in this log (apply --stages N --log FILE writes one)"
        return f"{e.path}: no apply in this log to resume (apply --log FILE writes one)"
    if isinstance(e, LogMismatch):
        return f"{e} (plan and apply{' --stages' if e.staged else ''} again)"
    if isinstance(e, TooManyDeletions):
        return (
            f"the plan removes quotas from {e.entities}, more than --max-deletions {e.limit}; "
            "check the prune scope, or raise --max-deletions if this is intended"
        )
    needs = getattr(e, "needs", None)  # a PrincipalError (kquotactl.core.principals): the input that fixes it
    if needs in NEEDS:
        return f"{e}: {NEEDS[needs]}"
    return str(e)
