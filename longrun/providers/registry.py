"""Model providers by registry: each is registered under its prefix with its models table, the
environment names of its key(s), its default model and a factory, so that adding a model touches
no central file.

A run names its model `<prefix>:<model-id>` (or `scripted`). Where a provider comes from, first
match wins, and a prefix taken twice is refused (a second registration must never silently
replace the provider a run was started for):

1. the built-ins (`longrun.providers.builtin`: scripted, anthropic, openai, openai-compatible,
   bedrock, vertex), registered through this same mechanism;
2. a worker's own, `build_worker(providers={"echo": ModelProvider(...)})`;
3. installed packages', by entry point in the group `longrun.providers`, named by the prefix and
   pointing at a `ModelProvider` (or a function returning one):

       [project.entry-points."longrun.providers"]
       echo = "mypkg.models:echo_provider"

Entry points are read lazily: only their names are listed until a run names one, and only that
one is loaded, so a CLI command or an unrelated run never imports a provider's SDK
(tests/test_import_cost.py). The factory itself imports the SDK, when the worker first builds
the provider.

Where validation happens, and why: `RunSpec` checks the model name's *syntax* only (see
`longrun.models.spec.check_model_name`), because a spec is validated in the client's process,
which cannot know a worker's in-process providers. The worker refuses a prefix it has no provider
for at the run's start, before any model call, naming the prefixes it has
(`longrun.activities.trust.WorkerTrust`).
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from longrun.errors import ConfigError
from longrun.models.provider import ModelInfo
from longrun.providers.registration import BARE, ENTRY_POINT_GROUP, ModelProvider, ProviderConfig, prefix_of, split_key

if TYPE_CHECKING:
    from longrun.providers.base import Provider


def _load_entry_point(ep: importlib.metadata.EntryPoint) -> ModelProvider:
    try:
        value = ep.load()
    except Exception as exc:  # a broken third-party package: say which, do not crash the worker
        raise ConfigError(f"model provider {ep.name!r} (entry point {ep.value!r} in group {ENTRY_POINT_GROUP}) "
                          f"failed to load: {exc}; fix or uninstall that package") from exc
    if not isinstance(value, ModelProvider) and callable(value):
        value = value()
    if not isinstance(value, ModelProvider):
        raise ConfigError(f"entry point {ep.value!r} ({ENTRY_POINT_GROUP}: {ep.name}) is not a "
                          "longrun.providers.ModelProvider nor a function returning one")
    return value


class ProviderRegistry:
    """Prefix -> `ModelProvider`: the built-ins, a worker's own, then entry points (lazily).

    Raises (constructor):
        ConfigError: a worker's provider takes a built-in's prefix, or a prefix is malformed.
    """

    def __init__(self, extra: Mapping[str, ModelProvider] | None = None, *, entry_points: bool = True) -> None:
        from longrun.providers.builtin import BUILTIN

        self._builtin: dict[str, ModelProvider] = dict(BUILTIN)
        self._extra: dict[str, ModelProvider] = {}
        for prefix, provider in (extra or {}).items():
            _check_prefix(prefix)
            if prefix in self._builtin:
                raise ConfigError(f"model provider {prefix!r} is a built-in one: register yours under another prefix")
            if not isinstance(provider, ModelProvider):
                raise ConfigError(f"providers[{prefix!r}] must be a longrun.providers.ModelProvider, got "
                                  f"{type(provider).__name__}")
            self._extra[prefix] = provider
        self._use_entry_points = entry_points
        self._entry_points: dict[str, importlib.metadata.EntryPoint] | None = None
        self._loaded: dict[str, ModelProvider] = {}
        self._lock = threading.Lock()

    def _eps(self) -> dict[str, importlib.metadata.EntryPoint]:
        if self._entry_points is None:
            found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if self._use_entry_points else ()
            self._entry_points = {ep.name: ep for ep in found}
        return self._entry_points

    def names(self) -> list[str]:
        """Every registered prefix (entry points by name, none loaded)."""
        return sorted({*self._builtin, *self._extra, *self._eps()})

    def get(self, prefix: str) -> ModelProvider | None:
        """The provider registered under `prefix`, None when none is."""
        found = self._builtin.get(prefix) or self._extra.get(prefix)
        if found is not None:
            return found
        with self._lock:
            if prefix not in self._loaded:
                ep = self._eps().get(prefix)
                if ep is None:
                    return None
                self._loaded[prefix] = _load_entry_point(ep)
            return self._loaded[prefix]

    def refusal(self, model: str) -> str | None:
        """Why `model` cannot be built here (None: a provider is registered for its prefix)."""
        prefix, model_id = prefix_of(model)
        if self.get(prefix) is not None and (bool(model_id) != (prefix == BARE)):
            return None
        listed = ", ".join(p if p == BARE else f"{p}:" for p in self.names())
        return (f"unknown model {split_key(model)[0]!r}: no model provider is registered here for {prefix!r} "
                f"(registered: {listed}). Start the run with one of those, or register the provider on the "
                f"workers: build_worker(providers={{{prefix!r}: ModelProvider(...)}}) or an entry point in the "
                f"group {ENTRY_POINT_GROUP!r} (docs/LIBRARY.md, Custom models)")

    def provider(self, model: str) -> tuple[ModelProvider, str]:
        """(the registration, the model id) of `model`.

        Raises:
            ConfigError: no provider is registered for its prefix."""
        why = self.refusal(model)
        if why is not None:
            raise ConfigError(why)
        prefix, model_id = prefix_of(model)
        found = self.get(prefix)
        assert found is not None
        return found, model_id

    def model_info(self, key: str) -> ModelInfo:
        """The window and output limit of a model key."""
        provider, model_id = self.provider(key)
        return provider.model_info(key, model_id)

    def missing_keys(self, model: str, environ: Mapping[str, str]) -> list[str]:
        """The key names `model`'s provider needs that `environ` lacks (empty when unknown here)."""
        prefix, _ = prefix_of(model)
        found = self.get(prefix)
        return [k for k in found.keys if not environ.get(k)] if found else []

    def build(self, key: str, *, environ: Mapping[str, str],
              allowed_base_urls: Iterable[str] | None = None) -> Provider:
        """The provider of a model key, built by its registration's factory.

        Raises:
            ConfigError: an unknown prefix or model id, a missing key (named), or the factory's own."""
        provider, model_id = self.provider(key)
        name, params = split_key(key)
        missing = [k for k in provider.keys if not environ.get(k)]
        if missing:
            raise ConfigError(f"model {name!r} needs {' and '.join(missing)}: set it where the workers run, or run "
                              "with model 'scripted'")
        config = ProviderConfig(
            name=name, model_id=model_id, info=provider.model_info(key, model_id), params=params,
            env={k: environ[k] for k in (*provider.keys, *provider.env) if environ.get(k)},
            allowed_base_urls=None if allowed_base_urls is None else tuple(allowed_base_urls),
        )
        return provider.factory(config)


