"""Is an IP address public? Explicit IANA special-purpose tables, with IPv4 embedded in IPv6 unwrapped.

Python's ipaddress flags (is_private, is_global) changed between patch releases (3.11.7 calls 6to4 space
global), so scrape decides from its own tables: the IANA IPv4 and IPv6 special-purpose registries plus
multicast, and the IPv4 inside IPv4-mapped, NAT64, 6to4 and Teredo addresses is checked as IPv4. Cloud
metadata addresses (METADATA_NETWORKS) are refused in every spelling, public-looking ones included.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_network

IPAddress = IPv4Address | IPv6Address

_V4_BLOCKED = tuple(IPv4Network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24",
    "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "224.0.0.0/4", "240.0.0.0/4",
))
_V6_GLOBAL_UNICAST = IPv6Network("2000::/3")
_V6_BLOCKED = tuple(IPv6Network(n) for n in (
    "2001::/23",  # IETF protocol assignments (Teredo, 2001::/32, is unwrapped before this check)
    "2001:db8::/32", "3fff::/20",  # documentation
    "2620:4f:8000::/48",  # AS112 direct delegation
))
# Cloud instance-metadata services and their neighbours hand out the machine's credentials and configuration:
# refused even when SCRAPE_ALLOW_PRIVATE_URLS opens the intranet, and also where the address looks public. The
# one list fetch, the browser's guard proxy and the browser tool refuse (all through UrlPolicy).
METADATA_NETWORKS = tuple(ip_network(n) for n in (
    "169.254.169.0/24",  # AWS (IMDS .254, DNS .253, NTP .123), GCP, Azure IMDS, OpenStack, DigitalOcean, Oracle
    "169.254.170.2/32",  # AWS ECS task metadata and credentials
    "169.254.0.23/32",  # Tencent Cloud
    "100.100.100.200/32",  # Alibaba Cloud
    "168.63.129.16/32",  # Azure WireServer (on every Azure VM; a public-looking address)
    "192.0.0.192/32",  # Oracle Cloud (OCI classic)
    "fd00:ec2::/64",  # AWS over IPv6 (IMDS ::254, DNS ::253, NTP ::123)
))
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                            "instance-data.ec2.internal", "metadata.tencentyun.com"})
_MAPPED = ip_network("::ffff:0:0/96")
_NAT64 = ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ip_network("2002::/16")
_TEREDO = ip_network("2001::/32")
_COMPATIBLE = ip_network("::/96")  # deprecated IPv4-compatible ::a.b.c.d
_TRANSLATED = ip_network("::ffff:0:0:0/96")  # SIIT's IPv4-translated ::ffff:0:a.b.c.d
_LOCAL_NAT64 = ip_network("64:ff9b:1::/48")  # RFC 8215: the IPv4 sits where the operator's prefix length puts it
# RFC 6052 for a /48, /56, /64 or /96 prefix: (the bit the IPv4 starts at, bits there, the bit after the u octet, bits)
_NAT64_PLACES = ((48, 16, 72, 16), (56, 8, 72, 24), (64, 0, 72, 32), (96, 32, 0, 0))


def embedded_ipv4(ip: IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, NAT64, 6to4, Teredo server and client)."""
    if ip in _MAPPED or ip in _NAT64:
        return [IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip in _SIX_TO_FOUR:
        return [IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)]
    if ip in _TEREDO:
        server = IPv4Address((int(ip) >> 64) & 0xFFFFFFFF)
        client = IPv4Address(~int(ip) & 0xFFFFFFFF)  # the client address is stored inverted
        return [server, client]
    return []


def is_public_ipv4(ip: IPv4Address) -> bool:
    """True unless ip is in an IANA special-purpose, multicast or reserved block."""
    return not any(ip in net for net in _V4_BLOCKED)


def is_metadata_address(ip: IPAddress) -> bool:
    """True for a cloud metadata address, also when carried inside an IPv6 address in any form a network may
    translate (mapped, compatible, translated, NAT64 with its well-known or a local-use prefix, 6to4, Teredo)."""
    carried = _carried_anyhow(ip) if isinstance(ip, IPv6Address) else []
    return any(a in net for a in (ip, *carried) for net in METADATA_NETWORKS if a.version == net.version)


def _carried_anyhow(ip: IPv6Address) -> list[IPv4Address]:
    """Every IPv4 address ip may stand for, including forms too rare to count for is_public_address."""
    found = embedded_ipv4(ip)
    value = int(ip)
    if (ip in _COMPATIBLE and value > 1) or ip in _TRANSLATED:
        found.append(IPv4Address(value & 0xFFFFFFFF))
    if ip in _LOCAL_NAT64:
        for first_at, first_bits, rest_at, rest_bits in _NAT64_PLACES:  # the high part, then after the u octet
            high = (value >> (128 - first_at - first_bits)) & ((1 << first_bits) - 1) if first_bits else 0
            low = (value >> (128 - rest_at - rest_bits)) & ((1 << rest_bits) - 1) if rest_bits else 0
            found.append(IPv4Address((high << rest_bits) | low))
    return found


def is_public_address(ip: IPAddress) -> bool:
    """True only for globally routable unicast addresses; embedded IPv4 must be public too."""
    if isinstance(ip, IPv4Address):
        return is_public_ipv4(ip)
    if ip.scope_id:
        return False
    carried = embedded_ipv4(ip)
    if carried:
        return all(is_public_ipv4(v4) for v4 in carried)
    return ip in _V6_GLOBAL_UNICAST and not any(ip in net for net in _V6_BLOCKED)
