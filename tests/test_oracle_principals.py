"""Differential: kquotactl's principal mapping against Kafka's ``SslPrincipalMapper``, ``KerberosShortNamer`` /
``KerberosName``, ``ConfigDef``'s LIST parsing and ``X500Principal.getName()`` (Kafka 3.9 and 4.1 jars).

Random rule lists and names; the mapped name, "no rule applies", "the broker fails while mapping" and "Kafka
rejects the rules" must all agree. Where kquotactl refuses a regex or DN it cannot reproduce exactly
(:class:`UnsupportedRegex`, :class:`UnsupportedPrincipal`) any Kafka outcome is accepted, but such cases must
stay a minority so the comparison means something.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fixtures_oracle import NEWEST_VERSION, ORACLE_VERSIONS, assert_no_mismatches, random_cases, replay_hint
from kquotactl.core.javaregex import UnsupportedRegex
from kquotactl.core.principals import (
    InvalidDn,
    InvalidRules,
    KerberosRules,
    NoMatchingRule,
    PrincipalError,
    SslRules,
    UnsupportedPrincipal,
    map_principal,
    principal_type,
    printed_by_x500,
    rfc2253,
)
from kquotactl.testing.oracle import cases_per_run

VERSIONS = [v for v in ORACLE_VERSIONS if v >= "3.9"]
UNSUPPORTED = (UnsupportedRegex, UnsupportedPrincipal)
SKIP = "unsupported"

# -- generators --------------------------------------------------------------------------------------------------

_ATOMS = [
    "a",
    "b",
    "C",
    "N",
    "=",
    ",",
    ".",
    ".*",
    ".*?",
    ".+",
    "[a-z]",
    "[^,]",
    "[^,]+",
    "[A-Z]*",
    "\\w",
    "\\d",
    "\\s",
    "\\W",
    "\\.",
    "\\,",
    "-",
    " ",
    "x",
    "O",
    "U",
    "[,=]",
    "[a-]",
    "\\\\",
    "$",
    "^",
    "@",
    "\\/",
    "|",
    "(",
    ")",
    "(?:",
    "(?<n>",
    "(?=a)",
    "{2}",
    "{1,3}",
    "*",
    "+",
    "?",
    "??",
    "*?",
    "[",
    "]",
    "\\Q",
    "\\b",
    "\\1",
    "[z-a]",
    "{",
]


def _regex(rng: random.Random, no_paren: bool = False, no_slash: bool = False) -> str:
    if rng.random() < 0.6:  # well-formed, the common shapes of mapping rules
        key = rng.choice(["CN", "OU", "O", "C"])
        body = rng.choice(["(.*?)", "([^,]*)", "(.*)", "([a-z]+)", "(?<n>[^,]+)", ".*"])
        tail = rng.choice(["", ",(.*)", ",OU=(.*?)", ".*", "(,.*)?", ",O=acme", ""])
        text = f"{rng.choice(['', '^'])}{key}={body}{tail}{rng.choice(['', '$'])}"
    else:
        text = "".join(rng.choice(_ATOMS) for _ in range(rng.randint(0, 7)))
    if no_paren:
        text = text.replace(")", "")
    if no_slash:
        text = text.replace("/", "")
    return text


def _replacement(rng: random.Random) -> str:
    parts = ["$1", "$2", "$0", "$12", "$9", "${n}", "${x}", "\\$", "\\", "$", "a", "-", "@X", ".", "\\/", "${", "L"]
    return "".join(rng.choice(parts) for _ in range(rng.randint(0, 4)))


def _ssl_rule(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.15:
        return rng.choice(["DEFAULT", " DEFAULT ", "DEFAULTx", "default", ""])
    if r < 0.2:
        return rng.choice(["RULE:", "RULE:a/b", "RULE:a/b/c", "RULE:a/b/LL", "junk", "RULE:a\\/b/c/"])
    return f"RULE:{_regex(rng)}/{_replacement(rng)}/{rng.choice(['', '', 'L', 'U', 'X', 'L '])}"


def _ssl_rules(rng: random.Random) -> str:
    rules = [_ssl_rule(rng) for _ in range(rng.randint(0, 3))]
    sep = rng.choice([",", ", ", " ,", ",\n", ",,"])
    return rng.choice(["", " ", "\t"]) + sep.join(rules) + rng.choice(["", " ", ",", "\n"])


def _dn(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return "".join(rng.choice("aCN=,O U\\.$@/-\n") for _ in range(rng.randint(0, 10)))
    rdns = []
    for i in range(rng.randint(1, 4)):
        key = "CN" if i == 0 and rng.random() < 0.6 else rng.choice(["CN", "OU", "O", "C", "L", "DC", "UID"])
        value = "".join(rng.choice("abcXYZ09-_. ") for _ in range(rng.randint(1, 8))).strip() or "v"
        value = value.replace(" ", rng.choice([" ", "\\,", "x", "\\+", "\\\\", "\\#"]))
        if rng.random() < 0.2:  # as X500Principal prints a value's leading or trailing blank
            value = rng.choice(["\\ " + value, value + "\\ "])
        rdns.append(f"{key}={value}")
    return "".join(r + rng.choice([",", ",", ",", "+"]) for r in rdns[:-1]) + rdns[-1]


def _krb_rule(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.2:
        return rng.choice(["DEFAULT", "DEFAULT/L", "DEFAULTL", "", "RULE:[1]", "RULE:[:$1]", "RULE:[x:$1]"])
    n = rng.choice(["1", "2", "1", "2", "0", "3", ""])
    fmt = "".join(
        rng.choice(["$1", "$0", "$2", "@", ".", "x", "$", "$3", "$01", "]"]) for _ in range(rng.randint(0, 3))
    )
    text = f"RULE:[{n}:{fmt}]"
    if rng.random() < 0.6:
        text += f"({_regex(rng, no_paren=True)})"
    if rng.random() < 0.6:
        text += f"s/{_regex(rng, no_slash=True)}/{_replacement(rng).replace('/', '')}/{rng.choice(['', 'g'])}"
    return text + rng.choice(["", "", "/L", "L", "/", "//"])


def _krb_name(rng: random.Random) -> str:
    svc = rng.choice(["svc", "kafka", "Svc-A", "a.b", "", "x$1"])
    host = rng.choice([None, None, "host1", "h.example.com", ""])
    realm = rng.choice(["EXAMPLE.COM", "EXAMPLE.COM", "OTHER.ORG", "", None])
    if rng.random() < 0.08:
        return rng.choice(["a@b@c", "a/b/c@R", "a/b", "@", "/@", "a@"])
    return svc + (f"/{host}" if host is not None else "") + (f"@{realm}" if realm is not None else "")


# -- outcomes ----------------------------------------------------------------------------------------------------


def _kafka_answer(answer: dict[str, Any]) -> Any:
    if "error" in answer:
        return "invalid-rules"
    return [
        {"name": a["name"]} if "name" in a else ("no-rule" if a["error"] == "NoMatchingRule" else "fails")
        for a in answer["out"]
    ]


def _ours(parse: Any, names: list[str], short_name: Any) -> Any:
    try:
        rules = parse()
    except UNSUPPORTED:
        return SKIP
    except InvalidRules:
        return "invalid-rules"
    out: list[Any] = []
    for name in names:
        try:
            out.append({"name": short_name(rules, name)})
        except UNSUPPORTED:
            out.append(SKIP)
        except NoMatchingRule:
            out.append("no-rule")
        except PrincipalError:
            out.append("fails")
    return out


def _agree(ours: Any, kafka: Any) -> bool:
    if ours == SKIP:
        return True
    if isinstance(ours, list) and isinstance(kafka, list):
        return all(o in (SKIP, k) for o, k in zip(ours, kafka, strict=True))
    return bool(ours == kafka)


def _compare(cases: list[Any], ours: list[Any], kafka: list[Any], seed: int, version: str) -> None:
    shown = [(c, o, k) for c, o, k in zip(cases, ours, kafka, strict=True) if not _agree(o, k)]
    assert not shown, f"{replay_hint(seed, version)}: {shown[:5]}"
    flat = [x for o in ours for x in (o if isinstance(o, list) else [o])]
    skipped = sum(1 for x in flat if x == SKIP) / max(1, len(flat))
    assert skipped < 0.5, f"{replay_hint(seed, version)}: {skipped:.0%} of the cases were refused as unsupported"


@pytest.mark.jvm
@pytest.mark.parametrize("version", VERSIONS)
def test_ssl_mapper_matches_kafka(kafka_oracle, oracle_seed, version):
    def make(rng: random.Random) -> tuple[str, list[str]]:
        return _ssl_rules(rng), [_dn(rng) for _ in range(4)]

    cases = random_cases(oracle_seed, make)
    kafka = kafka_oracle(version, "PrincipalOracle").ask_many(
        [{"op": "ssl", "rules": rules, "names": names} for rules, names in cases]
    )
    ours = [_ours(lambda r=rules: SslRules.parse(r), names, SslRules.short_name) for rules, names in cases]
    _compare(cases, ours, [_kafka_answer(a) for a in kafka], oracle_seed, version)


@pytest.mark.jvm
@pytest.mark.parametrize("version", VERSIONS)
def test_kerberos_namer_matches_kafka(kafka_oracle, oracle_seed, version):
    def make(rng: random.Random) -> tuple[list[str], list[str]]:
        return [_krb_rule(rng) for _ in range(rng.randint(0, 3))], [_krb_name(rng) for _ in range(4)]

    cases = random_cases(oracle_seed, make)
    kafka = kafka_oracle(version, "PrincipalOracle").ask_many(
        [{"op": "kerberos", "rules": rules, "realm": "EXAMPLE.COM", "names": names} for rules, names in cases]
    )
    ours = [
        _ours(lambda r=rules: KerberosRules.parse_list(r, "EXAMPLE.COM"), names, KerberosRules.short_name)
        for rules, names in cases
    ]
    _compare(cases, ours, [_kafka_answer(a) for a in kafka], oracle_seed, version)


@pytest.mark.jvm
@pytest.mark.parametrize("version", VERSIONS)
def test_kerberos_rule_list_splits_as_configdef(kafka_oracle, oracle_seed, version):
    def make(rng: random.Random) -> str:
        return "".join(
            rng.choice(["DEFAULT", ",", " ", "\t", "RULE:[1:$1]", ", ", "x"]) for _ in range(rng.randint(0, 6))
        )

    cases = random_cases(oracle_seed, make)
    kafka = kafka_oracle(version, "PrincipalOracle").ask_many([{"op": "list", "s": s} for s in cases])
    ours = []
    for s in cases:
        try:
            ours.append([str(r) for r in KerberosRules.parse(s).rules])
        except InvalidRules:
            ours.append(None)
    # compare the split, not the parse: parse each Kafka piece the same way
    theirs = []
    for answer in kafka:
        try:
            theirs.append([str(r) for r in KerberosRules.parse_list(answer["out"]).rules])
        except InvalidRules:
            theirs.append(None)
    assert_no_mismatches(cases, ours, theirs, oracle_seed, version)


#: value pieces X500Principal reads, and some it refuses (a DN with one is refused as a whole)
_SAFE = [
    "a",
    "b",
    "X",
    "0",
    "-",
    "_",
    ".",
    "@",
    " ",
    " ",
    "=",
    "#",
    "\\ ",
    "\\,",
    "\\+",
    "\\;",
    "\\=",
    "\\#",
    "\\<",
    "\\>",
    '\\"',
    "\\\\",
    "\\20",
    "\\2c",
    "\\41",
    "\\0d",
    "\t",
]
_BAD = ["\\a", "\\", "<", '"']


def _dn_value(rng: random.Random) -> str:
    """A value as typed or printed: plain, escaped (leading/trailing blanks, specials, \\HH), quoted or hex."""
    r = rng.random()
    if r < 0.12:  # hex-encoded DER: string types (printed as text), an OCTET STRING (printed in hex), bad lengths
        body = "".join(rng.choice("abXY09 ,+") for _ in range(rng.randint(0, 5))).encode()
        tag = rng.choice([0x0C, 0x13, 0x16, 0x04, 0x04, 0x02])
        length = len(body) + (rng.choice([1, -1]) if rng.random() < 0.1 else 0)
        text = bytes([tag, max(length, 0)]).hex() + body.hex()
        return "#" + (text.upper() if rng.random() < 0.3 else text) + ("x" if rng.random() < 0.05 else "")
    if r < 0.22:  # quoted
        pieces = ["a", "b", " ", ",", "+", ";", "=", "#", "\\,", '\\"', "\\\\", "\\41", "<"]
        inner = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))
        return '"' + inner + '"' + rng.choice(["", "", " ", "  "]) + ("x" if rng.random() < 0.05 else "")
    atoms = _SAFE + _BAD if rng.random() < 0.1 else _SAFE
    parts = [rng.choice(atoms) for _ in range(rng.randint(0, 6))]
    return rng.choice(["", " ", "\\ "]) + "".join(parts) + rng.choice(["", "", " ", "\\ ", "  "])


def _dn_typed(rng: random.Random) -> str:
    """A DN as an operator may type it, or copy it from a broker's log."""
    rdns = []
    for _ in range(rng.randint(1, 4)):
        avas = []
        for _ in range(1 if rng.random() < 0.75 else rng.randint(2, 3)):  # '+': a multi-valued RDN
            key = rng.choice(["CN", "cn", "Ou", "O", "c", "DC", "uid", "street", "st", "L"])
            if rng.random() < 0.1:
                key = rng.choice(
                    ["EMAILADDRESS", "2.5.4.3", "OID.2.5.4.11", "0.9.2342.19200300.100.1.25", "E", "T", ""]
                )
            avas.append(rng.choice(["", " "]) + key + rng.choice(["=", " = ", "= "]) + _dn_value(rng))
        rdns.append(rng.choice(["+", " + "]).join(avas))
    return rng.choice([",", ", ", " , ", ",", ";", "; "]).join(rdns) + ("," if rng.random() < 0.05 else "")


