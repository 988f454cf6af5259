"""Models by registry (issue 27, item 4): a provider is registered under its prefix with its models
table, key names and factory, by `build_worker(providers=...)` or by an entry point in the group
`longrun.providers`; a run names `<prefix>:<model-id>`, and a worker without that prefix refuses
the run at its start, naming the prefixes it has. Shown with a real worker, the real Temporal dev
server and Postgres, and a real distribution's metadata on sys.path."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pydantic
import pytest

from longrun.errors import ConfigError
from longrun.models.audit import ModelCalled, ToolRan
from longrun.models.spec import RunSpec
from longrun.providers import ModelProvider, ProviderConfig, ProviderRegistry, get_provider
from longrun.service.settings import Settings
from longrun.service.worker import build_worker
from tests.support.harness import Harness
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hello from the workspace\n")
    return path


class LocalModel:
    """A local deterministic model provider as a third party writes one: its table, its key's
    name, and a factory that records what it was built with."""

    def __init__(self) -> None:
        self.built: list[ProviderConfig] = []
        self.providers: list[PlanProvider] = []

    def factory(self, config: ProviderConfig) -> PlanProvider:
        self.built.append(config)
        plan = PlanProvider(plan=[[("read_file", {"path": "hello.txt"})], [("set_next_action", {"next_action": "stop"})]],
                            name=config.name, info=config.info)
        self.providers.append(plan)
        return plan

    def registration(self) -> ModelProvider:
        return ModelProvider(factory=self.factory, models={"v1": (64_000, 4_096)}, keys=("LOCALECHO_API_KEY",),
                             description="a local deterministic model")


async def _run(temporal_client: Any, store: Any, spec: RunSpec, providers: dict[str, ModelProvider]) -> Any:
    queue = f"tq-{uuid.uuid4().hex[:10]}"
    worker = build_worker(temporal_client, store, settings=Settings.from_env(), providers=providers, task_queue=queue,
                          heartbeat_every=0.5)
    async with worker:
        h = Harness(temporal_client, store, queue)
        run_id = await h.start(spec)
        return run_id, await h.result(run_id)


async def test_a_provider_handed_to_build_worker_runs_a_run(store, temporal_client, ws, monkeypatch):
    monkeypatch.setenv("LOCALECHO_API_KEY", "local-key-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-this-provider")
    local = LocalModel()
    spec = RunSpec(objective="Read hello.txt.", workspace=str(ws), approvers=["alice"], model="localecho:v1")
    run_id, result = await _run(temporal_client, store, spec, {"localecho": local.registration()})
    assert result.status == "completed", result.reason
    assert [c.name for c in local.built] == ["localecho:v1"], "one provider per model key, built by its factory"
    config = local.built[0]
    assert (config.model_id, config.info.window, config.info.max_output) == ("v1", 64_000, 4_096)
    assert dict(config.env) == {"LOCALECHO_API_KEY": "local-key-1"}, "a provider sees only the names it declared"
    assert len(local.providers[0].requests) >= 2, "the run's model calls went to the registered provider"
    events = [r.event for r in store.audit(run_id)]
    assert any(isinstance(e, ToolRan) and e.tool == "read_file" for e in events)
    assert any(isinstance(e, ModelCalled) for e in events)


async def test_an_unknown_prefix_fails_the_run_at_start_naming_the_registered_ones(store, temporal_client, ws):
    local = LocalModel()
    spec = RunSpec(objective="Read hello.txt.", workspace=str(ws), approvers=["alice"], model="nosuch:model-1")
    _run_id, result = await _run(temporal_client, store, spec, {"localecho": local.registration()})
    assert result.status == "failed"
    reason = result.reason or ""
    assert "'nosuch'" in reason and "localecho:" in reason and "anthropic:" in reason and "scripted" in reason, reason
    assert "build_worker(providers=" in reason and "longrun.providers" in reason, "the refusal says what to do"
    assert local.built == [], "refused before any provider was built"


def test_a_spec_accepts_any_prefix_by_syntax_and_the_registry_refuses_an_unknown_one(ws):
    assert RunSpec(objective="x", workspace=str(ws), model="localecho:v1").model == "localecho:v1"
    for bad in ("Local Echo:v1", "localecho:", "localecho:v1?window=9", "gpt-5"):
        with pytest.raises(pydantic.ValidationError, match="model must be"):
            RunSpec(objective="x", workspace=str(ws), model=bad)
    with pytest.raises(ConfigError) as refused:
        get_provider("nosuch:model-1")
    message = str(refused.value)
    assert "unknown model 'nosuch:model-1'" in message
    for prefix in ("anthropic:", "openai:", "openai-compatible:", "bedrock:", "vertex:", "scripted"):
        assert prefix in message, message


def test_a_worker_provider_may_not_take_a_built_in_prefix() -> None:
    with pytest.raises(ConfigError, match="'anthropic' is a built-in"):
        ProviderRegistry({"anthropic": LocalModel().registration()})
    with pytest.raises(ConfigError, match="prefix 'Bad Name'"):
        ProviderRegistry({"Bad Name": LocalModel().registration()})


def test_a_missing_key_is_named_before_the_factory_runs(monkeypatch) -> None:
    monkeypatch.delenv("LOCALECHO_API_KEY", raising=False)
    local = LocalModel()
    with pytest.raises(ConfigError, match="needs LOCALECHO_API_KEY"):
        ProviderRegistry({"localecho": local.registration()}).build("localecho:v1", environ={})
    assert local.built == []


ENTRY_MODULE = '''
from longrun.models.provider import ModelInfo
from longrun.providers import ModelProvider


class Fixed:
    def __init__(self, config):
        self.name = config.name
        self.info = config.info

    def complete(self, request):
        raise NotImplementedError

    def count_tokens(self, request):
        return 1


provider = ModelProvider(factory=Fixed, models={"small": (16_000, 2_000)})
'''


def _install_distribution(root: Path) -> None:
    """A real (if tiny) installed distribution: a module and its dist-info with entry_points.txt,
    as pip leaves them in site-packages."""
    (root / "eplocal_models.py").write_text(ENTRY_MODULE)
    info = root / "eplocal_models-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: eplocal-models\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[longrun.providers]\neplocal = eplocal_models:provider\n")


def test_an_entry_point_provider_is_found_and_loaded_only_when_named(tmp_path: Path) -> None:
    _install_distribution(tmp_path)
    probe = (
        "import sys; from longrun.providers.registry import ProviderRegistry; r = ProviderRegistry(); "
        "print('eplocal' in r.names(), 'eplocal_models' in sys.modules, r.refusal('anthropic:x') is None, "
        "'eplocal_models' in sys.modules); "
        "p = r.build('eplocal:small', environ={}); "
        "print(p.name, p.info.window, p.info.max_output, 'eplocal_models' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env=_env_with_path(tmp_path))
    assert out.returncode == 0, out.stderr
    listed, built = out.stdout.strip().splitlines()
    assert listed == "True False True False", "listed by name, not imported until a run names it"
    assert built == "eplocal:small 16000 2000 True"


def test_a_broken_entry_point_is_a_config_error_naming_it(tmp_path: Path) -> None:
    _install_distribution(tmp_path)
    (tmp_path / "eplocal_models.py").write_text("raise ImportError('no such sdk')\n")
    probe = ("from longrun.providers.registry import ProviderRegistry\n"
             "try:\n    ProviderRegistry().build('eplocal:small', environ={})\n"
             "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env=_env_with_path(tmp_path))
    assert out.stdout.startswith("ConfigError model provider 'eplocal'"), out.stdout + out.stderr
    assert "no such sdk" in out.stdout and "fix or uninstall" in out.stdout


def _env_with_path(root: Path) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    return env


def test_longrun_start_notes_a_prefix_or_key_unknown_in_its_own_process() -> None:
    from longrun.providers.registry import start_notes

    assert start_notes("anthropic:claude-sonnet-4-6", {}) == ["ANTHROPIC_API_KEY is not set here; the workers need it"]
    assert start_notes("anthropic:claude-sonnet-4-6", {"ANTHROPIC_API_KEY": "k"}) == []
    assert start_notes("scripted", {}) == []
    (note,) = start_notes("nosuch:model-1", {})
    assert "no model provider 'nosuch'" in note and "anthropic" in note and "fails at its start" in note, note
