"""Benchmark: what OpenTelemetry export adds per model call and per step, and what watch's frame sampling costs.

Run from the project root: `python benchmarks/telemetry.py [--calls 500] [--video-seconds 60]`
(needs requirements-otel.txt and requirements-video.txt). Prints the median microseconds of a model call
through TracedModel against the bare model (spans exported to a loopback OTLP/HTTP receiver), the same for a
step's events, the bytes sent per span, and the seconds to probe and sample 16 frames from a generated video.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent import Event  # noqa: E402
from config import Settings  # noqa: E402
from core.chat import Completion, Message  # noqa: E402
from tasks.taskfile import Task  # noqa: E402
from telemetry.setup import start_tracing  # noqa: E402


class Receiver(BaseHTTPRequestHandler):
    """Counts the bytes of each export and answers 200."""

    received = 0

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        Receiver.received += len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


class Instant:
    """A model that answers at once."""

    def complete(self, messages: list[Message], stop: list[str] | None = None, max_tokens: int | None = None,
                 temperature: float | None = None) -> Completion:
        return Completion("Thought: ok\nFinal Answer: 4", "stop", 1200, 40, "openai:gpt-4.1-mini", cost=0.0005)


def _median_us(fn: object, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def spans(calls: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tracing = start_tracing(Settings(otel_endpoint=f"http://127.0.0.1:{server.server_address[1]}"))
    assert tracing is not None
    tracing.start_run("openai:gpt-4.1-mini", 1)
    messages: list[Message] = [{"role": "user", "content": "2+2?"}]
    bare = Instant()
    with tracing.task(Task(index=1, text="t", id="task-001")) as traced:
        model = traced.model(bare, "openai:gpt-4.1-mini")
        base = _median_us(lambda: bare.complete(messages), calls)
        wrapped = _median_us(lambda: model.complete(messages), calls)
        step = iter(range(1, 10 * calls))

        def one_step() -> None:
            n = next(step)
            traced.on_event(Event("step_start", n))
            traced.on_event(Event("tool_call", n, {"tool": "scrape", "duration": 0.5, "error": None,
                                                    "observation": "x" * 100, "full_observation_chars": 100}))
        events = _median_us(one_step, calls)
    tracing.shutdown(0)
    server.shutdown()
    total = 1 + 1 + 2 * calls + 2 * calls  # run, task, model-call spans (two loops' worth), step + tool spans
    print(f"model call, bare:             {base:8.1f} µs")
    print(f"model call, traced:           {wrapped:8.1f} µs  (+{wrapped - base:.1f} µs a call)")
    print(f"step_start + tool_call spans: {events:8.1f} µs a step")
    print(f"OTLP bytes sent:              {Receiver.received / total:8.0f} bytes a span ({total:,} spans)")


def video(seconds: int) -> None:
    import imageio_ffmpeg

    from tools.media.video import probe, sample_frames

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clip.mp4"
        writer = imageio_ffmpeg.write_frames(str(path), (640, 360), fps=25, macro_block_size=8)
        writer.send(None)
        for i in range(seconds * 25):
            writer.send(bytes((i % 256, 64, 255 - i % 256)) * 640 * 360)
        writer.close()
        start = time.perf_counter()
        info = probe(path)
        probed = time.perf_counter() - start
        frames = sample_frames(path, info.seconds, 16)
        sampled = time.perf_counter() - start - probed
        size = sum(len(image.data) for _, image in frames)
    print(f"video {seconds} s 640x360: probe {probed:.2f} s, 16 frames {sampled:.2f} s, "
          f"{size / 1024:.0f} KB of JPEG")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)  # 2,002 spans: the batch queue holds 2,048
    parser.add_argument("--video-seconds", type=int, default=60)
    args = parser.parse_args()
    spans(args.calls)
    video(args.video_seconds)


if __name__ == "__main__":
    main()
