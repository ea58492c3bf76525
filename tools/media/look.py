"""The look tool: show an image (a file, a URL, a PDF page or a PowerPoint slide) to a vision model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from config import Settings
from core.chat import Completion, Message, split_spec
from core.errors import ConfigError, LLMError, TaskStopError, ToolError
from core.images import Image
from llm import default_model
from tools.base import Tool, ToolOutput
from tools.documents.confined import DocLimits
from tools.documents.reading import archive_member
from tools.media.images import images_of
from tools.models import tool_model
from tools.safe_open import open_file, relative_name, workspace_parts
from tools.secrets_guard import SecretGuard
from tools.web.fetch import FetchError
from tools.web.session import session_for

# Model names that take images (checked after the provider); local servers only with a vision family name.
_OPENAI_VISION = re.compile(r"gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|gpt-4-turbo|^o1(?!-mini)|^o3(?!-mini)|^o4")
_LOCAL_VISION = re.compile(r"llava|vision|[-_.]vl\b|vl[-:]|gemma-?3|minicpm-v|pixtral|moondream|qwen.*vl|"
                           r"llama-?4|mistral-small-3|granite.*vision", re.I)
_TEXT_ONLY = re.compile(r"gemma-?3[-_.]?(?:270m|1b)", re.I)  # Gemma 3's two smallest sizes read no images
NO_MODEL = ("no vision model is configured: the main model {main} does not accept images. Set --vision-model "
            "or AGENT_VISION_MODEL to a provider:model that does (e.g. openai:gpt-4.1-mini, "
            "gemini:gemini-2.5-flash, anthropic:claude-haiku-4-5)")
MAX_ANSWER_TOKENS = 2048


class VisionCallError(ToolError):
    """The vision model failed; `usage` holds the replies the provider billed all the same (empty, blocked)."""

    def __init__(self, message: str, usage: list[Completion]) -> None:
        super().__init__(message)
        self.usage = usage


def accepts_images(spec: str, settings: Settings) -> bool:
    """Whether a provider:model reads images: Claude and Gemini do, OpenAI's 4o/4.1/5/o-series do, local
    models only when their name says so (llava, *-vl, gemma3, ...)."""
    provider, model = split_spec(spec)
    name = model.lower()
    if provider == "anthropic":
        return not name.startswith(("claude-2", "claude-instant"))
    if provider == "gemini":
        return True
    if provider == "openai" and _OPENAI_VISION.search(name):
        return True
    return bool(_LOCAL_VISION.search(name)) and not _TEXT_ONLY.search(name)


def vision_spec(settings: Settings) -> tuple[str | None, str]:
    """(the model look uses or None, the main model's spec for messages)."""
    try:
        main = settings.model or default_model(settings)
    except ConfigError:
        main = "(none)"
    if settings.vision_model:
        return settings.vision_model, main
    return (main if accepts_images(main, settings) else None), main


class LookTool(Tool):
    """Ask a vision-capable model a question about an image, a PDF page or a slide."""

    name = "look"
    brief = "Ask a vision model about an image (a file, a URL, a PDF or slide `page`)."
    description = (
        "Ask a vision model a precise question about an image: a workspace file (PNG, JPEG, GIF, WebP, BMP, "
        "TIFF, or a PDF or PowerPoint `page`) or an image URL."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Workspace path or image URL."},
            "question": {"type": "string", "description": "e.g. 'Transcribe all text in the image'."},
            "page": {"type": "integer", "minimum": 1},
        },
        "required": ["path", "question"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path, settings: Settings) -> None:
        self.workspace = Path(workspace)
        self.settings = settings

    def unavailable(self) -> str | None:
        """No vision model: not offered."""
        spec, main = vision_spec(self.settings)
        return NO_MODEL.format(main=main) if spec is None else None

    def run(self, **kwargs: Any) -> ToolOutput:
        """Load and downscale the image(s), ask the vision model, return its answer with the call's usage."""
        spec, main = vision_spec(self.settings)
        if spec is None:
            raise ToolError(NO_MODEL.format(main=main))
        path, question = str(kwargs["path"]).strip(), str(kwargs["question"]).strip()
        data, name, sources = load_source(self.workspace, self.settings, path)
        images = images_of(data, name, kwargs.get("page"), DocLimits.of(self.settings))  # decoded in a child
        completion = self._ask(spec, question, images)
        where = f" (page {kwargs['page']})" if kwargs.get("page") else ""
        return ToolOutput(f"{spec} looked at {name}{where}:\n{completion.text.strip()}", sources,
                          usage=[completion])

    def _ask(self, spec: str, question: str, images: list[Image]) -> Completion:
        prompt = (f"{question}\n\nAnswer from what the image{'s' if len(images) > 1 else ''} show. Read "
                  "numbers and text exactly; say so if something is unreadable or not shown.")
        message: Message = {"role": "user", "content": prompt, "images": images}
        try:
            model = tool_model(spec, self.settings)  # like the main model: --cache/--replay, spend caps first
            return model.complete([message], max_tokens=min(self.settings.max_tokens, MAX_ANSWER_TOKENS),
                                  temperature=0.0)
        except ConfigError as exc:
            raise ToolError(f"the vision model {spec} cannot be used: {exc}") from exc
        except TaskStopError:  # a spend cap or a --replay miss ends the task, as for the main model
            raise
        except LLMError as exc:
            raise VisionCallError(f"the vision model {spec} failed: {exc}", list(exc.billed)) from exc


def load_source(workspace: Path, settings: Settings, path: str) -> tuple[bytes, str, list[str]]:
    """The bytes of a workspace file or a URL (fetched with scrape's safety rules), its name, and sources."""
    if re.match(r"https?://", path, re.I):
        SecretGuard(settings).check(path, "URL")  # a ToolError that names the setting, never the value
        fetcher = session_for(settings).fetcher()  # the run's domain rules, robots.txt and per-host turns
        try:
            result = fetcher.get(path)
        except FetchError as exc:
            raise ToolError(f"could not fetch {path}: {exc}") from exc
        if result.truncated:
            raise ToolError(f"{path} is larger than SCRAPE_MAX_BYTES ({settings.scrape_max_bytes:,} bytes)")
        return result.body, Path(result.url.split("?")[0]).name or "image", [result.url]
    member = archive_member(workspace, path, DocLimits.of(settings))  # 'photos.zip/cat.png', found in a child
    if member is not None:
        return member[1], member[0], []
    with open_file(workspace, path, "r") as fh:
        data = fh.read(max(settings.scrape_max_bytes, 50_000_000))
    return data, relative_name(workspace_parts(workspace, path)), []
