"""Guardrails on topic specs: one policy file, checked by `ballast diff` / `apply` before anything is published and by
the topic reconciler on every spec from the bus, so a spec produced by hand meets the same rules.

```yaml
replicas: {min: 2, max: 5}
partitions: {max: 1000}
minInsyncMargin: refuse      # RF >= min.insync.replicas + 1: warn (the default), refuse, or off
requiredConfigs:             # a value: exactly it; null: any value, but set
  cleanup.policy: null
forbiddenConfigs: [unclean.leader.election.enable]
namePattern: '^[a-z][a-z0-9.-]*$'
deletionProtection: ['^prod\\.']   # topics whose spec may not be withdrawn
```

Every rule has a name (``replicas.min``, ``required-config:cleanup.policy``, ...) that the refusal carries, so a
status or a CI log says which rule to read."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from events import TopicSpec


class Bounds(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min: int | None = Field(default=None, ge=1)
    max: int | None = Field(default=None, ge=1)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    replicas: Bounds = Bounds()
    partitions: Bounds = Bounds()
    min_insync_margin: Literal["warn", "refuse", "off"] = "warn"
    required_configs: dict[str, str | None] = Field(default_factory=dict)
    forbidden_configs: list[str] = Field(default_factory=list)
    name_pattern: str | None = None
    deletion_protection: list[str] = Field(default_factory=list)

    @field_validator("name_pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value

    @field_validator("deletion_protection")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            re.compile(pattern)
        return value


class PolicyError(ValueError):
    """The policy file cannot be read or says something that is not a policy."""


def load_policy(path: Path | None) -> Policy:
    """The policy in ``path``; no path: the default policy (only the min.insync.replicas warning)."""
    if path is None:
        return Policy()
    try:
        document = yaml.safe_load(path.read_text()) or {}
        return Policy.model_validate(document)
    except OSError as exc:
        raise PolicyError(f"cannot read the policy file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not valid YAML: {exc}") from None
    except (ValidationError, re.error) as exc:
        raise PolicyError(f"{path}: not a policy: {exc}") from None


class PolicyFile:
    """A service's policy: read at start (a file that is not a policy stops the service there, with why), then again
    whenever the file changes, so an edited policy applies without a restart. An edit that is not a policy keeps the
    last good one and is reported to ``on_error``: a service never stops on a bad edit."""

    def __init__(self, path: Path | None, on_error: Callable[[str], None]) -> None:
        self.path, self._on_error = path, on_error
        self._stamp = self._stat()
        self._policy = load_policy(path)

    def _stat(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def current(self) -> Policy:
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._policy = load_policy(self.path)
            except PolicyError as exc:
                self._on_error(f"{exc}; the previous policy stays in force")
        return self._policy


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    refused: bool = True  # False: a warning only

    def __str__(self) -> str:
        return f"policy rule {self.rule}: {self.message}"


def check_spec(policy: Policy, spec: TopicSpec) -> list[Violation]:
    """Every rule the spec breaks, refusals first. A count the spec leaves to the cluster is checked once it is known
    (the reconciler checks the effective spec: the cluster's default, or the topic's own)."""
    found: list[Violation] = []
    for field, value in (("replicas", spec.replicas), ("partitions", spec.partitions)):
        if value is None:
            continue
        bounds: Bounds = getattr(policy, field)
        if bounds.min is not None and value < bounds.min:
            found.append(Violation(f"{field}.min", f"{field} {value} is below the minimum {bounds.min}"))
        if bounds.max is not None and value > bounds.max:
            found.append(Violation(f"{field}.max", f"{field} {value} is above the maximum {bounds.max}"))
    for key, wanted in sorted(policy.required_configs.items()):
        if key not in spec.config:
            found.append(Violation(f"required-config:{key}", f"the spec must set {key}"
                                   + (f" (to {wanted})" if wanted is not None else "")))
        elif wanted is not None and spec.config[key] != wanted:
            found.append(Violation(f"required-config:{key}", f"{key} must be {wanted}, not {spec.config[key]}"))
    for key in policy.forbidden_configs:
        if key in spec.config:
            found.append(Violation(f"forbidden-config:{key}", f"the spec may not set {key}"))
    if policy.name_pattern is not None and not re.search(policy.name_pattern, spec.name):
        found.append(Violation("name-pattern", f"the name does not match {policy.name_pattern}"))
    if policy.min_insync_margin != "off" and (margin := _min_insync_margin(spec)) is not None:
        found.append(Violation("min-insync-margin", margin, refused=policy.min_insync_margin == "refuse"))
    return sorted(found, key=lambda v: not v.refused)


def check_withdrawal(policy: Policy, name: str) -> Violation | None:
    """Why the spec of ``name`` may not be withdrawn, or None."""
    for pattern in policy.deletion_protection:
        if re.search(pattern, name):
            return Violation("deletion-protection", f"the topic matches {pattern}: its spec may not be withdrawn "
                                                    "(change the policy first)")
    return None


def refusals(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.refused]


def _min_insync_margin(spec: TopicSpec) -> str | None:
    """RF >= min.insync.replicas + 1: with fewer, losing one broker stops acks=all producers."""
    raw = spec.config.get("min.insync.replicas")
    try:
        min_isr = int(raw) if raw is not None else None
    except ValueError:
        return None
    if min_isr is None or spec.replicas is None or spec.replicas >= min_isr + 1:
        return None
    return (f"replicas {spec.replicas} < min.insync.replicas {min_isr} + 1: one broker down stops producers that "
            "use acks=all")
