"""What if aiohttp sessions did not trust the environment (`trust_env=False`)?

kubernetes_asyncio's RESTClientObject creates its aiohttp ClientSession with `trust_env=True`,
so every request runs two jobs on the default thread pool (the proxy-from-environment lookup
and the ~/.netrc lookup, which re-reads the file) and waits for them: on a busy event loop the
round trips through the pool and the GIL cap the request rate. This forces `trust_env=False`.
"""

import aiohttp

_original_init = aiohttp.ClientSession.__init__


def _init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    kwargs["trust_env"] = False
    _original_init(self, *args, **kwargs)


aiohttp.ClientSession.__init__ = _init  # type: ignore[method-assign]
