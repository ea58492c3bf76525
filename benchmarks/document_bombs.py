"""Issue 52's document bombs and issue 58's parser bombs, before and after: the agent's own peak memory and what
stops each one.

The bombs are made by tests/fakes/bombs.py at the issues' sizes: an ODS of about 1 KB whose repeats make 1,000
cells x 1,000 columns x 1,000 rows, a 36 KB DOCX with a cell spanning 100,000,000 grid columns, and a PDF of
1,000 pages sharing one content stream of 5 MB of text operators (near the most pypdf 7 parses in one stream);
then what look and read_file parsed in the agent until issue 58: a 500 KB PNG of 13,000 x 13,000 pixels (look's
picture), a PDF page naming one 5,000 x 5,000 image 100 times (look's page picture) and a 95 MB ZIP of only a
central directory (a member read as 'many.zip/m000000001').

After (always): each is read as read_file reads it (tools.documents.confined.convert, the converter's child under
the default limits, 1 GB and 60 s; issue 58's as look and read_file read them now), in a fresh process standing
for the agent, which reads the file and hands it over; printed are the seconds until the limit stopped it, its
message, and that process's peak resident memory (ru_maxrss: the agent's own, not its children's) before the
call (its imports and the file's bytes) and after.

Before (--before): each is converted as the agent did before issue 52 (tools.documents.convert.convert in the
agent's own process), here in a process of its own capped at --cap-gb of address space and --seconds, whose
peak resident memory os.wait4 reports even when it is killed; issue 58's bombs are parsed there as the agent
parsed them before (Pillow's open, convert and thumbnail; every image pypdf finds on the page; zipfile's
listing). It needs that memory free: run it on a quiet machine.

    python benchmarks/document_bombs.py [--before [--cap-gb 4] [--seconds 120]] [huge.png images.pdf many.zip ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.bombs import (  # noqa: E402
    docx_bomb,
    ods_bomb,
    pdf_image_bomb,
    png_bomb,
    slow_pdf,
    zip_directory_bomb,
)
from tools.documents.confined import DocLimits, archive_member, convert, pictures  # noqa: E402

BOMBS: list[tuple[str, Callable[[], bytes]]] = [
    ("bomb.ods", ods_bomb),
    ("bomb.docx", docx_bomb),
    ("slow.pdf", lambda: slow_pdf(pages=1_000, stream_bytes=5_000_000)),
    ("huge.png", png_bomb),
    ("images.pdf", pdf_image_bomb),
    ("many.zip", zip_directory_bomb),
]
# Issue 58's: what the agent's tool does now (in the child), and what the agent did itself before.
NOW: dict[str, Callable[[bytes], object]] = {
    "huge.png": lambda data: pictures(data, "huge.png", None, False, DocLimits()),
    "images.pdf": lambda data: pictures(data, "images.pdf", 1, False, DocLimits()),
    "many.zip": lambda data: archive_member(data, "m000000001", DocLimits()),
}
PARSED_BEFORE = {
    "huge.png": "from PIL import Image\npicture = Image.open(io.BytesIO(data)).convert('RGB')\n"
                "picture.thumbnail((1568, 1568))",
    "images.pdf": "from pypdf import PdfReader\n"
                  "pictures = [p.data for p in PdfReader(io.BytesIO(data)).pages[0].images]",
    "many.zip": "import zipfile\nzipfile.ZipFile(io.BytesIO(data)).infolist()",
}
BEFORE = """import io, resource, sys, time
sys.path.insert(0, sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[3]), int(sys.argv[3])))
from tools.documents.convert import convert
data = open(sys.argv[2], "rb").read()
start = time.perf_counter()
try:
    if len(sys.argv) > 5:
        exec(sys.argv[5])
    else:
        convert(sys.argv[4], data)
    print(f"converted in {time.perf_counter() - start:.1f} s")
except MemoryError:
    print(f"MemoryError at the {int(sys.argv[3]) >> 30} GB cap after {time.perf_counter() - start:.1f} s")
"""


def peak_mb() -> float:
    """This process's peak resident memory so far, in MB: VmHWM (of this program's own memory: ru_maxrss carries
    over the peak of the process that started it, which holds the bombs), else ru_maxrss."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def after(name: str, data: bytes) -> str:
    """A table row: the bomb converted in the child under the default limits."""
    before = peak_mb()
    start = time.perf_counter()
    try:
        NOW[name](data) if name in NOW else convert(name, data, DocLimits())
        outcome = "converted"
    except Exception as exc:  # noqa: BLE001 - the limit's message is the figure
        outcome = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - start
    return f"| {name} | {len(data):,} | {seconds:.1f} | {before:.0f} -> {peak_mb():.0f} | {outcome} |"


def before(name: str, data: bytes, cap_gb: float, seconds: float) -> str:
    """A table row: the bomb converted in a process of its own, as the agent did, under a cap."""
    with tempfile.NamedTemporaryFile(suffix=name) as fh, tempfile.TemporaryFile("w+") as out:
        fh.write(data)
        fh.flush()
        start = time.perf_counter()
        parse = [PARSED_BEFORE[name]] if name in PARSED_BEFORE else []
        pid = subprocess.Popen([sys.executable, "-c", BEFORE, str(ROOT), fh.name, str(int(cap_gb * (1 << 30))),
                                name, *parse], stdout=out, stderr=subprocess.DEVNULL).pid
        outcome = f"still converting after {seconds:.0f} s (killed)"
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                out.seek(0)
                outcome = out.read().strip() or f"ended with status {os.waitstatus_to_exitcode(status)}"
                break
            if time.perf_counter() - start > seconds:
                os.kill(pid, 9)
                _, _, usage = os.wait4(pid, 0)
                break
            time.sleep(0.2)
    return f"| {name} | {len(data):,} | {time.perf_counter() - start:.1f} | {usage.ru_maxrss / 1024:,.0f} | {outcome} |"


def after_in_a_process(name: str, data: bytes) -> str:
    """after() in a fresh process (this script with --one), so that making the bombs does not count."""
    with tempfile.NamedTemporaryFile(suffix=name) as fh:
        fh.write(data)
        fh.flush()
        out = subprocess.run([sys.executable, __file__, "--one", name, fh.name], capture_output=True, text=True)
    return out.stdout.strip() or f"| {name} | {len(data):,} | | | failed: {out.stderr.strip()[-300:]} |"


def main() -> None:
    """Print the after table, and the before table when asked."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", action="store_true", help="also convert each in a capped process, as before")
    p.add_argument("--cap-gb", type=float, default=4.0, help="the before process's address-space cap (GB)")
    p.add_argument("--seconds", type=float, default=120.0, help="the before process's time cap")
    p.add_argument("names", nargs="*", help="only these bombs (default: all)")
    p.add_argument("--one", nargs=2, metavar=("NAME", "FILE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        name, path = args.one
        print(after(name, Path(path).read_bytes()))
        return
    bombs = [(name, make()) for name, make in BOMBS if not args.names or name in args.names]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("after: in the converter's child (1 GB, 60 s)\n| file | bytes | seconds | agent peak MB | outcome |\n"
          "|---|---:|---:|---|---|")
    for name, data in bombs:
        print(after_in_a_process(name, data), flush=True)
    if args.before:
        print(f"before: in the converting process itself (capped at {args.cap_gb:g} GB, {args.seconds:g} s)\n"
              "| file | bytes | seconds | peak MB | outcome |\n|---|---:|---:|---:|---|")
        for name, data in bombs:
            print(before(name, data, args.cap_gb, args.seconds), flush=True)


if __name__ == "__main__":
    main()
