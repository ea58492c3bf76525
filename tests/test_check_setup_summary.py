"""check_setup.py as a user runs it: its last line counts every row by its mark (warnings too), keys are judged by
the models a run would call, only what a requirements file names is recommended (with that file), and the
vision rows say why there is no vision model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fakes.cli import GUARD, ROOT, clean_env, trust

PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


def check_setup(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "check_setup.py"), "--offline", *args], cwd=cwd,
                          env=clean_env(OLLAMA_BASE_URL="http://127.0.0.1:9/v1", **env), capture_output=True,
                          text=True, timeout=GUARD)


def rows(out: str, mark: str) -> list[str]:
    """The report's rows with this mark (a fix under a row is not a row)."""
    return [line for line in out.splitlines() if line.startswith(f" {mark}  ")]


def test_keys_are_judged_by_the_chosen_model_and_the_summary_counts_the_warnings(tmp_path: Path) -> None:
    (tmp_path / "models.toml").write_text('[gemma]\nprovider = "openai"\nmodel = "gemma-3-4b"\n'
                                          'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "GEMMA_KEY"\n')
    trust(tmp_path)  # its alias's key and base_url apply: the user trusted the folder
    proc = check_setup(tmp_path, "--model", "gemma", GEMMA_KEY="gemma-key-000000", ANTHROPIC_API_KEY="sk-ant-000000")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    [gemma] = [line for line in rows(out, "✓") if " key GEMMA_KEY " in line]
    assert gemma.endswith("(for the model gemma)")
    [anthropic] = [line for line in rows(out, "✓") if " key ANTHROPIC_API_KEY " in line]
    assert anthropic.endswith("(no chosen model uses it)")
    assert not any(f"key {var}" in out for var in ("OPENAI_API_KEY", "GEMINI_API_KEY"))  # unset, and not needed
    warnings = rows(out, "!")
    assert warnings and not rows(out, "✗")
    assert out.splitlines()[-1] == (f"Ready: {len(rows(out, '✓'))} passed, {len(warnings)} warnings "
                                    "(each with its fix above).")
    assert "pandas" not in out and "numpy" not in out  # no requirements file names them
    assert "optional requirements-ui.txt" in out and "optional requirements-ray.txt" in out
    assert "no vision model: gemma does not accept images" in out


def test_without_any_model_the_summary_counts_the_failure_and_the_vision_rows_say_why(tmp_path: Path) -> None:
    proc = check_setup(tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    [model] = rows(out, "✗")
    assert " model " in model and "no model is configured" in model
    assert not any(f"key {var}" in out for var in PROVIDER_KEYS)  # the model row names them, with the fix
    assert out.splitlines()[-1] == (f"Not ready: 1 failed, {len(rows(out, '✓'))} passed, {len(rows(out, '!'))} "
                                    "warnings (each with its fix above).")
    vision = [line for line in out.splitlines() if line.startswith(" !  images (look)") or
              line.startswith(" !  video (watch)")]
    assert len(vision) == 2 and all(line.endswith("no vision model: no model is configured") for line in vision)
    assert "(none)" not in out
