"""Principals as the broker maps them: the quota user name of a certificate DN or a Kerberos principal (pure).

A quota's user entity is the broker's *short* principal name. For mutual TLS the broker passes the client
certificate's subject, ``X500Principal.getName()`` (RFC 2253: ``CN=svc-a,OU=payments,O=acme``), to
``SslPrincipalMapper`` with ``ssl.principal.mapping.rules``; for SASL/GSSAPI it parses the authorization id with
``KerberosName.parse`` and hands it to ``KerberosShortNamer`` with ``sasl.kerberos.principal.to.local.rules``.
:class:`SslRules` and :class:`KerberosRules` are those classes, parsing quirks and errors included, checked
differentially against Kafka's own classes (``tests/test_oracle_principals.py``). Rule regexes are Java's and run
through :mod:`kquotactl.core.javaregex`, which refuses what it cannot reproduce exactly.

Two things the rules alone do not say. Kerberos ``DEFAULT`` maps ``svc@REALM`` to ``svc`` only when ``REALM`` is
the *broker's* default realm (from its ``krb5.conf``, which no Kafka config exposes): it must be given, and
without it a rule list that reaches ``DEFAULT`` is refused rather than guessed. And a DN typed in another
spelling than the broker's (``cn=svc-a, ou=payments``) is first rewritten by :func:`rfc2253` the way
``X500Principal`` would print it, for the spellings where that is certain; others are refused.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal

from kquotactl.core.errors import QuotaError
from kquotactl.core.javaregex import DOLLAR, DOT, SPACE, InvalidRegex, JavaPattern, compile_java, replace

PrincipalType = Literal["ssl", "kerberos"]


class PrincipalError(QuotaError):
    """A principal or a rule list that cannot be mapped (as the broker would fail to, or as kquotactl refuses).

    ``needs``: the input that would fix it (``principal-type``, ``kerberos-realm``, ``user``, ``ssl-rules``,
    ``kerberos-rules``), for the CLI to name its flag (:mod:`kquotactl.cli.errorwords`)."""

    def __init__(self, message: str, needs: str | None = None) -> None:
        super().__init__(message)
        self.needs = needs


class InvalidRules(PrincipalError):
    """Kafka rejects this rule list (its constructor throws)."""


class NoMatchingRule(PrincipalError):
    """No rule applies: the broker fails the authentication (``NoMatchingRule``)."""


class UnsupportedPrincipal(PrincipalError):
    """Something kquotactl cannot map exactly as the broker would, so it refuses rather than guess."""


class Unmappable(PrincipalError):
    """The broker would fail while mapping (a bad back reference, a non-simple Kerberos result...)."""


def _java_trim(s: str) -> str:
    """``String.trim()``: every character up to U+0020 off both ends."""
    return s.strip("".join(chr(c) for c in range(0x21)))


# -- mutual TLS: SslPrincipalMapper ------------------------------------------------------------------------------

_SSL_RULE = rf"(DEFAULT)|RULE:((\\{DOT}|[^\\/])*)/((\\{DOT}|[^\\/])*)/([LU]?){DOT}*?|({DOT}*?)"
_SSL_SPLITTER = re.compile(rf"{SPACE}*({_SSL_RULE}){SPACE}*(,{SPACE}*|{DOLLAR})")
_SSL_PARSER = re.compile(_SSL_RULE)
_BACK_REFERENCE = re.compile(r"\$([0-9]+)")


def _java_find_all(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """``while (matcher.find())``: after an empty match the next search starts one further."""
    found = []
    pos = 0
    while pos <= len(text):
        m = pattern.search(text, pos)
        if m is None:
            break
        found.append(m)
        pos = m.end() + 1 if m.end() == m.start() else m.end()
    return found


def _escape_literal_back_references(replacement: str, groups: int) -> str:
    """``SslPrincipalMapper.Rule.escapeLiteralBackReferences`` (from NiFi), its index arithmetic included: the
    positions come from the original string and are applied to the one already rewritten."""
    if groups == 0:
        return replacement
    value = replacement
    for m in _BACK_REFERENCE.finditer(replacement):
        digits = m.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        if index > 2**31 - 1:
            raise Unmappable(f"replacement {replacement!r}: back reference ${digits} is out of range")
        while index > groups and index >= 10:
            index //= 10
        if index > groups:
            start = m.start(1)
            value = value[: start - 1] + "\\" + value[start - 1 :]
    return value


@dataclass(frozen=True)
class SslRule:
    pattern: JavaPattern | None  # None: DEFAULT
    replacement: str = ""
    case: Literal["", "L", "U"] = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.matches(dn) is None:
            return None
        result = replace(self.pattern, dn, _escape_literal_back_references(self.replacement, self.pattern.groups))
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.source}/{self.replacement}" + (f"/{self.case}" if self.case else "")


@dataclass(frozen=True)
class SslRules:
    """``ssl.principal.mapping.rules`` parsed as ``SslPrincipalMapper`` does."""

    rules: tuple[SslRule, ...]
    text: str

    @classmethod
    def parse(cls, text: str | None) -> SslRules:
        text = "DEFAULT" if text is None else text
        _ascii_case_safe(text, "ssl.principal.mapping.rules")
        parts = [m.group(1) for m in _java_find_all(_SSL_SPLITTER, _java_trim(text))]
        rules: list[SslRule] = []
        for part in parts:
            m = _SSL_PARSER.match(part)
            if m is None:  # pragma: no cover - the last alternative matches anything
                raise InvalidRules(f"ssl.principal.mapping.rules: invalid rule: {part}")
            if m.end() != len(part):
                raise InvalidRules(
                    f"ssl.principal.mapping.rules: invalid rule `{part}`, unmatched substring `{part[m.end() :]}`"
                )
            if m.group(1) is not None:
                rules.append(SslRule(None))
            elif m.group(2) is not None:
                try:
                    pattern = compile_java(m.group(2))
                except InvalidRegex as e:
                    raise InvalidRules(f"ssl.principal.mapping.rules: {e}") from e
                case = m.group(6)
                rules.append(SslRule(pattern, m.group(4), "L" if case == "L" else "U" if case == "U" else ""))
        return cls(tuple(rules), text)

    def short_name(self, dn: str) -> str:
        """``SslPrincipalMapper.getName(dn)``: the first rule that applies, or :class:`NoMatchingRule`."""
        _ascii_case_safe(dn, "DN")
        for rule in self.rules:
            try:
                name = rule.apply(dn)
            except InvalidRegex as e:
                raise Unmappable(f"rule {rule}: {e}") from e
            if name is not None:
                return name
        raise NoMatchingRule(f"no ssl.principal.mapping.rules apply to {dn!r} (the broker refuses the connection)")

    def __str__(self) -> str:
        return ",".join(map(str, self.rules))


def _ascii_case_safe(text: str, what: str) -> None:
    """Java's and Python's case mappings and the UTF-16 view agree on ASCII; refuse what is not, rather than
    risk a name the broker would spell differently."""
    if not text.isascii():
        raise UnsupportedPrincipal(f"{what} {text!r}: only ASCII is supported")


# -- Kerberos: KerberosShortNamer ----------------------------------------------------------------------------------

#: As compiled into kafka-clients 3.9 and 4.1 (``/L`` or ``/U`` belong to RULE only; ``DEFAULT/L`` is invalid).
_KRB_RULE = re.compile(r"((DEFAULT)|((RULE:\[([0-9]*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))")
_KRB_NAME = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
_KRB_PARAMETER = re.compile(r"([^$]*)(\$([0-9]*))?")
_NON_SIMPLE = re.compile(r"[/@]")
_LIST_SPLIT = re.compile(rf"{SPACE}*,{SPACE}*")


@dataclass(frozen=True)
class KerberosName:
    service: str
    host: str | None
    realm: str | None

    @classmethod
    def parse(cls, principal: str) -> KerberosName:
        """``KerberosName.parse``: ``svc/host@REALM`` or ``svc@REALM``; no ``@`` at all is a simple name."""
        m = _KRB_NAME.fullmatch(principal)
        if m is None:
            if "@" in principal:
                raise PrincipalError(f"malformed Kerberos name: {principal!r}")
            return cls(principal, None, None)
        return cls(m.group(1), m.group(3), m.group(4))

    def __str__(self) -> str:
        return (
            self.service
            + (f"/{self.host}" if self.host is not None else "")
            + (f"@{self.realm}" if self.realm is not None else "")
        )


def _replace_parameters(fmt: str, params: list[str]) -> str:
    """``KerberosRule.replaceParameters``: ``$0`` is the realm, ``$1``... the components."""
    out = []
    start = 0
    while start < len(fmt):
        m = _KRB_PARAMETER.match(fmt, start)
        assert m is not None
        out.append(m.group(1))
        digits = m.group(3)
        if digits is not None:
            if not digits or len(digits) > 10 or int(digits) > 2**31 - 1:
                raise Unmappable(f"bad format in username mapping in {digits!r}")
            num = int(digits)
            if num >= len(params):
                raise Unmappable(f"index {num} from {fmt} is outside of the valid range 0 to {len(params) - 1}")
            out.append(params[num])
        start = m.end()
    return "".join(out)


@dataclass(frozen=True)
class KerberosRule:
    components: int | None  # None: DEFAULT
    fmt: str = ""
    match: JavaPattern | None = None
    sub_from: JavaPattern | None = None
    sub_to: str = ""
    repeat: bool = False
    case: Literal["", "L", "U"] = ""

    def apply(self, params: list[str], default_realm: str | None) -> str | None:
        result: str | None = None
        if self.components is None:
            if default_realm is None:
                raise PrincipalError(
                    "the Kerberos DEFAULT rule compares the realm with the broker's default realm (its krb5.conf), "
                    "which no Kafka config shows: give it",
                    needs="kerberos-realm",
                )
            if default_realm == params[0]:
                result = params[1]
        elif len(params) - 1 == self.components:
            base = _replace_parameters(self.fmt, params)
            if self.match is None or self.match.matches(base) is not None:
                if self.sub_from is None:
                    result = base
                else:
                    try:
                        result = replace(self.sub_from, base, self.sub_to, first_only=not self.repeat)
                    except InvalidRegex as e:
                        raise Unmappable(f"rule {self}: {e}") from e
        if result is not None and _NON_SIMPLE.search(result):
            raise NoMatchingRule(f"non-simple name {result!r} after auth_to_local rule {self}")
        if result is not None and self.case == "L":
            return result.lower()
        if result is not None and self.case == "U":
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.components is None:
            return "DEFAULT"
        text = f"RULE:[{self.components}:{self.fmt}]"
        if self.match is not None:
            text += f"({self.match.source})"
        if self.sub_from is not None:
            text += f"s/{self.sub_from.source}/{self.sub_to}/" + ("g" if self.repeat else "")
        return text + (f"/{self.case}" if self.case else "")


@dataclass(frozen=True)
class KerberosRules:
    """``sasl.kerberos.principal.to.local.rules`` parsed as ``KerberosShortNamer`` does, with the broker's default
    realm (None: unknown, and the ``DEFAULT`` rule refuses to guess)."""

    rules: tuple[KerberosRule, ...]
    default_realm: str | None = None

    @classmethod
    def parse_list(cls, rules: list[str], default_realm: str | None = None) -> KerberosRules:
        parsed = []
        for rule in rules:
            _ascii_case_safe(rule, "Kerberos rule")
            m = _KRB_RULE.match(rule)
            if m is None:
                raise InvalidRules(f"sasl.kerberos.principal.to.local.rules: invalid rule: {rule}")
            if m.end() != len(rule):
                raise InvalidRules(
                    f"sasl.kerberos.principal.to.local.rules: invalid rule `{rule}`, "
                    f"unmatched substring `{rule[m.end() :]}`"
                )
            if m.group(2) is not None:
                parsed.append(KerberosRule(None))
                continue
            digits = m.group(5)
            if not digits or len(digits) > 10 or int(digits) > 2**31 - 1:
                raise InvalidRules(f"sasl.kerberos.principal.to.local.rules: bad component count in {rule}")
            try:
                match = None if m.group(8) is None else compile_java(m.group(8))
                sub_from = None if m.group(10) is None else compile_java(m.group(10))
            except InvalidRegex as e:
                raise InvalidRules(f"sasl.kerberos.principal.to.local.rules: {e}") from e
            case = m.group(13)
            parsed.append(
                KerberosRule(
                    int(digits),
                    m.group(6),
                    match,
                    sub_from,
                    m.group(11) or "",
                    m.group(12) == "g",
                    "L" if case == "L" else "U" if case == "U" else "",
                )
            )
        return cls(tuple(parsed), default_realm)

    @classmethod
    def parse(cls, text: str | None, default_realm: str | None = None) -> KerberosRules:
        """From the config's text, split as Kafka's ``ConfigDef`` splits a LIST (``\\s*,\\s*``; empty: none)."""
        text = "DEFAULT" if text is None else _java_trim(text)
        return cls.parse_list(_LIST_SPLIT.split(text) if text else [], default_realm)

    def short_name(self, principal: str) -> str:
        """``KerberosShortNamer.shortName(KerberosName.parse(principal))``."""
        _ascii_case_safe(principal, "Kerberos principal")
        name = KerberosName.parse(principal)
        if name.host is None:
            if name.realm is None:
                return name.service
            params = [name.realm, name.service]
        else:
            params = [name.realm or "", name.service, name.host]
        for rule in self.rules:
            result = rule.apply(params, self.default_realm)
            if result is not None:
                return result
        raise NoMatchingRule(
            f"no sasl.kerberos.principal.to.local.rules apply to {principal!r} (the broker refuses the connection)"
        )

    def __str__(self) -> str:
        return ",".join(map(str, self.rules))


# -- which kind, and the DN as the broker prints it ---------------------------------------------------------------

#: The attribute keywords ``X500Principal.getName()`` (RFC 2253) prints by name; any other is printed as an OID
#: with a hex-encoded value, which kquotactl does not reproduce.
RFC2253_KEYWORDS = frozenset({"CN", "C", "L", "ST", "O", "OU", "STREET", "DC", "UID"})
_DN_START = re.compile(
    r"\s*(CN|OU|O|C|L|ST|STREET|DC|UID|EMAILADDRESS|E|SERIALNUMBER|T|[0-9]+(\.[0-9]+)+)\s*=", re.IGNORECASE
)


def looks_like_dn(text: str) -> bool:
    """Starts like a certificate subject: ``CN=``, ``OU=``... (a usual attribute keyword or an OID, then ``=``);
    ``team=payments`` is not taken for one."""
    return _DN_START.match(text) is not None


def looks_like_kerberos(text: str) -> bool:
    return _KRB_NAME.fullmatch(text) is not None


def principal_type(text: str, given: PrincipalType | None = None) -> PrincipalType:
    """Which mapper a ``--principal`` goes through: given, or the only one the text fits; never guessed."""
    if given is not None:
        return given
    dn, krb = looks_like_dn(text), looks_like_kerberos(text)
    if dn and krb:
        raise PrincipalError(f"principal {text!r} could be a DN or a Kerberos name: say which", needs="principal-type")
    if dn:
        return "ssl"
    if krb:
        return "kerberos"
    raise PrincipalError(
        f"principal {text!r} is neither a DN (CN=...,O=...) nor a Kerberos name (svc@REALM, svc/host@REALM)"
    )


def _split_unescaped(text: str, seps: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if c in seps:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def rfc2253(dn: str) -> str:
    """The DN as ``X500Principal.getName()`` prints it, which is what the broker's rules see: spaces around ``,``
    and ``=`` dropped, attribute keywords upper-cased. Refused (:class:`PrincipalError`) when that is not certain:
    quoted or hex values, ``#`` values, multi-valued RDNs (``+``), ``;`` separators, keywords RFC 2253 does not
    print by name (``EMAILADDRESS``, OIDs), a backslash before anything but a special character, non-ASCII."""
    if not dn.isascii():
        raise UnsupportedPrincipal(f"DN {dn!r}: only ASCII DNs are supported")
    if '"' in dn or ";" in dn:
        raise UnsupportedPrincipal(f"DN {dn!r}: quotes and ';' are not supported; give the DN as the broker logs it")
    out = []
    for rdn in _split_unescaped(dn, ","):
        if len(_split_unescaped(rdn, "+")) > 1:
            raise UnsupportedPrincipal(f"DN {dn!r}: multi-valued RDNs ('+') are not supported")
        key, sep, value = rdn.partition("=")
        key = key.strip(" ")
        if not sep or key.upper() not in RFC2253_KEYWORDS:
            raise UnsupportedPrincipal(
                f"DN {dn!r}: attribute {key!r} is not one RFC 2253 prints by name "
                f"({', '.join(sorted(RFC2253_KEYWORDS))}); give the DN as the broker logs it"
            )
        value = value.lstrip(" ")
        while value.endswith(" ") and not value.endswith("\\ "):
            value = value[:-1]
        if not value or "#" in value or value.startswith("\\ ") or value.endswith("\\ "):
            raise UnsupportedPrincipal(f"DN {dn!r}: the value of {key} is empty or has a form that is not supported")
        i = 0
        while i < len(value):
            if value[i] == "\\":
                if i + 1 >= len(value) or value[i + 1] not in ',+"\\<>;=':
                    raise UnsupportedPrincipal(f'DN {dn!r}: only \\ before , + " \\ < > ; = is supported')
                i += 2
            elif value[i] in "=<>":
                raise UnsupportedPrincipal(f"DN {dn!r}: an unescaped {value[i]!r} in a value is not supported")
            else:
                i += 1
        out.append(f"{key.upper()}={value}")
    return ",".join(out)


@dataclass(frozen=True)
class PrincipalMapping:
    """A principal, what the broker's rules see, and the user name they give."""

    principal: str
    kind: PrincipalType
    seen: str  # the DN as RFC 2253 prints it, or the Kerberos name as given
    user: str
    rules: str
    source: str = ""

    def describe(self) -> str:
        shown = (
            self.principal if self.seen == self.principal else f"{self.principal} (as the broker sees it: {self.seen})"
        )
        where = f" ({self.source})" if self.source else ""
        return f"principal {shown} -> user {self.user!r} by {self.kind} rules {self.rules}{where}"

    def to_json(self) -> dict[str, str]:
        return {
            "principal": self.principal,
            "type": self.kind,
            "as_seen": self.seen,
            "user": self.user,
            "rules": self.rules,
            "rules_from": self.source,
        }


