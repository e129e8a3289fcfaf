"""A stand-in with contenox's Python surface and no work: what the harness's contenox client
costs by itself (its _common, asyncio, asyncio.run, the Timer and emit); through
py_contenox_sync.py, what the synchronous client costs by itself (no asyncio)."""

__version__ = "null"


class _Result:
    def __init__(self, text):
        self.final_text = text


class _Client:
    transcript = None

    def tool(self):
        return lambda fn: fn

    async def run(self, prompt):
        return _Result("done " + prompt.split()[-1])

    def run_sync(self, prompt):
        return _Result("done " + prompt.split()[-1])


def create_client(**_options):
    return _Client()
