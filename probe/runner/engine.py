"""The async engine: executes units against providers, with the response cache and storage.

Per unit: one answer call (serves ``token`` and, reused, ``ptrue``), one self-evaluation call
(``ptrue``), one call per verbal form, and one call with ``n`` samples (or K calls) for
``consistency``. Every completed response goes to the cache at once, so a crash loses at most
the requests in flight; each unit's records are written in one transaction.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from probe.completion import CallFailure, ChatRequest, Completion, ProviderError
from probe.elicit._result import Extracted
from probe.elicit.consistency import consistency
from probe.elicit.ptrue import ptrue
from probe.elicit.token import token_mc, token_short
from probe.elicit.verbal import verbal
from probe.grading import mc_choice, normalize_answer, short_correct
from probe.prompts import RenderedPrompt, answer_prompt, ptrue_prompt, verbal_prompt
from probe.record import Record, Sampling, Source
from probe.runner.plan import VERBAL_FORMS, Unit
from probe.runner.spec import RunSpec
from probe.storage import Store
from providers import LimiterPool, Provider, RetryPolicy, call_with_retry

CACHE_TAG = "k2"
FATAL_KINDS = ("auth", "quota")  # retrying or going on cannot help: stop the run
FLUSH_RECORDS = 256
FLUSH_RESPONSES = 64
FLUSH_SECONDS = 0.05
ANSWER_MAX_TOKENS = {"mc": 5, "short": 24}
VERBAL_MAX_TOKENS = 64


def cache_key(connection_key: str, req: ChatRequest, sample: int) -> str:
    """Versioned hash of the exact request (no secrets: the connection key holds none).

    The canonical form is pydantic's JSON of the frozen ChatRequest (fields in declaration order,
    no dicts inside), which is deterministic and several times cheaper than sorting keys: the
    tag changes whenever that form does.
    """
    raw = f"{connection_key}\n{sample}\n{req.model_dump_json()}".encode()
    return f"{CACHE_TAG}:{hashlib.sha256(raw).hexdigest()}"


@dataclass
class Progress:
    """Live counters for the progress bar and the summary."""

    units_total: int = 0
    units_done: int = 0
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    records: int = 0
    started: float = field(default_factory=time.monotonic)

    def calls_per_s(self) -> float:
        return self.calls / max(time.monotonic() - self.started, 1e-9)


@dataclass
class Outcome:
    """A call's completion (fresh or cached) or its classified failure."""

    completion: Completion | None
    failure: CallFailure | None
    key: str
    request: ChatRequest
    pending: bool = False


@dataclass(frozen=True)
class PendingCall:
    """A request not in the cache, collected instead of sent (batch mode)."""

    model: str
    key: str
    request: ChatRequest
    sample: int