def map_principal(
    principal: str,
    *,
    kind: PrincipalType | None = None,
    ssl_rules: SslRules | None = None,
    kerberos_rules: KerberosRules | None = None,
) -> PrincipalMapping:
    """The quota user name of ``principal`` (absent rules: the broker defaults, ``DEFAULT``)."""
    kind = principal_type(principal, kind)
    if kind == "ssl":
        rules = ssl_rules or SslRules.parse(None)
        seen = rfc2253(principal)
        return PrincipalMapping(principal, kind, seen, rules.short_name(seen), str(rules))
    krules = kerberos_rules or KerberosRules.parse(None)
    return PrincipalMapping(principal, kind, principal, krules.short_name(principal), str(krules))


# -- the broker's settings -----------------------------------------------------------------------------------------

SSL_RULES_CONFIG = "ssl.principal.mapping.rules"
KERBEROS_RULES_CONFIG = "sasl.kerberos.principal.to.local.rules"
SUPER_USERS_CONFIG = "super.users"
PRINCIPAL_BUILDER_CONFIG = "principal.builder.class"
DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
PRINCIPAL_CONFIGS = (SSL_RULES_CONFIG, KERBEROS_RULES_CONFIG, SUPER_USERS_CONFIG, PRINCIPAL_BUILDER_CONFIG)