def start_notes(model: str, environ: Mapping[str, str], registry: ProviderRegistry | None = None) -> list[str]:
    """What the process starting a run should tell its user about `model`: a prefix with no
    provider here (the workers may still register it in process), or a key not set here. Notes,
    not refusals: the workers, not this process, have the providers and the keys."""
    registry = registry or ProviderRegistry()
    prefix, _ = prefix_of(model)
    try:
        unknown = registry.refusal(model)
    except ConfigError as exc:  # a broken entry point here: the workers may not have it
        return [str(exc)]
    if unknown is not None:
        listed = ", ".join(registry.names())
        return [f"no model provider {prefix!r} is registered here (registered: {listed}); the run fails at its "
                f"start unless the workers register it (build_worker(providers=...) or an entry point in the "
                f"group {ENTRY_POINT_GROUP!r})"]
    return [f"{key} is not set here; the workers need it" for key in registry.missing_keys(model, environ)]


def _check_prefix(prefix: str) -> None:
    from longrun.models.spec import MODEL_PREFIX

    if not MODEL_PREFIX.fullmatch(prefix):
        raise ConfigError(f"model provider prefix {prefix!r} must be lower-case letters, digits and '-', starting "
                          "with a letter (a run then names its models '<prefix>:<model-id>')")


def default_model(environ: Mapping[str, str]) -> str:
    """The model a run gets when neither --model nor LONGRUN_MODEL says: the first built-in with a
    `default_model` whose keys are all set (Claude, with ANTHROPIC_API_KEY), else `scripted`.
    Built-ins only: every CLI command computes this, and must not load third-party packages."""
    from longrun.providers.builtin import BUILTIN

    for provider in BUILTIN.values():
        if provider.default_model and provider.keys and all(environ.get(k) for k in provider.keys):
            return provider.default_model
    return BARE


__all__ = ["BARE", "ENTRY_POINT_GROUP", "ModelProvider", "ProviderConfig", "ProviderRegistry", "default_model", "prefix_of",
           "split_key", "start_notes"]
