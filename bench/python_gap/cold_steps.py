"""The harness client's cold start (`py_contenox.py --turns 1`) cut into steps, for
bench/python_gap/cold_start.sh: interpreter + `import _common, asyncio` (step 0), `import contenox`
(1), `create_client` (2), `@client.tool` (3), the first turn (4). `--stop N` ends after step N
(callgrind differences between steps); `--marks T0` prints wall marks in ms since T0 (epoch
seconds, taken just before exec). `--floor` times the streaming floor's client instead."""

import time

T_SCRIPT = time.time()
import os
import sys

sys.path.insert(0, os.environ["CLIENTS"])
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
url, stop, t0 = args["--url"], int(args.get("--stop", 4)), args.get("--marks")
marks = [("start", T_SCRIPT)]

if "--floor" in sys.argv:
    # The floor's own imports, in its order (_common first, as the harness asks).
    import _common  # noqa: I001
    import http.client  # noqa: F401
    import json  # noqa: F401
    import urllib.parse  # noqa: F401

    marks.append(("imports", time.time()))
    import contextlib
    import io

    import py_raw_http_stream

    sys.argv = [sys.argv[0], "--base-url", url, "--turns", "1", "--mode", "fresh"]
    with contextlib.redirect_stdout(io.StringIO()):
        py_raw_http_stream.main()
    marks.append(("turn", time.time()))
else:
    # The contenox client's imports, in its order.
    import _common  # noqa: F401, I001
    import asyncio

    marks.append(("imports", time.time()))
    if stop >= 1:
        import contenox

        marks.append(("import_contenox", time.time()))

    async def main() -> None:
        if stop >= 2:
            client = contenox.create_client(
                style="openai",
                base_url=url + "/v1",
                model="gpt-4o-mini",
                api_key="sk-dummy",
                system="You are a benchmark agent. Use the echo tool.",
                builtins=[],
            )
            marks.append(("create", time.time()))
        if stop >= 3:

            @client.tool()
            def echo(text: str) -> str:
                """Echo the given text back.

                Args:
                    text: the text
                """
                return text

            marks.append(("register", time.time()))
        if stop >= 4:
            r = await client.run("turn 1")
            assert r.final_text == "done 1", r.final_text
            marks.append(("turn", time.time()))

    asyncio.run(main())
if t0:
    print(" ".join(f"{k}={1000 * (v - float(t0)):.2f}" for k, v in marks), flush=True)
