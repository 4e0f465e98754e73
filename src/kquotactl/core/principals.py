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
without it a rule list that reaches ``DEFAULT`` is refused rather than guessed. And a DN is first rewritten by
:func:`rfc2253` the way ``X500Principal.getName()`` prints it, which is what ``DefaultKafkaPrincipalBuilder`` hands
the mapper: a DN as the broker prints it (escapes included) stays as it is, another spelling
(``cn=svc-a, ou=payments``) becomes the broker's, one X500Principal refuses is refused (:class:`InvalidDn`).
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

#: The attribute keywords ``X500Principal.getName()`` (RFC 2253) prints by name, and the OIDs it reads as them.
RFC2253_KEYWORDS: dict[str, str] = {
    "CN": "2.5.4.3",
    "C": "2.5.4.6",
    "L": "2.5.4.7",
    "ST": "2.5.4.8",
    "O": "2.5.4.10",
    "OU": "2.5.4.11",
    "STREET": "2.5.4.9",
    "DC": "0.9.2342.19200300.100.1.25",
    "UID": "0.9.2342.19200300.100.1.1",
}
_BY_OID = {oid: name for name, oid in RFC2253_KEYWORDS.items()}
#: Keywords X500Principal reads but prints as an OID with the value's DER in hex (an IA5String: the DER is certain).
_EMAIL_OID = "1.2.840.113549.1.9.1"
#: DER string types RFC 2253 prints as text (UTF8String, PrintableString, IA5String) and a type it prints in hex.
_DER_TEXT = frozenset({0x0C, 0x13, 0x16})
_DER_OCTETS = 0x04
_SPECIALS = ',=+<>#;"\\'
_HEX = "0123456789abcdefABCDEF"


class InvalidDn(PrincipalError):
    """``X500Principal`` refuses this DN: no certificate the broker maps has it."""


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


def rfc2253(dn: str) -> str:
    """The DN the broker's rules see: as given when it is one ``X500Principal.getName()`` prints
    (:func:`printed_by_x500`: the broker's own log line), else as ``new X500Principal(dn).getName()`` prints it:
    spaces around ``,`` ``+`` ``=`` dropped, keywords upper-cased (their OIDs named), ``;`` read as ``,``, quotes
    and ``\\HH`` escapes resolved, values re-escaped (``,=+<>#;"\\``; a leading or trailing space or CR as
    ``\\ ``), multi-valued RDNs kept in order, ``#`` hex values printed as text for string types, EMAILADDRESS
    printed as its OID and DER. A DN X500Principal refuses raises :class:`InvalidDn`; what kquotactl cannot
    reproduce for certain (non-ASCII, other keywords and OIDs, other DER types) :class:`UnsupportedPrincipal`."""
    if not dn.isascii():
        raise UnsupportedPrincipal(f"DN {dn!r}: only ASCII DNs are supported")
    if printed_by_x500(dn):
        return dn
    return ",".join("+".join(_DnParser(ava, dn).ava() for ava in _split_rdn(rdn, dn)) for rdn in _split_dn(dn))


_OID = re.compile(r"[0-9]+(\.[0-9]+)+")
_HEX_VALUE = re.compile(r"#((?:[0-9a-f]{2})+)")


def printed_by_x500(dn: str) -> bool:
    """Whether ``dn`` is exactly what ``X500Principal.getName()`` prints for some certificate subject: then it is
    what the broker's mapper sees, as it is. (X500Principal's own parser misreads some of its output, a ``\\\\``
    before a later ``,`` for one, so such a DN must not go through it again.)"""
    out: list[str] = []
    i, n = 0, len(dn)
    while True:
        eq = dn.find("=", i)
        if eq < 0:
            return False
        key = dn[i:eq]
        named = key in RFC2253_KEYWORDS
        if not named and not _OID.fullmatch(key):
            return False
        i = eq + 1
        if not named or dn.startswith("#", i):
            m = _HEX_VALUE.match(dn, i)
            if m is None or (named and bytes.fromhex(m.group(1))[0] in _DER_TEXT):
                return False  # X500Principal prints a string type as text
            value = m.group(0)
            i = m.end()
        else:
            chars = []
            while i < n and dn[i] not in ",+":
                if dn[i] == "\\":
                    if i + 1 >= n:
                        return False
                    i += 1
                chars.append(dn[i])
                i += 1
            value = _rfc2253_value("".join(chars))
        out.append(f"{key}={value}")
        if i == n:
            return "".join(out) == dn
        out.append(dn[i])
        i += 1