class Engine:
    """Runs units for one run id. Providers are created by the caller and closed by it."""

    def __init__(self, store: Store, run_id: str, spec: RunSpec, providers: dict[str, Provider],
                 policy: RetryPolicy, on_progress: Callable[[Progress], None] | None = None, *,
                 collect_only: bool = False,
                 known_failure: Callable[[str], CallFailure | None] | None = None) -> None:
        """``collect_only``: cache misses are not sent but listed in ``self.pending`` (batch mode), and
        units waiting on them write no records yet; ``known_failure(key)`` supplies failures recorded
        elsewhere (a batch line that errored), which become records like live failures."""
        self.collect_only = collect_only
        self.known_failure = known_failure
        self.pending: list[PendingCall] = []
        self.fatal: CallFailure | None = None
        self._inflight: dict[str, asyncio.Future[Outcome]] = {}
        self._unwritten: list[Record] = []
        self._unwritten_cache: dict[str, Completion] = {}
        self._last_flush = time.monotonic()
        self.store = store
        self.run_id = run_id
        self.spec = spec
        self.providers = providers
        self.policy = policy
        self.progress = Progress()
        self.on_progress = on_progress
        self.model_ids: dict[str, str] = {}
        self.limiters = LimiterPool(default_concurrency=spec.concurrency)
        for cfg in spec.models:
            self.limiters.for_provider(providers[cfg.model])

    # -- calls ----------------------------------------------------------------------------
    async def _call(self, provider: Provider, req: ChatRequest, sample: int = 0) -> Outcome:
        """One logical call. Identical requests in flight at once (e.g. a short question, which the
        shuffled variant does not change) share one HTTP call and one cache entry."""
        key = cache_key(provider.connection_key, req, sample)
        shared = self._inflight.get(key)
        if shared is not None:
            return await asyncio.shield(shared)
        fut: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            outcome = await self._call_once(provider, req, key, sample)
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # mark retrieved: the waiters, if any, get it too
            raise
        finally:
            del self._inflight[key]
        fut.set_result(outcome)
        return outcome

    async def _call_once(self, provider: Provider, req: ChatRequest, key: str, sample: int) -> Outcome:
        if not self.spec.refresh:
            cached = self._unwritten_cache.get(key) or self.store.cache_get(key)
            if cached is not None:
                self.progress.cache_hits += 1
                return Outcome(cached, None, key, req)
        if self.known_failure is not None:
            failed = self.known_failure(key)
            if failed is not None:
                return Outcome(None, failed, key, req)
        if self.collect_only:
            self.pending.append(PendingCall(model=provider.spec.name, key=key, request=req, sample=sample))
            return Outcome(None, None, key, req, pending=True)
        self.progress.calls += 1
        try:
            completion = await call_with_retry(provider, req, self.policy, limiter=self.limiters.for_provider(provider))
        except ProviderError as e:
            self.progress.errors += 1
            if e.failure.kind in FATAL_KINDS and self.fatal is None:
                self.fatal = e.failure
            return Outcome(None, e.failure, key, req)
        self._unwritten_cache[key] = completion
        # Yield once before grading and storing: responses arrive in bursts, and the requests
        # waiting for the slots this burst just freed should go out before the burst's
        # bookkeeping, not after all of it (0.76 -> 0.8x of the ideal rate in the benchmark).
        await asyncio.sleep(0)
        self._maybe_flush()
        return Outcome(completion, None, key, req)

    # -- records --------------------------------------------------------------------------
    def _record(self, unit: Unit, source: Source, variant: str, outcomes: list[Outcome],
                ext: Extracted | None, correct: bool | None, sampling: Sampling) -> Record:
        failure = next((o.failure for o in outcomes if o.failure is not None), None)
        done = [o.completion for o in outcomes if o.completion is not None]
        reported = next((c.model_reported for c in done if c.model_reported), None)
        if reported:
            self.model_ids[unit.model] = reported
        ins = [c.usage.input_tokens for c in done if c.usage.input_tokens is not None]
        outs = [c.usage.output_tokens for c in done if c.usage.output_tokens is not None]
        common = dict(
            run_id=self.run_id, model=unit.model, provider=unit.model.split("/", 1)[0], suite=unit.suite.name,
            item_id=unit.question.id, variant=variant, source=source, sampling=sampling,
            model_reported=reported, input_tokens=sum(ins) if ins else None,
            output_tokens=sum(outs) if outs else None,
            # a batch result has no per-call wall time (its Completion carries 0.0): not measured, not zero
            latency_s=sum(c.latency_s for c in done) if done and all(c.latency_s > 0 for c in done) else None,
            request_hash=outcomes[-1].key if outcomes else None, created_at=datetime.now(UTC),
        )
        if failure is not None:
            return Record(status=f"error:{failure.kind}", error=failure.message, **common)
        assert ext is not None
        ok = ext.status == "ok"
        return Record(status=ext.status, answer=ext.answer, correct=correct if ok else None,
                      confidence=ext.confidence if ok else None, detail=ext.detail, **common)

    def _grade(self, unit: Unit, prompt: RenderedPrompt, answer: str | None) -> tuple[bool | None, int | None]:
        q = unit.question
        if answer is None:
            return None, None
        if q.kind == "mc":
            picked = mc_choice(answer, q, prompt)
            return (None, None) if picked is None else (picked == q.answer, picked)
        return short_correct(answer, q), None

    # -- one unit -------------------------------------------------------------------------
    async def run_unit(self, unit: Unit) -> list[Record]:
        provider = self.providers[unit.model]
        q, v, spec = unit.question, unit.variant, self.spec
        records: list[Record] = []
        answer_max = ANSWER_MAX_TOKENS[q.kind]
        lp_sampling = Sampling(temperature=0.0, max_tokens=answer_max, top_logprobs=spec.top_logprobs)
        want = set(unit.sources)

        async def token_and_ptrue() -> list[Record]:
            out: list[Record] = []
            prompt = answer_prompt(q, v)
            req = ChatRequest(messages=prompt.messages, max_tokens=answer_max, temperature=0.0,
                              logprobs=True, top_logprobs=spec.top_logprobs)
            a = await self._call(provider, req)
            if a.pending:
                return out
            ext: Extracted | None = None
            correct: bool | None = None
            if a.completion is not None:
                choice = a.completion.first
                ext = token_mc(choice, q, prompt) if q.kind == "mc" else token_short(choice)
                if q.kind == "mc":
                    correct = ext.choice == q.answer if ext.choice is not None else None
                else:
                    correct = short_correct(choice.text, q)
            if "token" in want:
                out.append(self._record(unit, "token", v.id, [a], ext, correct, lp_sampling))
            if "ptrue" in want:
                pt = await self._ptrue(unit, a, ext, correct, prompt, lp_sampling)
                if pt is not None:
                    out.append(pt)
            return out

        parts: list[Coroutine[Any, Any, list[Record]]] = []
        if want & {"token", "ptrue"}:
            parts.append(token_and_ptrue())
        if "verbal" in want:
            parts += [self._verbal(unit, form) for form in VERBAL_FORMS]
        if "consistency" in want:
            parts.append(self._consistency(unit))
        if len(parts) == 1:  # the common single-source case needs no task of its own
            return await parts[0]
        tasks = [asyncio.create_task(part) for part in parts]
        try:
            for t in tasks:
                records += await t
        finally:
            for t in tasks:
                t.cancel()
        return records

    async def _ptrue(self, unit: Unit, a: Outcome, ext: Extracted | None, correct: bool | None,
                     prompt: RenderedPrompt, sampling: Sampling) -> Record | None:
        q, v = unit.question, unit.variant
        if a.completion is None or ext is None:
            return self._record(unit, "ptrue", v.id, [a], None, None, sampling)
        choice = a.completion.first
        if choice.logprob_state == "unavailable":
            # the model cannot give logprobs: asking it to self-evaluate would measure nothing
            return self._record(unit, "ptrue", v.id, [a], Extracted(
                status=f"unavailable:{choice.logprob_reason or 'unknown'}", answer=ext.answer), None, sampling)
        if q.kind == "mc":
            if ext.choice is None:
                return self._record(unit, "ptrue", v.id, [a], Extracted(status="parse_error",
                                    answer=choice.text[:200]), None, sampling)
            assert q.choices is not None
            proposed = f"{prompt.label_of_choice(ext.choice)}. {q.choices[ext.choice]}"
        else:
            proposed = choice.text.strip()
            if not proposed:
                return self._record(unit, "ptrue", v.id, [a], Extracted(status="parse_error"), None, sampling)
        p_prompt = ptrue_prompt(q, v, proposed)
        req = ChatRequest(messages=p_prompt.messages, max_tokens=ANSWER_MAX_TOKENS["mc"], temperature=0.0,
                          logprobs=True, top_logprobs=self.spec.top_logprobs)
        b = await self._call(self.providers[unit.model], req)
        if b.pending:
            return None
        pext = ptrue(b.completion.first, proposed) if b.completion is not None else None
        return self._record(unit, "ptrue", v.id, [b], pext, correct, sampling)

    async def _verbal(self, unit: Unit, form: str) -> list[Record]:
        q, v = unit.question, unit.variant
        prompt = verbal_prompt(q, v, "numeric" if form == "numeric" else "linguistic")
        sampling = Sampling(temperature=0.0, max_tokens=VERBAL_MAX_TOKENS)
        req = ChatRequest(messages=prompt.messages, max_tokens=VERBAL_MAX_TOKENS, temperature=0.0)
        o = await self._call(self.providers[unit.model], req)
        if o.pending:
            return []
        ext = None
        correct = None
        if o.completion is not None:
            ext = verbal(o.completion.text, "numeric" if form == "numeric" else "linguistic")
            if ext.status == "ok":
                correct = self._grade(unit, prompt, ext.answer)[0]
                if correct is None:
                    ext = Extracted(status="parse_error", answer=ext.answer, detail=ext.detail)
        return [self._record(unit, "verbal", f"{v.id}:{form}", [o], ext, correct, sampling)]

    async def _consistency(self, unit: Unit) -> list[Record]:
        q, v, spec = unit.question, unit.variant, self.spec
        provider = self.providers[unit.model]
        prompt = answer_prompt(q, v)
        k = spec.samples
        max_tokens = ANSWER_MAX_TOKENS[q.kind]
        sampling = Sampling(temperature=spec.temperature, max_tokens=max_tokens, n=k)
        outcomes: list[Outcome] = []
        got = 0
        if provider.capabilities.supports_n:
            req = ChatRequest(messages=prompt.messages, max_tokens=max_tokens, temperature=spec.temperature, n=k)
            outcomes.append(await self._call(provider, req))
            first = outcomes[0].completion
            got = len(first.choices) if first is not None else k
        if got < k:
            # no n support, or the host silently returned fewer choices: one call per missing sample
            reqs = [ChatRequest(messages=prompt.messages, max_tokens=max_tokens, temperature=spec.temperature,
                                seed=i) for i in range(got, k)]
            outcomes += await asyncio.gather(*(self._call(provider, r, i) for i, r in zip(range(got, k), reqs,
                                                                                         strict=True)))
        if any(o.pending for o in outcomes):
            return []
        if any(o.failure for o in outcomes):
            return [self._record(unit, "consistency", v.id, outcomes, None, None, sampling)]
        texts = [c.text for o in outcomes if o.completion for c in o.completion.choices][:k]
        keys: list[str | None] = []
        shown: list[str] = []
        for t in texts:
            if q.kind == "mc":
                picked = mc_choice(t, q, prompt)
                keys.append(None if picked is None else str(picked))
                shown.append(t.strip() if picked is None else prompt.label_of_choice(picked))
            else:
                keys.append(normalize_answer(t) or None)
                shown.append(t.strip())
        ext = consistency(keys, shown)
        correct = self._grade(unit, prompt, ext.answer)[0] if ext.status == "ok" else None
        return [self._record(unit, "consistency", v.id, outcomes, ext, correct, sampling)]

    # -- the whole run --------------------------------------------------------------------
    def flush(self) -> None:
        """Write buffered responses and records in one transaction ("transactional per batch"): a
        crash loses at most the last FLUSH_SECONDS of responses, which resume asks again, and
        records whose responses are stored, which resume recomputes without a request."""
        if self._unwritten or self._unwritten_cache:
            self.store.write_batch(self._unwritten, self._unwritten_cache.items())
            self._unwritten = []
            self._unwritten_cache = {}
        self._last_flush = time.monotonic()

    def _maybe_flush(self) -> None:
        if (len(self._unwritten_cache) >= FLUSH_RESPONSES or len(self._unwritten) >= FLUSH_RECORDS
                or time.monotonic() - self._last_flush > FLUSH_SECONDS):
            self.flush()

    async def run(self, units: list[Unit]) -> None:
        """Run the units (those already done are filtered out by the caller).

        Raises FatalCallError after an auth or quota failure: every further call would fail too.
        """
        self.progress.units_total = len(units)
        queue = iter(interleave_by_model(units))
        # Enough workers to keep every model's limiter full while others parse and store answers.
        per_model = [cfg.concurrency or self.spec.concurrency for cfg in self.spec.models]
        workers = max(1, min(len(units), max(64, 2 * sum(per_model)), 2048))

        async def worker() -> None:
            for unit in queue:
                if self.fatal is not None:
                    raise FatalCallError(self.fatal)
                recs = await self.run_unit(unit)
                self._unwritten += recs
                self._maybe_flush()
                self.progress.units_done += 1
                self.progress.records += len(recs)
                if self.on_progress:
                    self.on_progress(self.progress)
            if self.fatal is not None:
                raise FatalCallError(self.fatal)

        tasks = [asyncio.create_task(worker()) for _ in range(workers)]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                if t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.flush()


def interleave_by_model(units: list[Unit]) -> list[Unit]:
    """Round-robin over models, so every model's requests flow from the start of a run."""
    by_model: dict[str, list[Unit]] = {}
    for u in units:
        by_model.setdefault(u.model, []).append(u)
    lanes = list(by_model.values())
    return [u for group in itertools.zip_longest(*lanes) for u in group if u is not None]


class FatalCallError(Exception):
    """An auth or quota failure stopped the run."""

    def __init__(self, failure: CallFailure) -> None:
        super().__init__(f"{failure.kind}: {failure.message}")
        self.failure = failure