@pytest.mark.jvm
@pytest.mark.parametrize("version", VERSIONS)
def test_dn_spelling_as_x500principal_prints_it(kafka_oracle, oracle_seed, version):
    """What the broker maps is ``X500Principal.getName()``: every DN it prints back as it is, every other spelling
    as it prints it, and the DNs it refuses refused alike."""
    cases = random_cases(oracle_seed, _dn_typed)
    kafka = kafka_oracle(version, "PrincipalOracle").ask_many([{"op": "x500", "s": s} for s in cases])
    refused = 0
    printed = []
    for dn, answer in zip(cases, kafka, strict=True):
        try:
            ours: Any = rfc2253(dn)
        except UnsupportedPrincipal:
            refused += 1
            continue
        except InvalidDn:
            ours = "invalid"
        if "out" in answer:
            printed.append(answer["out"])
        if printed_by_x500(dn):
            assert ours == dn, f"{replay_hint(oracle_seed, version)}: {dn!r} is as the broker prints it: {ours!r}"
            continue
        theirs = answer.get("out", "invalid")
        assert theirs == ours, f"{replay_hint(oracle_seed, version)}: {dn!r}: ours {ours!r}, {answer}"
    assert refused < len(cases) * 0.3, f"{replay_hint(oracle_seed, version)}: refused {refused} of {len(cases)}"
    assert len(printed) > len(cases) * 0.3  # most cases are DNs X500Principal reads
    # every DN as the broker prints it (what a user copies from its log) is known for one and kept as it is, also
    # where X500Principal would misread it (``\\\\`` before a later ``,`` or ``+``)
    missed = [p for p in printed if not printed_by_x500(p) or rfc2253(p) != p]
    assert not missed, f"{replay_hint(oracle_seed, version)}: {missed[:5]}"


