"""What the model checks of one run share: the endpoints' clients, the pool of workers that
bounds how many requests are in flight, the answers asked already, the cache on disk, and the
tally the reports print (requests, answers from the cache, tokens, time, each place judged).

A run (`recorder play`, the pytest plugin, `recorder learn`) makes one `ModelSession` and
binds its rules' model checks to it (`recorder.checks.model_rules`: the checks' options are
values; the session goes beside them, as an httpx transport is handed to a client); a check
bound to none uses a session of the process's own, made on first use, which reads the
environment at each request. `skip` (`--no-judge`) makes every model check a skip that is
counted, never a pass that is not.

`ask(key, …)` is the one way to an answer: this run's answer under `key` (asked once, however
many places or files ask it at once), else the cache's, else one request on a worker (at most
`concurrency` at once, whatever `--jobs` is). A worker never waits for another's answer, so
the pool cannot deadlock. An answer that failed is not kept: the next place asks again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx

from recorder.checks.model_usage import Judgment, ModelUsage
from recorder.checks.openai_compat import (
    Endpoint,
    EndpointSettings,
    ModelClient,
    RetryPolicy,
    Usage,
    resolve_endpoint,
)
from recorder.checks.verdict_cache import VerdictCache, default_folder
from recorder.errors import RecorderError

__all__ = [
    "DEFAULT_CONCURRENCY",
    "Asked",
    "ModelEndpointError",
    "ModelSession",
    "default_session",
]

DEFAULT_CONCURRENCY = 4


class ModelEndpointError(RecorderError):
    """A model check has no endpoint to use: a usage error, before anything is sent."""


class Asked:
    """An answer asked of the session: `result()` waits for it (raising what made it fail).
    One asked already in this run (`reused_from`) counts as from the cache once it came."""

    def __init__(self, future: Future[dict[str, Any]], reused_from: ModelSession | None = None):
        self._future = future
        self._reused_from = reused_from

    def result(self) -> dict[str, Any]:
        answer = self._future.result()
        if self._reused_from is not None:
            self._reused_from.note_cached()  # (once: then it is no longer reused)
            self._reused_from = None
        return answer


class ModelSession:
    """See the module docstring. `environ`: where endpoints and keys are read (None: the
    process's environment as it is at each request); `transport`, `sleep`, `retry`: for
    tests."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        skip: bool = False,
        concurrency: int = DEFAULT_CONCURRENCY,
        cache: bool = True,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._environ = None if environ is None else dict(environ)
        self.skip = skip
        self.concurrency = max(1, concurrency)
        self._use_cache = cache
        self._retry = retry
        self._transport = transport
        self._sleep = sleep
        self._lock = threading.Lock()
        self._clients: dict[tuple[Endpoint, str], ModelClient] = {}
        self._caches: dict[str | None, VerdictCache] = {}
        self._asked: dict[str, Future[dict[str, Any]]] = {}
        self._workers: ThreadPoolExecutor | None = None
        self._usage = Usage()
        self._cached = 0
        self._skipped = 0
        self._embeddings = 0
        self._judgments: list[Judgment] = []

    # --- the endpoints --------------------------------------------------------------------

    def client(self, settings: EndpointSettings) -> ModelClient:
        """The client of the endpoint `settings` mean here (one per endpoint). EndpointError."""
        environ = self.environ
        endpoint = resolve_endpoint(settings, environ)
        # (the key's digest, not the key: a key changed in the environment is a new client)
        key = hashlib.sha256(environ.get(endpoint.key_variable, "").encode()).hexdigest()
        with self._lock:
            found = self._clients.get((endpoint, key))
            if found is None:
                options: dict[str, Any] = {"retry": self._retry, "transport": self._transport}
                if self._sleep is not None:
                    options["sleep"] = self._sleep
                found = ModelClient(endpoint, environ, **options)
                self._clients[(endpoint, key)] = found
            return found

    @property
    def environ(self) -> Mapping[str, str]:
        """Where endpoints and keys are read."""
        return os.environ if self._environ is None else self._environ

    def cache(self, rules_file: str | None) -> VerdictCache | None:
        """The cache beside `rules_file` (None: the cache is off)."""
        if not self._use_cache:
            return None
        with self._lock:
            found = self._caches.get(rules_file)
            if found is None:
                found = self._caches[rules_file] = VerdictCache(default_folder(rules_file))
            return found

    # --- the answers ----------------------------------------------------------------------

    def ask(
        self,
        key: str,
        cache: VerdictCache | None,
        request: Callable[[], tuple[dict[str, Any], Usage]],
        *,
        valid: Callable[[dict[str, Any]], bool] = lambda answer: True,
    ) -> Asked:
        """The answer under `key` (see the module docstring); `request` makes it and says what
        it cost (an exception it raises may carry the `usage` spent); a cached answer that is
        not `valid` (an entry edited by hand) is asked again."""
        with self._lock:
            found = self._asked.get(key)
            if found is not None:
                return Asked(found, self)
            if self._workers is None:
                self._workers = ThreadPoolExecutor(self.concurrency, "recorder-model")
            future = self._workers.submit(self._answer, key, cache, request, valid)
            self._asked[key] = future
            return Asked(future)

    def note_cached(self) -> None:
        with self._lock:
            self._cached += 1

    def _answer(
        self,
        key: str,
        cache: VerdictCache | None,
        request: Callable[[], tuple[dict[str, Any], Usage]],
        valid: Callable[[dict[str, Any]], bool],
    ) -> dict[str, Any]:
        try:
            kept = cache.get(key) if cache is not None else None
            if kept is not None and valid(kept):
                with self._lock:
                    self._cached += 1
                return kept
            if kept is not None and cache is not None:
                cache.forget(key)  # (an entry edited by hand: asked again, kept again)
            try:
                answer, usage = request()
            except BaseException as exc:
                spent = getattr(exc, "usage", None)
                if isinstance(spent, Usage):
                    with self._lock:
                        self._usage += spent
                raise
            with self._lock:
                self._usage += usage
            if cache is not None:
                cache.put(key, answer)
            return answer
        except BaseException:
            with self._lock:
                self._asked.pop(key, None)  # (not kept: asked again by the next place)
            raise

    # --- the tally ------------------------------------------------------------------------

    def note_skipped(self) -> None:
        with self._lock:
            self._skipped += 1

    def note_embedding(self) -> None:
        with self._lock:
            self._embeddings += 1

    def note_judgment(self, judgment: Judgment) -> None:
        with self._lock:
            self._judgments.append(judgment)

    def usage(self) -> ModelUsage:
        """What the run's model checks did so far."""
        with self._lock:
            problems = [c.problem for c in self._caches.values() if c.problem]
            return ModelUsage(
                requests=self._usage.requests,
                cached=self._cached,
                prompt_tokens=self._usage.prompt_tokens,
                completion_tokens=self._usage.completion_tokens,
                seconds=self._usage.seconds,
                skipped=self._skipped,
                embeddings=self._embeddings,
                judgments=tuple(self._judgments),
                cache_problem=problems[0] if problems else None,
            )

    def close(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, None
            clients = list(self._clients.values())
            self._clients.clear()
        if workers is not None:
            # (nothing is waited for at the end of a run; after a Ctrl-C, what is queued is
            # dropped and the requests in flight end with their connections)
            workers.shutdown(wait=False, cancel_futures=True)
        for client in clients:
            client.close()


_default: list[ModelSession] = []
_default_lock = threading.Lock()


def default_session() -> ModelSession:
    """The process's own session, for model checks bound to none (made on first use)."""
    with _default_lock:
        if not _default:
            _default.append(ModelSession())
        return _default[0]
