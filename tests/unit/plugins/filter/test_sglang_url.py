# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sglang_url filter: where a client on the server's host reaches it, for every kind of --host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import socket

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.sglang.plugins.filter.sglang_url import sglang_url
from ansible_collections.llmops.sglang.plugins.module_utils.bench_client import parse_base_url


@pytest.mark.parametrize("host, port, url", [
    ("127.0.0.1", 30000, "http://127.0.0.1:30000"),
    ("0.0.0.0", 30001, "http://127.0.0.1:30001"),
    ("", "30002", "http://127.0.0.1:30002"),
    (None, 30003, "http://127.0.0.1:30003"),
    ("::", 30004, "http://[::1]:30004"),
    ("fd00::5", 30005, "http://[fd00::5]:30005"),
    ("[fd00::5]", 30006, "http://[fd00::5]:30006"),
    ("gpu-01.example.org", 30007, "http://gpu-01.example.org:30007"),
    ("10.0.0.7", 30008, "http://10.0.0.7:30008"),
    ("[::]", 30009, "http://[::1]:30009"),
])
def test_the_url_for_each_kind_of_host(host, port, url):
    assert sglang_url(host, port) == url


def test_the_benchmark_client_reads_a_bracketed_address_back():
    assert parse_base_url(sglang_url("fd00::5", 30005))[1:3] == ("fd00::5", 30005)


@pytest.mark.parametrize("port", [0, 65536, "x", None])
def test_a_port_out_of_range_names_the_port(port):
    with pytest.raises(AnsibleFilterError, match="port must be"):
        sglang_url("127.0.0.1", port)


def test_a_server_bound_to_the_ipv6_wildcard_is_reached_at_the_url():
    """Why :: is not 127.0.0.1: asyncio (uvicorn, SGLang's HTTP server; aiohttp, the simulator's) binds
    :: IPv6-only. Checked on this machine's stack rather than assumed."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")

    async def probe():
        server = await asyncio.get_running_loop().create_server(asyncio.Protocol, host="::", port=0)
        port = server.sockets[0].getsockname()[1]
        reached = {}
        for url in (sglang_url("::", port), "http://127.0.0.1:%d" % port):
            host, port_ = parse_base_url(url)[1:3]
            try:
                writer = (await asyncio.open_connection(host, port_))[1]
                writer.close()
                reached[url] = True
            except OSError:
                reached[url] = False
        server.close()
        return reached, port

    reached, port = asyncio.run(probe())
    assert reached[sglang_url("::", port)]
    assert not reached["http://127.0.0.1:%d" % port]