def _count_quotes(text: str, start: int, end: int) -> int:
    """``X500Name.countQuotes``: the ``"`` not right after a backslash."""
    return sum(1 for i in range(start, end) if text[i] == '"' and (i == start or text[i - 1] != "\\"))


def _escaped(end: int, offset: int, text: str) -> bool:
    """``X500Name.escaped``: whether the separator at ``end`` is escaped. After two backslashes it counts every
    backslash from ``offset`` (the search's start), not only the adjacent ones, as Kafka's JDKs do."""
    if end >= 1 and text[end - 1] == "\\" and (end == 1 or text[end - 2] != "\\"):
        return True
    if end > 1 and text[end - 1] == "\\" and text[end - 2] == "\\":
        return text[offset:end].count("\\") % 2 == 1
    return False


def _split_dn(dn: str) -> list[str]:
    """``X500Name.parseDN``'s RDN strings: split at ``,`` and ``;`` unless (by its reckoning) escaped or quoted."""
    rdns: list[str] = []
    start = offset = quotes = 0
    while True:
        ends = [e for e in (dn.find(",", offset), dn.find(";", offset)) if e >= 0]
        if not ends:
            break
        end = min(ends)
        quotes += _count_quotes(dn, offset, end)
        if quotes != 1 and not _escaped(end, offset, dn):
            rdns.append(dn[start:end])
            start, quotes = end + 1, 0
        offset = end + 1
    rdns.append(dn[start:])
    return rdns


def _split_rdn(rdn: str, dn: str) -> list[str]:
    """``RDN(String)``'s AVA strings: split at ``+`` unless right after a backslash or quoted; none may be empty."""
    avas: list[str] = []
    start = offset = quotes = 0
    while (plus := rdn.find("+", offset)) >= 0:
        quotes += _count_quotes(rdn, offset, plus)
        if plus > 0 and rdn[plus - 1] != "\\" and quotes != 1:
            avas.append(rdn[start:plus])
            start, quotes = plus + 1, 0
        offset = plus + 1
    avas.append(rdn[start:])
    if any(not a for a in avas):
        raise InvalidDn(f"DN {dn!r}: X500Principal refuses it (an empty attribute)")
    return avas


