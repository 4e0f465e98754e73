"""Read JAAS login configuration (the ``Client`` section for ZooKeeper, ``sasl.jaas.config`` for Kafka).

Only what kquotactl needs: the login module class and its ``key="value"`` options.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kquotactl.core.errors import UsageError
from kquotactl.core.wording import decoded

_ENTRY = re.compile(r"([A-Za-z0-9_.$-]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\s;]+)")
_SECTION = re.compile(r"([A-Za-z0-9_.-]+)\s*\{(.*?)\}\s*;", re.S)


@dataclass
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str]

    def __repr__(self) -> str:  # never show secrets
        return f"LoginModule({self.class_name!r}, options={sorted(self.options)})"


def parse_module(text: str) -> LoginModule:
    """Parse one ``com.x.LoginModule required k="v" k2="v2";`` entry."""
    text = text.strip().rstrip(";").strip()
    parts = text.split(None, 2)
    if len(parts) < 2:
        raise UsageError("cannot parse JAAS login module entry (expected '<LoginModule> required k=\"v\" ...;')")
    options = {}
    for m in _ENTRY.finditer(parts[2] if len(parts) > 2 else ""):
        v = m.group(2)
        if v[:1] in "\"'" and v[-1:] == v[:1]:
            v = re.sub(r"\\(.)", r"\1", v[1:-1])
        options[m.group(1)] = v
    return LoginModule(parts[0], parts[1], options)


def read_section(path: str | Path, section: str) -> LoginModule:
    try:
        text = decoded(Path(path).read_bytes())
    except OSError as e:
        raise UsageError(f"cannot read JAAS file {str(path)!r}: {e.strerror or e}") from None
    except ValueError as e:  # not UTF-8: which byte, where
        raise UsageError(f"JAAS file {str(path)!r}: {e}") from None
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    for m in _SECTION.finditer(text):
        if m.group(1) == section:
            return parse_module(m.group(2))
    raise UsageError(f"JAAS file {str(path)!r} has no {section!r} section")


def zookeeper_sasl_options(module: LoginModule) -> dict[str, str]:
    """kazoo ``sasl_options`` for a ZooKeeper ``Client`` JAAS section."""
    cls = module.class_name
    if cls.endswith("DigestLoginModule"):
        try:
            return {
                "mechanism": "DIGEST-MD5",
                "username": module.options["username"],
                "password": module.options["password"],
            }
        except KeyError as e:
            raise UsageError(f"JAAS Client section lacks {e.args[0]!r}") from None
    if cls.endswith("Krb5LoginModule"):
        opts = {"mechanism": "GSSAPI", "service": "zookeeper"}
        if "principal" in module.options:
            opts["principal"] = module.options["principal"]
        return opts
    raise UsageError(f"unsupported ZooKeeper JAAS login module {cls} (use DigestLoginModule or Krb5LoginModule)")
