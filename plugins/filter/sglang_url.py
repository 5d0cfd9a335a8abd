# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sglang_url filter: the URL a client on the server's own host reaches it at, from --host and --port."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress

from ansible.errors import AnsibleFilterError


def sglang_url(host, port=30000, scheme="http"):
    """``--host``/``--port`` -> ``http://host:port``.

    A wildcard bind is reached on the loopback of its own family: SGLang serves with uvicorn, whose
    asyncio socket for ``::`` is IPv6-only (IPV6_V6ONLY), so 127.0.0.1 would be refused there.
    An IPv6 address is bracketed, as SGLang's own ServerArgs.url() does.
    """
    host = "" if host is None else str(host).strip()
    try:
        port = int(port)
    except (TypeError, ValueError):
        raise AnsibleFilterError("sglang_url: port must be an integer, got %r" % (port,))
    if not 0 < port < 65536:
        raise AnsibleFilterError("sglang_url: port must be 1-65535, got %d" % port)
    host = host.strip("[]")   # "[::1]" as well as "::1"
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    try:
        if ipaddress.ip_address(host).version == 6:
            host = "[%s]" % host
    except ValueError:
        pass   # a host name
    return "%s://%s:%d" % (scheme, host, port)


class FilterModule(object):
    def filters(self):
        return {"sglang_url": sglang_url}