def super_user_names(value: str | None) -> tuple[str, ...]:
    """The user names of ``super.users`` (``User:alice;User:bob``, split on ``;`` as the authorizers do; other
    principal types are not quota users)."""
    names = []
    for item in (value or "").split(";"):
        kind, sep, name = item.strip().partition(":")
        if sep and kind == "User" and name:
            names.append(name)
    return tuple(names)


@dataclass(frozen=True)
class BrokerPrincipals:
    """What a cluster says about principals: its mapping rules (as parsed), its super users, and where each came
    from (for people: ``--ssl-principal-mapping-rules``, ``broker 1's configs``...)."""

    ssl: SslRules
    kerberos: KerberosRules
    super_users: tuple[str, ...] = ()
    ssl_source: str = "Kafka's default"
    kerberos_source: str = "Kafka's default"
    super_users_source: str | None = None  # None: super.users was not read
    inter_broker_user: str | None = None  # the brokers' own user name, when known
    super_users_hidden: bool = False  # the broker answered super.users without its value (DescribeConfigs does)
    principal_builder: str | None = None  # a custom principal.builder.class: its names are its own

    @classmethod
    def of(
        cls,
        configs: dict[str, str | None],
        where: str | None,
        *,
        ssl_rules: str | None = None,
        kerberos_rules: str | None = None,
        kerberos_realm: str | None = None,
        inter_broker_user: str | None = None,
    ) -> BrokerPrincipals:
        """Rules given (``ssl_rules``/``kerberos_rules``) win over the broker's ``configs`` read from ``where``
        (None: no broker was read, and a rule list neither given nor read is refused when used); read but absent,
        the broker's own default (``DEFAULT``) applies, as on a broker that sets none."""

        def pick(given: str | None, name: str) -> tuple[str | None, str]:
            if given is not None:
                return given, f"{name} as given"
            if where is None:
                return None, ""
            if name in configs:
                return configs[name], where
            return None, f"{where}: not set, Kafka's default"

        ssl_text, ssl_source = pick(ssl_rules, SSL_RULES_CONFIG)
        krb_text, krb_source = pick(kerberos_rules, KERBEROS_RULES_CONFIG)
        builder = configs.get(PRINCIPAL_BUILDER_CONFIG)
        return cls(
            SslRules.parse(ssl_text),
            KerberosRules.parse(krb_text, kerberos_realm),
            super_user_names(configs.get(SUPER_USERS_CONFIG)),
            ssl_source,
            krb_source,
            where,
            inter_broker_user,
            SUPER_USERS_CONFIG in configs and configs[SUPER_USERS_CONFIG] is None,
            builder if builder and builder != DEFAULT_PRINCIPAL_BUILDER else None,
        )

    def map(self, principal: str, kind: PrincipalType | None = None) -> PrincipalMapping:
        """The mapping of ``principal``; refused when its rules were neither given nor read from a broker."""
        kind = principal_type(principal, kind)
        if self.principal_builder is not None:
            raise PrincipalError(
                f"the brokers use principal.builder.class={self.principal_builder}: the user names it gives are "
                "its own, not the mapping rules'; name the user",
                needs="user",
            )
        source = self.ssl_source if kind == "ssl" else self.kerberos_source
        if not source:
            config = SSL_RULES_CONFIG if kind == "ssl" else KERBEROS_RULES_CONFIG
            raise PrincipalError(
                f"principal {principal!r}: the broker's {config} are not known here (DEFAULT if the brokers set "
                "none; live commands read them from the cluster): give them",
                needs="ssl-rules" if kind == "ssl" else "kerberos-rules",
            )
        found = map_principal(principal, kind=kind, ssl_rules=self.ssl, kerberos_rules=self.kerberos)
        return dataclasses.replace(found, source=source)

    def protected_users(self) -> tuple[str, ...]:
        """Users a default quota must not capture: the super users and the brokers' own user."""
        extra = (self.inter_broker_user,) if self.inter_broker_user else ()
        return tuple(dict.fromkeys((*self.super_users, *extra)))