@pytest.mark.jvm
@pytest.mark.parametrize("version", VERSIONS)
def test_typed_dns_map_as_the_broker_maps_the_certificate(kafka_oracle, oracle_seed, version):
    """``map_principal`` on a DN as typed = ``SslPrincipalMapper.getName(new X500Principal(dn).getName())``."""
    rng = random.Random(oracle_seed)
    cases = [(_ssl_rules(rng), _dn_typed(rng)) for _ in range(cases_per_run())]
    oracle = kafka_oracle(version, "PrincipalOracle")
    printed = oracle.ask_many([{"op": "x500", "s": dn} for _, dn in cases])
    # what the broker's mapper sees: the DN itself when it is one X500Principal prints, else what it prints for it
    kept = [
        (rules, dn, dn if printed_by_x500(dn) else p["out"])
        for (rules, dn), p in zip(cases, printed, strict=True)
        if "out" in p
    ]
    kafka = oracle.ask_many([{"op": "ssl", "rules": rules, "names": [seen]} for rules, _, seen in kept])

    def ours(rules: str, dn: str) -> Any:
        return _ours(
            lambda: SslRules.parse(rules),
            [dn],
            lambda parsed, name: map_principal(name, kind="ssl", ssl_rules=parsed).user,
        )

    _compare(
        [c[:2] for c in kept], [ours(r, d) for r, d, _ in kept], [_kafka_answer(a) for a in kafka], oracle_seed, version
    )
    assert len(kept) > len(cases) * 0.3


