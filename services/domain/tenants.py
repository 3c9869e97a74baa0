"""Teams and what each owns (issue 53): the tenants file (``BALLAST_TENANTS_FILE``) names each team, its Kafka
principal, the topic names it owns and its quotas; these rules say whether a spec arriving from a tenant may be acted
on. Kafka enforces who writes which spec topic (ACLs); these rules enforce what a spec on it may ask for.

```yaml
admins: [User:platform]            # may adopt any topic and ask for rebalances
tenants:
  - name: payments
    principal: User:payments
    topics: {prefixes: ["payments.", "pay-"]}      # or {pattern: '^pay(ments)?[.-]'}
    quota:
      partitionsPerTopic: 24
      partitions: 200              # over all of the tenant's topics
      replicas: {min: 3, max: 4}
      retentionMs: {max: 604800000}
      retentionBytes: {max: 107374182400}
      maxMessageBytes: {max: 1048576}
      allowedConfigs: [cleanup.policy, retention.ms, min.insync.replicas]   # none: any config not forbidden
      forbiddenConfigs: [unclean.leader.election.enable]
    rebalances: false              # may it ask for rebalances (default: no)
```

Each refusal names its rule (``quota.partitions``, ``owner``, ...), as the policy's do."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from events import TopicSpec, TopicSpecDeleted
from events.conditions import NOT_OWNER, QUOTA_EXCEEDED
from events.names import check_tenant_name
from services.domain.policy import Bounds, Violation

_PRINCIPAL = re.compile(r"^[A-Za-z]+:.+$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class TopicNames(_Model):
    """The names a tenant owns: any of the prefixes, or the pattern (a regular expression searched from the start)."""

    prefixes: list[str] = Field(default_factory=list)
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            re.compile(pattern)
        return pattern

    @model_validator(mode="after")
    def _some(self) -> TopicNames:
        if not self.prefixes and self.pattern is None:
            raise ValueError("a tenant owns topics by prefixes or by a pattern: give one")
        if any(not p for p in self.prefixes):
            raise ValueError("an empty prefix would own every topic")
        return self

    def match(self, topic: str) -> bool:
        return any(topic.startswith(p) for p in self.prefixes) or (
            self.pattern is not None and re.match(self.pattern, topic) is not None)


class Quota(_Model):
    partitions_per_topic: int | None = Field(default=None, ge=1)
    partitions: int | None = Field(default=None, ge=1)
    replicas: Bounds = Bounds()
    retention_ms: Bounds = Bounds()
    retention_bytes: Bounds = Bounds()
    max_message_bytes: Bounds = Bounds()
    allowed_configs: list[str] | None = None
    forbidden_configs: list[str] = Field(default_factory=list)


class Tenant(_Model):
    name: str
    principal: str
    topics: TopicNames
    quota: Quota = Quota()
    rebalances: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        return check_tenant_name(name)

    @field_validator("principal")
    @classmethod
    def _principal(cls, principal: str) -> str:
        if not _PRINCIPAL.match(principal):
            raise ValueError(f"invalid principal {principal!r}: Kafka's form is TYPE:NAME, e.g. User:payments")
        return principal


class Tenants(_Model):
    admins: list[str] = Field(default_factory=list)
    tenants: list[Tenant] = Field(default_factory=list)

    @model_validator(mode="after")
    def _distinct(self) -> Tenants:
        for field in ("name", "principal"):
            seen: set[str] = set()
            for tenant in self.tenants:
                value = getattr(tenant, field)
                if value in seen:
                    raise ValueError(f"two tenants have the {field} {value!r}")
                seen.add(value)
        for tenant in self.tenants:
            for other in self.tenants:
                shared = [p for p in tenant.topics.prefixes for q in other.topics.prefixes
                          if tenant is not other and p.startswith(q)]
                if shared:
                    raise ValueError(f"tenants {other.name!r} and {tenant.name!r} both own the names that begin with "
                                     f"{shared[0]!r}: a name has one owner")
        return self

    def named(self, name: str) -> Tenant | None:
        return next((t for t in self.tenants if t.name == name), None)

    def of_principal(self, principal: str) -> Tenant | None:
        return next((t for t in self.tenants if t.principal == principal), None)

    def steward_of(self, topic: str, owner: str | None) -> str | None:
        """The tenant that hears of a topic on its status topic: its owner, if a tenant of the file; for a topic no
        tenant owns (an admin's spec), the one tenant whose names take it, which may take it over or withdraw it
        (none where no tenant's names, or several tenants' patterns, take it)."""
        if owner is not None:
            return owner if self.named(owner) is not None else None
        takers = [t.name for t in self.tenants if t.topics.match(topic)]
        return takers[0] if len(takers) == 1 else None


class TenantsError(ValueError):
    """The tenants file cannot be read or is not a tenants file."""


def load_tenants(path: Path) -> Tenants:
    try:
        return Tenants.model_validate(yaml.safe_load(path.read_text()) or {})
    except OSError as exc:
        raise TenantsError(f"cannot read the tenants file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TenantsError(f"{path}: not valid YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}".lstrip(": ")
                             for e in exc.errors(include_url=False))
        raise TenantsError(f"{path}: not a tenants file: {problems}") from None


# -- the rules ------------------------------------------------------------------------------------------------------

def check_owner(tenant: Tenant, topic: str, owner: str | None) -> Violation | None:
    """Why ``tenant`` may not have a spec for ``topic``: a name outside its own, or one another tenant claimed first
    (``owner``: the tenant whose spec the topic is under, if any)."""
    if not tenant.topics.match(topic):
        return Violation("owner", f"{topic!r} is not among the names of tenant {tenant.name!r} ({_names(tenant)})")
    if owner is not None and owner != tenant.name:
        return Violation("owner", f"{topic!r} is owned by tenant {owner!r}, which claimed the name first")
    return None


def check_adoption(tenant: Tenant, spec: TopicSpec, existing: bool) -> Violation | None:
    """An existing topic is adopted by its owner by name only: a tenant may not take over a topic outside its names
    (``check_owner`` refuses those first); an admin adopts through the admins' spec topic."""
    if spec.adopt and existing and not tenant.topics.match(spec.name):
        return Violation("owner", f"{spec.name!r} exists and is not for tenant {tenant.name!r} to adopt")
    return None


def check_quota(tenant: Tenant, spec: TopicSpec, partitions_elsewhere: int) -> list[Violation]:
    """What the spec asks beyond the tenant's quota; ``partitions_elsewhere``: the partitions of the tenant's other
    topics (their specs', or the cluster's where a spec leaves them to it)."""
    quota = tenant.quota
    found: list[Violation] = []
    if spec.partitions is None and (quota.partitions_per_topic is not None or quota.partitions is not None):
        # The cluster's default would be uncounted: a tenant could grow past its quota one default at a time.
        found.append(Violation("quota.partitions", f"tenant {tenant.name!r} has a partitions quota: its specs give "
                               "their partitions (the cluster's default is not counted)"))
    if spec.partitions is not None:
        if quota.partitions_per_topic is not None and spec.partitions > quota.partitions_per_topic:
            found.append(Violation("quota.partitionsPerTopic", f"{spec.partitions} partitions is above the "
                                   f"{quota.partitions_per_topic} a topic of tenant {tenant.name!r} may have"))
        if quota.partitions is not None and partitions_elsewhere + spec.partitions > quota.partitions:
            found.append(Violation("quota.partitions", f"{spec.partitions} partitions with the "
                                   f"{partitions_elsewhere} of the other topics of tenant {tenant.name!r} is above "
                                   f"its {quota.partitions}"))
    # A value left out is the cluster's default (retention.bytes: -1, no limit), which no bound would check: a tenant
    # with a bound gives the value, as one with a partitions quota gives its partitions.
    if spec.replicas is None and _bounds_set(quota.replicas):
        found.append(_left_out(tenant, "quota.replicas", "replicas"))
    if spec.replicas is not None:
        found += _bounded("quota.replicas", "replicas", spec.replicas, quota.replicas)
    for key, bounds, rule in (("retention.ms", quota.retention_ms, "quota.retentionMs"),
                              ("retention.bytes", quota.retention_bytes, "quota.retentionBytes"),
                              ("max.message.bytes", quota.max_message_bytes, "quota.maxMessageBytes")):
        if key not in spec.config and _bounds_set(bounds):
            found.append(_left_out(tenant, rule, key))
        if key in spec.config and (value := _number(spec.config[key])) is not None:
            # Kafka's -1 is "no limit": above any maximum.
            found += _bounded(rule, key, float("inf") if value < 0 else value, bounds, shown=spec.config[key])
    for key in sorted(spec.config):
        if key in quota.forbidden_configs:
            found.append(Violation(f"quota.forbiddenConfigs:{key}", f"tenant {tenant.name!r} may not set {key}"))
        elif quota.allowed_configs is not None and key not in quota.allowed_configs:
            found.append(Violation(f"quota.allowedConfigs:{key}", f"{key} is not among the configs tenant "
                                   f"{tenant.name!r} may set ({', '.join(quota.allowed_configs) or 'none'})"))
    return found


@dataclass(frozen=True)
class Claim:
    """What the deployment's spec topic says of a name: whose spec it is (None: an admin's) and its partitions (0: left
    to the cluster)."""

    owner: str | None
    partitions: int = 0


@dataclass(frozen=True)
class Decision:
    """The tenant gate's answer to one spec or withdrawal from a tenant: accepted, or refused with a condition
    (``NotOwner`` / ``QuotaExceeded``) and the rules broken."""

    condition: str | None = None
    violations: list[Violation] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.condition is None

    @property
    def rule(self) -> str:
        return ",".join(v.rule for v in self.violations) or "-"

    @property
    def reason(self) -> str:
        # The tenants file's rules, told apart from the policy file's ("policy rule ...").
        return "; ".join(f"tenant rule {v.rule}: {v.message}" for v in self.violations)


def decide(tenant: Tenant, event: TopicSpec | TopicSpecDeleted, claims: Mapping[str, Claim], *,
           existing: bool, kept: Callable[[str], int] = lambda name: 0) -> Decision:
    """Whether ``tenant`` may have ``event`` acted on: the name is its own and nobody else's first (``check_owner``),
    an existing topic is its to adopt (``check_adoption``), and a spec keeps within its quota (``check_quota``, over
    the partitions of the other names ``claims`` give it). ``claims``: the deployment's spec topic, name -> claim;
    ``existing``: the topic is in the cluster; ``kept``: the partitions a topic has in the cluster (0: none, or not
    known), which count where more than its spec's (Kafka cannot remove partitions: a spec asking fewer frees none)."""
    claim = claims.get(event.name)
    if (refused := check_owner(tenant, event.name, claim.owner if claim else None)) is not None:
        return Decision(NOT_OWNER, [refused])
    if isinstance(event, TopicSpecDeleted):
        return Decision()
    if (refused := check_adoption(tenant, event, existing)) is not None:
        return Decision(NOT_OWNER, [refused])
    mine = {name: max(c.partitions, kept(name)) for name, c in claims.items() if c.owner == tenant.name}
    if over := check_quota(tenant, event, partitions_of(tenant, mine, but=event.name)):
        return Decision(QUOTA_EXCEEDED, over)
    return Decision()


def partitions_of(tenant: Tenant, counts: Mapping[str, int], but: str) -> int:
    """The partitions of ``tenant``'s topics other than ``but``, from each topic's count."""
    return sum(count for topic, count in counts.items() if topic != but and tenant.topics.match(topic))


def may_rebalance(tenants: Tenants, principal: str) -> bool:
    """Rebalances and approvals come only from the admins and the tenants the file allows."""
    tenant = tenants.of_principal(principal)
    return principal in tenants.admins or (tenant is not None and tenant.rebalances)


def schema() -> dict[str, Any]:
    """The tenants file's JSON schema (``ballast schema``)."""
    return Tenants.model_json_schema(by_alias=True)


def _bounds_set(bounds: Bounds) -> bool:
    return bounds.min is not None or bounds.max is not None


def _left_out(tenant: Tenant, rule: str, what: str) -> Violation:
    return Violation(rule, f"tenant {tenant.name!r} has bounds on {what}: its specs give it (the cluster's default "
                           "is not checked against them)")


def _bounded(rule: str, what: str, value: float, bounds: Bounds, shown: Any = None) -> list[Violation]:
    shown = value if shown is None else shown
    if bounds.min is not None and value < bounds.min:
        return [Violation(f"{rule}.min", f"{what} {shown} is below the tenant's minimum {bounds.min}")]
    if bounds.max is not None and value > bounds.max:
        return [Violation(f"{rule}.max", f"{what} {shown} is above the tenant's maximum {bounds.max}")]
    return []


def _number(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _names(tenant: Tenant) -> str:
    parts: Iterable[str] = [*(f"{p}*" for p in tenant.topics.prefixes),
                            *([f"/{tenant.topics.pattern}/"] if tenant.topics.pattern else [])]
    return ", ".join(parts)
