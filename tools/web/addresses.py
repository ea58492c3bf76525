"""Is an IP address public? Explicit IANA special-purpose tables, with IPv4 embedded in IPv6 unwrapped.

Python's ipaddress flags (is_private, is_global) changed between patch releases (3.11.7 calls 6to4 space
global), so scrape decides from its own tables: the IANA IPv4 and IPv6 special-purpose registries plus
multicast, and the IPv4 inside IPv4-mapped, NAT64, 6to4 and Teredo addresses is checked as IPv4.
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
# Cloud instance-metadata endpoints hand out the machine's credentials: refused even when
# SCRAPE_ALLOW_PRIVATE_URLS opens the intranet (AWS/GCP/Azure/OpenStack, AWS ECS, Alibaba, AWS IPv6).
METADATA_ADDRESSES = frozenset(IPv4Address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200")) \
    | frozenset({IPv6Address("fd00:ec2::254")})
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                            "instance-data.ec2.internal"})
_MAPPED = ip_network("::ffff:0:0/96")
_NAT64 = ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ip_network("2002::/16")
_TEREDO = ip_network("2001::/32")


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
    """True for a cloud instance-metadata address, also when carried inside an IPv6 address."""
    carried = embedded_ipv4(ip) if isinstance(ip, IPv6Address) else []
    return ip in METADATA_ADDRESSES or any(v4 in METADATA_ADDRESSES for v4 in carried)


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
