"""Benchmark: what turning a tool's output into an observation costs in its text guards, per observation.

Run from the project root: `python benchmarks/redaction.py`. Prints the median microseconds of the key
redactor (core/secrets.SecretRedactor, five configured keys) and of the protocol-label quoting
(prompt/quoting.quote_labels) on pages of 5 kB, 50 kB and 200 kB of ordinary prose with line breaks, a
URL with percent-escapes and a base64 image: first with no key in them (the common case), then with one key
planted once, wrapped over two lines with a zero-width space inside. Beside them, the exact-match test the
redactor made before it saw through encodings (lower-case the text, one substring test per form), as the
reference on the same machine at the same moment. Times are CPU time (the machine may be shared).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KEYS = {"sk-proj-Zq8Jr2Lm4Nn6Pp8Qq0Rr2Ss4Tt6Uu8Vv": "OPENAI_API_KEY",
        "sk-ant-api03-Kx7Wd9Hg2Bf4Cs6Dy8Ez0": "ANTHROPIC_API_KEY",
        "a1b2c3d4e5f60718293a4b5c6d7e8f90": "SERPER_API_KEY",
        "AIzaSyD3m0Fake9Key8For7Bench6Mark5": "GEMINI_API_KEY",
        "tvly-dev-0123456789abcdefABCDEF": "TAVILY_API_KEY"}
PROSE = ("the of and a to in is was for on that with as by at from it an be this are which or have has had "
         "river freight tonnes trial adults enrolled study results percent growth harbour shipping report")
WORDS = PROSE.split()


def page(size: int, seed: int = 7) -> str:
    """Prose of about `size` characters in lines of ~80, with a URL and a base64 blob among them."""
    rng = random.Random(seed)
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + "."
        if rng.random() < 0.03:
            line += " See https://example.org/search?q=river%20freight&page=2%2F3 for more."
        if rng.random() < 0.01:
            line = "data:image/png;base64," + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/")
                                                    for _ in range(76))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def median_us(call: Callable[[], object], repeats: int) -> float:
    """Median CPU time of call() in microseconds."""
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        call()
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1e6


def exact_only(forms: list[str]) -> Callable[[str], bool]:
    """The quick test of the redactor before issue 58.10: the lower-cased text, one substring test per form."""
    def test(text: str) -> bool:
        lowered = text.lower()
        return any(form in lowered for form in forms)
    return test


def main() -> None:
    """Print one line per measurement."""
    from core.secrets import SecretRedactor, without_prefix
    from prompt.quoting import quote_labels

    redact = SecretRedactor(KEYS)
    before = exact_only([f.lower() for k in KEYS for f in (k, without_prefix(k))])
    key = next(iter(KEYS))
    for size in (5_000, 50_000, 200_000):
        clean = page(size)
        half = len(clean) // 2
        planted = clean[:half] + f" {key[:14]}\n   {key[14:20]}\u200b{key[20:]} " + clean[half:]
        repeats = max(20, 2_000_000 // size)
        print(f"{size // 1000:>4} kB  exact-only test: {median_us(lambda t=clean: before(t), repeats):7.0f} us   "
              f"redact, no key: {median_us(lambda t=clean: redact(t), repeats):7.0f} us   "
              f"redact, wrapped key: {median_us(lambda t=planted: redact(t), repeats):7.0f} us   "
              f"quote labels: {median_us(lambda t=clean: quote_labels(t), repeats):7.0f} us")


if __name__ == "__main__":
    main()
