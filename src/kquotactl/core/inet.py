"""Which address an ip entity's stored name means to a broker: ``InetAddress.getByName(name)``, literals only.

Brokers key ip quotas by ``InetAddress`` (ZooKeeper-mode ``IpConfigHandler``, KRaft's ``ClientQuotaMetadataManager``;
``isValidIpEntity`` makes the same call), never by the stored text. So ``2001:DB8:0::1`` and ``2001:db8::1`` are one
address, ``::ffff:1.2.3.4`` is the IPv4 address ``1.2.3.4``, ``1.2.3`` is ``1.2.0.3`` and ``16909060`` is
``1.2.3.4``. This module reproduces the JDK 17 parsing of address literals (``IPAddressUtil.textToNumericFormatV4``,
``validateNumericFormatV4`` with its refusal of ambiguous BSD-style literals such as ``0x7f.1``,
``textToNumericFormatV6``, brackets and scope ids), differentially tested against the JDK itself.

Anything that is not a literal goes to the broker's name service (DNS, /etc/hosts): :func:`read_ip_name` reports it
as :attr:`IpKind.RESOLVER` and never resolves it (an answer here would say nothing about the broker's resolver).
A sanitized spelling such as ``%3A%3A1`` (what a ZooKeeper-mode broker's admin API path stores for ``::1``) is such
a name: a ZooKeeper-mode broker looks it up as a host name.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache


class IpKind(StrEnum):
    ADDRESS = "address"  # a literal: the broker uses this address
    INTERFACE = "interface"  # an IPv6 literal scoped by interface name: valid only if the broker host has it
    RESOLVER = "resolver"  # not a literal: the broker asks its name service
    INVALID = "invalid"  # refused without a lookup (malformed literal): the broker cannot use it


@dataclass(frozen=True, slots=True)
class IpName:
    """A stored ip name as a broker reads it. ``address`` is set for ADDRESS and INTERFACE."""

    kind: IpKind
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None

    @property
    def key(self) -> str | None:
        """The address in canonical text (``2001:db8::1``, ``1.2.3.4``): equal keys are one broker entry."""
        return None if self.address is None else str(self.address)

    def meaning(self, name: str) -> str:
        """Why the broker reads ``name`` this way, in a few words."""
        if self.kind is IpKind.ADDRESS:
            return "the address itself" if name == self.key else f"the address {self.key}"
        if self.kind is IpKind.INTERFACE:
            return f"the address {self.key}, only if the broker host has network interface {name.split('%', 1)[1]!r}"
        if self.kind is IpKind.RESOLVER:
            hint = " (a sanitized spelling: a ZooKeeper-mode broker does not decode it)" if "%" in name else ""
            return f"not an address literal: depends on the broker's resolver{hint}"
        return "a malformed address literal: brokers cannot use it"


_V4_MAX_LEN = 15


def _ascii_digit(c: str, radix: int) -> int:
    """``IPAddressUtil.parseAsciiDigit``: ASCII digits (and a-f/A-F for 16) only."""
    if "0" <= c <= "9":
        d = ord(c) - 48
    elif radix == 16 and ("a" <= c <= "f" or "A" <= c <= "F"):
        d = ord(c.lower()) - 87
    else:
        return -1
    return d if d < radix else -1


def _v4(src: str) -> bytes | None:
    """``textToNumericFormatV4``: 1 to 4 decimal parts, the last one filling the remaining bytes."""
    if not src or len(src) > _V4_MAX_LEN:
        return None
    parts: list[int] = []
    value, new_octet = 0, True
    for c in src:
        if c == ".":
            if new_octet or value > 0xFF or len(parts) == 3:
                return None
            parts.append(value)
            value, new_octet = 0, True
        else:
            d = _ascii_digit(c, 10)
            if d < 0:
                return None
            value, new_octet = value * 10 + d, False
    if new_octet or value >= 1 << ((4 - len(parts)) * 8):
        return None
    return bytes(parts) + value.to_bytes(4 - len(parts), "big")


def _bsd_parsable_v4(src: str) -> bool:
    """``IPAddressUtil.isBsdParsableV4``: would BSD ``inet_aton`` (hex ``0x``, octal ``0``) take it?"""
    if _ascii_digit(src[0], 10) < 0 or src[-1] == "." or _ascii_digit(src[-1], 16) < 0:
        return False
    pos, field, n = 0, 0, len(src)
    while pos < n:
        value = -1
        for radix in (16, 8, 10):
            start = pos
            if radix == 16:
                ok = n - pos >= 2 and src[pos] == "0" and src[pos + 1] in "xX"
                pos += 2 if ok else 0
            elif radix == 8:
                ok = n - pos >= 2 and src[pos] == "0" and src[pos + 1] != "."
                pos += 1 if ok else 0
            else:
                ok = pos < n
            if not ok:
                pos = start
                continue
            val, digits, dot = 0, 0, False
            while pos < n and not dot:
                c = src[pos]
                pos += 1
                if c == ".":
                    dot = True
                    if field == 3 or digits == 0 or val > 255:
                        return False
                else:
                    d = _ascii_digit(c, radix)
                    if d < 0:
                        return False
                    digits += 1
                    val = val * radix + d
            if not dot and val > (1 << ((4 - field) * 8)) - 1:
                return False
            value = val
            field += 1
            break
        if value < 0:
            return False
    return True


def _v6(src: str) -> bytes | None:
    """``textToNumericFormatV6``: 16 bytes, or the 4 of an IPv4-mapped address."""
    if len(src) < 2:
        return None
    end = len(src)
    pc = src.find("%")
    if pc == end - 1:
        return None
    if pc != -1:
        end = pc
    dst = bytearray(16)
    j, i, colonp = 0, 0, -1
    if src[0] == ":":
        i = 1
        if src[i] != ":":
            return None
    curtok, saw, val = i, False, 0
    while i < end:
        ch = src[i]
        i += 1
        d = _ascii_digit(ch, 16)
        if d != -1:
            val = (val << 4) | d
            if val > 0xFFFF:
                return None
            saw = True
            continue
        if ch == ":":
            curtok = i
            if not saw:
                if colonp != -1:
                    return None
                colonp = j
                continue
            if i == end or j + 2 > 16:
                return None
            dst[j : j + 2] = val.to_bytes(2, "big")
            j += 2
            saw, val = False, 0
            continue
        if ch == "." and j + 4 <= 16:
            ia4 = src[curtok:end]
            if ia4.count(".") != 3:
                return None
            v4 = _v4(ia4)
            if v4 is None:
                return None
            dst[j : j + 4] = v4
            j += 4
            saw = False
            break
        return None
    if saw:
        if j + 2 > 16:
            return None
        dst[j : j + 2] = val.to_bytes(2, "big")
        j += 2
    if colonp != -1:
        if j == 16:
            return None
        n = j - colonp
        for k in range(1, n + 1):
            dst[16 - k] = dst[colonp + n - k]
            dst[colonp + n - k] = 0
        j = 16
    if j != 16:
        return None
    if dst[:10] == bytes(10) and dst[10:12] == b"\xff\xff":
        return bytes(dst[12:])
    return bytes(dst)


def _numeric_zone(s: str) -> bool:
    """``InetAddress.checkNumericZone`` >= 0: the scope after '%' is all ASCII digits and fits an int."""
    zone = s[s.index("%") + 1 :]
    return all(_ascii_digit(c, 10) >= 0 for c in zone) and (not zone or int(zone) <= 2**31 - 1)


def _address(raw: bytes) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.IPv4Address(raw) if len(raw) == 4 else ipaddress.IPv6Address(raw)


@lru_cache(maxsize=65536)
def read_ip_name(name: str) -> IpName:
    """``InetAddress.getByName(name)`` on JDK 17 without any lookup (see the module docstring)."""
    if name == "":
        return IpName(IpKind.ADDRESS, ipaddress.IPv4Address("127.0.0.1"))  # the loopback address
    host, v6_expected = name, False
    if host[0] == "[":
        if len(host) > 2 and host[-1] == "]":
            host, v6_expected = host[1:-1], True
        else:
            return IpName(IpKind.INVALID)
    if "\x00" in host:
        return IpName(IpKind.INVALID)  # "NUL character not allowed in hostname"
    if _ascii_digit(host[0], 16) != -1 or host[0] == ":":
        raw = None
        if not v6_expected:  # a bracketed name is never read as IPv4
            raw = _v4(host)
            if raw is None and _bsd_parsable_v4(host):
                return IpName(IpKind.INVALID)  # ambiguous literal (jdk.net.allowAmbiguousIPAddressLiterals=false)
        if raw is None:
            raw = _v6(host)
            if raw is None and (":" in host or v6_expected):
                return IpName(IpKind.INVALID)
            if raw is not None and "%" in host:
                if len(raw) == 4:
                    return IpName(IpKind.INVALID)  # an IPv4-mapped address with a scope id
                if not _numeric_zone(host):
                    return IpName(IpKind.INTERFACE, _address(raw))
        if raw is not None:
            return IpName(IpKind.ADDRESS, _address(raw))
    elif v6_expected:
        return IpName(IpKind.INVALID)
    return IpName(IpKind.RESOLVER)


def address_key(name: str) -> str:
    """What a broker keys ``name`` by, as text: the canonical address of a literal (scoped or not), else the name
    itself (a host name or a malformed literal; such a key never equals an address's)."""
    key = read_ip_name(name).key
    return name if key is None else key
