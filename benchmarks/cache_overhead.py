"""Benchmark: what the --cache store adds per model call, alone and with 8 threads sharing it.

Run from the project root: `python benchmarks/cache_overhead.py [--calls 2000] [--prompt-kb 16]`.
Prints the median microseconds of a miss (key + lookup + insert) and of a hit (key + lookup) for prompts of
the given size, hits per second with 8 threads, and the database's size per recorded call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cache.model import request_payload, thread_id  # noqa: E402
from cache.store import CacheStore, content_key  # noqa: E402


def _messages(n: int, kb: int) -> list[dict[str, str]]:
    body = ("Observation: " + "word " * (kb * 200))[: kb * 1024]
    return [{"role": "system", "content": "You are a research agent."}, {"role": "user", "content": "Task"},
            {"role": "assistant", "content": f"Thought: step {n}"}, {"role": "user", "content": f"{body} {n}"}]


def _timed(fn: object, items: range) -> list[float]:
    out = []
    for i in items:
        start = time.perf_counter()
        fn(i)  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1e6)
    return out


def main() -> None:
    """Measure and print."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--prompt-kb", type=int, default=16)
    args = ap.parse_args()
    models = ["openai:gpt-4.1-mini"]
    completion = {"text": "Thought: ok\nAction: search\nAction Input: {}", "finish_reason": "stop",
                  "prompt_tokens": 4000, "completion_tokens": 30, "model": models[0], "cost": 0.0017}
    with tempfile.TemporaryDirectory() as tmp:
        store = CacheStore(Path(tmp))

        def miss(i: int) -> None:
            messages = _messages(i, args.prompt_kb)
            payload = request_payload(models, messages, ["Observation:"], 8192, 0.0)  # type: ignore[arg-type]
            key = content_key("llm", payload)
            assert store.get_completion(key) is None
            store.put_completion(key, models[0], thread_id(models, messages), completion, payload)  # type: ignore[arg-type]

        def hit(i: int) -> None:
            payload = request_payload(models, _messages(i, args.prompt_kb), ["Observation:"], 8192, 0.0)  # type: ignore[arg-type]
            assert store.get_completion(content_key("llm", payload)) is not None

        misses = _timed(miss, range(args.calls))
        hits = _timed(hit, range(args.calls))
        done = [0]

        def worker(offset: int) -> None:
            for i in range(offset, args.calls, 8):
                hit(i)
                done[0] += 1

        start = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        size = store.size_bytes()
        store.close()
    print(f"{args.calls} calls, {args.prompt_kb} KB prompts")
    print(f"miss (key + lookup + insert): median {statistics.median(misses):.0f} µs")
    print(f"hit (key + lookup): median {statistics.median(hits):.0f} µs")
    print(f"8 threads: {done[0] / elapsed:,.0f} hits/s")
    print(f"database: {size / args.calls / 1024:.1f} KB per recorded call (request kept compressed)")


if __name__ == "__main__":
    main()