class _DnParser:
    """``AVA``'s string parser (the default format) over one attribute string of :func:`_split_rdn`: it stops at the
    value's end and ignores whatever follows, as ``AVA`` does."""

    def __init__(self, text: str, dn: str) -> None:
        self.dn = text
        self.whole = dn
        self.i = 0

    def invalid(self) -> InvalidDn:
        return InvalidDn(f"DN {self.whole!r}: X500Principal refuses it (improperly specified input name)")

    def unsupported(self, why: str) -> UnsupportedPrincipal:
        return UnsupportedPrincipal(f"DN {self.whole!r}: {why}; give the DN as the broker logs it")

    def peek(self) -> str:
        return self.dn[self.i] if self.i < len(self.dn) else ""

    def ava(self) -> str:
        end = self.dn.find("=")
        if end < 0:
            raise self.invalid()
        keyword = _java_trim(self.dn[:end])
        self.i = end + 1
        upper = keyword.upper()
        oid = upper[4:] if upper.startswith("OID.") else upper
        if upper in RFC2253_KEYWORDS:
            name = upper
        elif oid in _BY_OID:
            name = _BY_OID[oid]
        elif upper in ("EMAILADDRESS", _EMAIL_OID) or oid == _EMAIL_OID:
            name = _EMAIL_OID
        elif not keyword:
            raise self.invalid()
        else:
            raise self.unsupported(
                f"attribute {keyword!r} is printed as an OID and hex; kquotactl reads "
                f"{', '.join(sorted(RFC2253_KEYWORDS))} and EMAILADDRESS"
            )
        while self.peek() in (" ", "\n"):
            self.i += 1
        if self.peek() == "":  # nothing after '=': DerValue(""), a PrintableString
            tag, text, der = 0x13, "", b"\x13\x00"
        elif self.peek() == "#":
            tag, text, der = self.hex_value()
        else:
            text = self.quoted() if self.peek() == '"' else self.unquoted()
            tag, der = 0x16, b""
            if name == _EMAIL_OID:
                if not text:
                    raise self.unsupported("an empty EMAILADDRESS value")
                raw = text.encode("ascii")
                if len(raw) > 127:
                    raise self.unsupported("an EMAILADDRESS longer than 127 characters")
                der = bytes([0x16, len(raw)]) + raw
        if name == _EMAIL_OID or tag not in _DER_TEXT:
            return f"{name}=#{der.hex()}"
        return f"{name}={_rfc2253_value(text)}"

    def hex_value(self) -> tuple[int, str, bytes]:
        self.i += 1
        start = self.i
        while self.peek() and self.peek() in _HEX:
            self.i += 1
        digits = self.dn[start : self.i]
        if self.peek() not in ("", ",", ";", "+") or not digits or len(digits) % 2:
            raise self.invalid()
        der = bytes.fromhex(digits)
        if len(der) < 2 or der[1] != len(der) - 2:
            if len(der) >= 2 and der[1] & 0x80:
                raise self.unsupported("a DER value with a long-form length")
            raise self.invalid()
        tag = der[0]
        if tag in _DER_TEXT:
            try:
                text = der[2:].decode("ascii")
            except UnicodeDecodeError:
                raise self.unsupported("a non-ASCII DER string") from None
            return tag, text, der
        if tag != _DER_OCTETS:
            raise self.unsupported(f"a DER value of type 0x{tag:02x}")
        return tag, "", der

    def escape(self, quoted: bool) -> tuple[str, bool]:
        """After a backslash: the character it stands for, and whether it came from hex pairs."""
        c = self.peek()
        if (c and c in _SPECIALS) or (c == " " and not quoted):
            self.i += 1
            return c, False
        pair = self.dn[self.i : self.i + 2]
        if len(pair) == 2 and all(h in _HEX for h in pair):
            self.i += 2
            byte = int(pair, 16)
            if byte >= 0x80:
                raise self.unsupported("a \\HH escape of a non-ASCII byte")
            return chr(byte), True
        if c == "" or c in _HEX or c == " " or (c < " " and c != "\n"):
            raise self.invalid()
        raise self.unsupported(f"a backslash before {c!r}")

    def quoted(self) -> str:
        self.i += 1
        out: list[str] = []
        while True:
            c = self.peek()
            if c == "":
                raise self.invalid()
            self.i += 1
            if c == '"':
                break
            if c == "\\":
                text, from_hex = self.escape(quoted=True)
                if from_hex and (" " in self.dn or "\t" in self.dn):
                    raise self.unsupported("a \\HH escape in a quoted value with blanks")
                out.append(text)
            elif c < " " or c == "\x7f":
                raise self.unsupported("a control character in a quoted value")
            else:
                out.append(c)
        while self.peek() in (" ", "\n"):
            self.i += 1
        if self.peek():
            raise self.invalid()
        return "".join(out).strip(" ")

    def unquoted(self) -> str:
        """Plain spaces wait until a character follows them (trailing ones are dropped); ``\\HH`` characters wait
        for the next character, and are put after the waiting spaces then, or kept alone at the end (X500Name's
        order: ``a \\41`` reads ``aA``, ``a \\41b`` reads ``a Ab``)."""
        out: list[str] = []
        spaces = 0
        hexed = ""
        while True:
            c = self.peek()
            if c in ("", ",", ";", "+"):
                break
            self.i += 1
            if c in '"<>':
                raise self.invalid()
            text, from_hex = self.escape(quoted=False) if c == "\\" else (c, False)
            if from_hex:
                hexed += text
                continue
            if hexed:
                out.append(" " * spaces + hexed)
                spaces, hexed = 0, ""
            if c == " ":
                spaces += 1
            else:
                out.append(" " * spaces + text)
                spaces = 0
        return "".join(out) + hexed


def _rfc2253_value(text: str) -> str:
    """``AVA.toRFC2253String`` of a text value: specials escaped, NUL as ``\\00``, a leading or trailing space or
    CR escaped."""
    chars = ["\\00" if c == "\0" else ("\\" + c if c in _SPECIALS else c) for c in text]
    lead = 0
    while lead < len(text) and text[lead] in " \r":
        lead += 1
    trail = len(text) - 1
    while trail >= 0 and text[trail] in " \r":
        trail -= 1
    return "".join("\\" + ch if (i < lead or i > trail) else ch for i, ch in enumerate(chars))


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