# -- hand-picked cases from Kafka's own tests (SslPrincipalMapperTest, KerberosNameTest, KerberosRuleTest) ------
# (the expected values were checked against Kafka 4.1's classes through the oracle)

SSL_CASES = [
    # (rules, DN, expected name or error class)
    ("DEFAULT", "CN=Duke,OU=JavaSoft,O=Sun Microsystems", "CN=Duke,OU=JavaSoft,O=Sun Microsystems"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1"),
    (
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
        "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US",
        "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US",
    ),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", "CN=KAFKA1,OU=ServiceUsers,O=Org,C=US", "kafka1"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U, DEFAULT", "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "KAFKA1"),
    (
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT",
        "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US",
        "duke@javasoft",
    ),
    ("RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/,DEFAULT", "CN=Some Name,OU=Org,C=US", "Some Name"),
    (
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
        "OU=JavaSoft,O=Sun Microsystems,C=US",
        "OU=JavaSoft,O=Sun Microsystems,C=US",
    ),
    ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT", "CN=Test User,OU=Engineering", "test"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=x,OU=Other", NoMatchingRule),
    ("RULE:^CN=(.*),OU=ServiceUsers.*$/$1\\/$1/,DEFAULT", "CN=a,OU=ServiceUsers,O=b", "a/a"),
    ("RULE:^CN=(.*)$/$1@$2$1/", "CN=x", "x@$2x"),  # $2 with one group is literal (escapeLiteralBackReferences)
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/T", None, InvalidRules),
    ("DEFAULT, RULE:^CN=(.*?)/$1/X", None, InvalidRules),
]


