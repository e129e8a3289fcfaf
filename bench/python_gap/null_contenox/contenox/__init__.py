"""A stand-in with contenox's Python surface and no work: what the harness's contenox client
costs by itself (its _common, asyncio, asyncio.run, the Timer and emit)."""

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


def create_client(**_options):
    return _Client()
