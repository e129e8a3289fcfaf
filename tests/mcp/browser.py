#!/usr/bin/env python3
"""A "browser" for the CLI's OAuth tests ($BROWSER): follows the authorization URL it is given
(the test authorization server approves at once and redirects to the CLI's loopback callback)
and exits. Loopback only: any other host is refused. With BROWSER_LOG set, the URL it was given
is appended to that file."""

import os
import sys
import urllib.parse
import urllib.request


class LoopbackOnly(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        check(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def check(url: str) -> None:
    host = urllib.parse.urlsplit(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"browser.py: refusing a non-loopback URL host {host!r}")


url = sys.argv[1]
check(url)
if os.environ.get("BROWSER_LOG"):
    with open(os.environ["BROWSER_LOG"], "a") as log:
        log.write(url + "\n")
opener = urllib.request.build_opener(LoopbackOnly)
with opener.open(url, timeout=30) as reply:
    reply.read()