@pytest.mark.parametrize(("rules", "dn", "expected"), SSL_CASES)
def test_ssl_cases_from_kafka_tests(rules, dn, expected):
    if expected is InvalidRules:
        with pytest.raises(InvalidRules):
            SslRules.parse(rules)
        return
    parsed = SslRules.parse(rules)
    if isinstance(expected, type):
        with pytest.raises(expected):
            parsed.short_name(dn)
    else:
        assert parsed.short_name(dn) == expected


KERBEROS_RULES = [
    "RULE:[1:$1@$0](.*@FOO.COM)s/@.*//",
    "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g",
    "RULE:[2:$1](App\\..*)/L",
    "RULE:[2:$1@$0](.*@FOO.COM)s/@.*//L",
    "DEFAULT",
]
KERBEROS_CASES = [
    ("App.service-name/example.com@REALM.COM", "service-name"),
    ("App.SERVICE-name/example.com@REALM.COM", "SERVICE-name"),  # the rule without /L comes first
    ("User@REALM.COM", "User"),  # DEFAULT comes before the catch-all /L
    ("user@REALM.COM", "user"),
    ("ServiceName/host@FOO.COM", "servicename"),
    ("joe@FOO.COM", "joe"),
    ("service/host@REALM.COM", "service"),
    ("user", "user"),
]


@pytest.mark.parametrize(("principal", "expected"), KERBEROS_CASES)
def test_kerberos_cases_from_kafka_tests(principal, expected):
    rules = KerberosRules.parse_list([*KERBEROS_RULES, "RULE:[1:$1](.*)/L"], "REALM.COM")
    assert rules.short_name(principal) == expected


def test_kerberos_default_needs_the_brokers_realm():
    with pytest.raises(PrincipalError, match="default realm"):
        KerberosRules.parse("DEFAULT").short_name("svc@EXAMPLE.COM")
    assert KerberosRules.parse("DEFAULT", "EXAMPLE.COM").short_name("svc/h@EXAMPLE.COM") == "svc"
    with pytest.raises(NoMatchingRule):
        KerberosRules.parse("DEFAULT", "EXAMPLE.COM").short_name("svc@OTHER")
    with pytest.raises(PrincipalError, match="non-simple"):
        KerberosRules.parse("RULE:[1:$1@$0]", "R").short_name("a@R")


def test_principal_type_is_never_guessed():
    assert principal_type("CN=svc-a,OU=payments,O=acme") == "ssl"
    assert principal_type("svc-a@EXAMPLE.COM") == "kerberos"
    assert principal_type("svc/host@EXAMPLE.COM") == "kerberos"
    with pytest.raises(PrincipalError, match="could be a DN or a Kerberos name: say which") as refused:
        principal_type("CN=svc@EXAMPLE.COM")
    assert refused.value.needs == "principal-type"  # the CLI names --principal-type (cli/errorwords.py)
    assert principal_type("CN=svc@EXAMPLE.COM", "kerberos") == "kerberos"
    with pytest.raises(PrincipalError, match="neither"):
        principal_type("svc-a")


def test_map_principal_rewrites_the_dn_spelling():
    m = map_principal("cn=svc-a, ou=payments, o=acme", ssl_rules=SslRules.parse("RULE:^CN=([^,]+),.*$/$1/"))
    assert (m.seen, m.user) == ("CN=svc-a,OU=payments,O=acme", "svc-a")
    assert "as the broker sees it" in m.describe()
    # EMAILADDRESS is printed as its OID and DER (an IA5String), as X500Principal prints it
    assert map_principal("EMAILADDRESS=a@b.c,CN=x", kind="ssl").seen == "1.2.840.113549.1.9.1=#16056140622e63,CN=x"
    with pytest.raises(UnsupportedPrincipal):
        map_principal("T=a,CN=x", kind="ssl")  # an attribute printed as an OID with a DER kquotactl does not build


@pytest.mark.parametrize(
    ("dn", "seen"),
    [
        ("CN=\\ x", "CN=\\ x"),  # an escaped leading blank, as the broker prints it
        ("CN=x\\ ,OU=a\\,b", "CN=x\\ ,OU=a\\,b"),
        ("CN=a+UID=b,O=c", "CN=a+UID=b,O=c"),  # a multi-valued RDN
        ('cn="a, b" ; o = c', "CN=a\\, b,O=c"),  # quotes and ';', as X500Principal reads them
        ("CN=#0c03616263,O=c", "CN=abc,O=c"),  # a hex-encoded UTF8String
        ("CN=\\ a\\\\,O=c", "CN=\\ a\\\\,O=c"),  # as printed: kept, where X500Principal reads "CN=\\ a\\\\"
        ("CN=\\41b\\\\,O=c", "CN=Ab\\\\"),  # typed: X500Principal's reading (three backslashes: ',' escaped)
    ],
)
def test_dns_as_the_broker_prints_them_map_as_sslprincipalmapper(dn, seen):
    m = map_principal(dn, kind="ssl", ssl_rules=SslRules.parse("RULE:^CN=(.*?)(,O=.*)?$/$1/"))
    assert m.seen == seen
    assert m.user == SslRules.parse("RULE:^CN=(.*?)(,O=.*)?$/$1/").short_name(seen)  # the rules see the escapes


# -- the regex layer on its own: java.util.regex.Pattern / Matcher.replaceAll / replaceFirst ----------------------


@pytest.mark.jvm
@pytest.mark.parametrize("version", [NEWEST_VERSION])  # the JVM's regex, whichever kafka-clients is on the class path
def test_java_regex_translation_matches_java(kafka_oracle, oracle_seed, version):
    from kquotactl.core.javaregex import InvalidRegex, compile_java, replace

    def make(rng: random.Random) -> tuple[str, str, list[str]]:
        texts = ["".join(rng.choice("abC=,.-@ \n\r$\\/x9") for _ in range(rng.randint(0, 8))) for _ in range(3)]
        return _regex(rng), _replacement(rng), [*texts, _dn(rng)]

    cases = random_cases(oracle_seed, make)
    kafka = kafka_oracle(version, "PrincipalOracle").ask_many(
        [{"op": "regex", "p": p, "r": r, "s": texts} for p, r, texts in cases]
    )

    def ours(p: str, r: str, texts: list[str]) -> Any:
        try:
            pattern = compile_java(p)
        except UnsupportedRegex:
            return SKIP
        except InvalidRegex:
            return "invalid-rules"
        out = []
        for t in texts:
            one: dict[str, Any] = {"matches": pattern.matches(t) is not None}
            for key, first in (("all", False), ("first", True)):
                try:
                    one[key] = replace(pattern, t, r, first_only=first)
                except InvalidRegex:
                    one[f"{key}_error"] = True
            out.append(one)
        return out

    def theirs(answer: dict[str, Any]) -> Any:
        if "error" in answer:
            return "invalid-rules"
        return [{k: (True if k.endswith("_error") else v) for k, v in a.items()} for a in answer["out"]]

    _compare(cases, [ours(*c) for c in cases], [theirs(a) for a in kafka], oracle_seed, version)
