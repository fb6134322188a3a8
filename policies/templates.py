"""Launch and instance templates resolved by value against the templates in the stack.

A resource names its template by literal id, name, URL or version; one the
stack does not hold, or a version other than the one the stack defines, is a
finding, not a pass."""

from __future__ import annotations

from collections.abc import Callable

from gpusizer.policies import evidence, sizing
from gpusizer.policies import resources as res
from gpusizer.policies import view as v

_REF_KEYS = ("id", "launchTemplateId", "name", "launchTemplateName")


def literal_refs(r: sizing.StackResource, unknown: bool = False) -> list[tuple[str, object]]:
    """(template reference, the version it names) written as literal values; with `unknown`, the references
    unknown at preview too (those follow the dependency links)."""
    p = r.props
    refs: list = []
    specs = [p.data.get("launchTemplate") if isinstance(p.data, dict) else None]
    d = p.data if isinstance(p.data, dict) else {}
    mip = (
        ((d.get("mixedInstancesPolicy") or {}).get("launchTemplate") or {})
        if isinstance(d.get("mixedInstancesPolicy"), dict)
        else {}
    )
    if isinstance(mip, dict):
        specs.append(mip.get("launchTemplateSpecification"))
        specs += [o.get("launchTemplateSpecification") for o in mip.get("overrides") or [] if isinstance(o, dict)]
    specs += [c.get("launchTemplateSpecification") for c in d.get("launchTemplateConfigs") or [] if isinstance(c, dict)]
    cr = d.get("computeResources")
    if isinstance(cr, dict):
        specs.append(cr.get("launchTemplate"))
    for s in specs:
        if isinstance(s, dict):
            refs += [(s.get(k), s.get("version")) for k in _REF_KEYS if k in s]
        elif isinstance(s, str):
            refs.append((s, None))
    refs.append((d.get("launchConfiguration"), None))
    refs.append((d.get("sourceInstanceTemplate"), None))
    refs.append((d.get("instanceTemplate"), None))
    refs += [(x.get("instanceTemplate"), None) for x in d.get("versions") or [] if isinstance(x, dict)]
    return [(x, ver) for x, ver in refs if isinstance(x, str) and x.strip() and (unknown or not v.is_unknown(x))]


def _version_problem(t: sizing.StackResource, version) -> str | None:
    """Why a launch template version other than the one the stack defines is launched, or None.

    The stack's template is its latest version. `$Latest`, or the number of
    the latest version, launches what the stack shows; `$Default` does too
    unless the template keeps an older default (`defaultVersion` below
    `latestVersion` without `updateDefaultVersion`). Another number launches an
    earlier version whose types the stack no longer shows (EC2
    LaunchTemplateSpecification.Version, read 2026-11-26). A version number
    for a template whose latest version is computed at preview (created or
    changed by this update) cannot be shown to be the stack's: a finding too.
    """
    if not isinstance(version, (str, int, float)) or isinstance(version, bool) or v.is_unknown(version):
        return None
    d = t.props.data if isinstance(t.props.data, dict) else {}
    latest, default = d.get("latestVersion"), d.get("defaultVersion")
    want = str(version).strip().lower()
    if not isinstance(latest, (int, float, str)) or v.is_unknown(latest):
        if want.lstrip("-").isdigit():  # the template is created or changed in this update: its versions move
            return (
                f"it launches version {want} of template {t.name!r}, whose latest version is computed at preview "
                "(the template is created or changed by this update), so the version it launches cannot be "
                "shown to be the one the stack defines. To fix: launch `$Latest` (or the template's "
                "latestVersion output)"
            )
        return None
    try:
        latest_n = int(float(latest))
        if want == "$latest":
            return None
        if want == "$default":
            if (
                d.get("updateDefaultVersion") is True
                or not isinstance(default, (int, float, str))
                or v.is_unknown(default)
            ):
                return None
            want_n = int(float(default))
        else:
            want_n = int(float(want))
    except ValueError:
        return f"it names version {version!r} of template {t.name!r}, which is no version EC2 accepts"
    if want_n == latest_n:
        return None
    return (
        f"it launches version {want_n} of template {t.name!r}, but the stack defines version {latest_n}: the "
        "types of an earlier version cannot be read here. To fix: launch `$Latest` (or the template's "
        "latestVersion output)"
    )


def names(t: sizing.StackResource) -> set[str]:
    d = {str(k).lower(): x for k, x in t.props.data.items()} if isinstance(t.props.data, dict) else {}
    out = {t.name}
    for k in (
        "id",
        "name",
        "selflink",
        "selflinkunique",
        "arn",
        "launchtemplatename",
        "launchtemplateid",
        "nodegroupname",
    ):
        x = d.get(k)
        if isinstance(x, str) and not v.is_unknown(x):
            out |= {x, evidence.normal(x.split("?")[0])}
    return {x.strip().lower() for x in out if x}


def named(ref: str, pool: list[sizing.StackResource]) -> list[sizing.StackResource]:
    """The resources of `pool` that a literal reference names: by name, id, ARN or URL (its last segment, any
    query dropped), case-blind."""
    key = ref.strip().lower()
    short = evidence.normal(key.split("?")[0])
    return [t for t in pool if key in names(t) or short in names(t)]


def templates(
    r: sizing.StackResource, by_urn: dict[str, sizing.StackResource], allowed: Callable[[str], bool] = lambda ref: False
) -> list[sizing.StackResource]:
    """The launch or instance templates in the stack that `r` launches: those its literal references name
    (by name, id or URL), else those it depends on (a reference unknown at preview).

    `allowed(ref)`: a reference the pack config allows to name a template outside the stack (reviewed by the
    platform team); it resolves to nothing.

    Raises:
        ValueError: a literal reference that no template in the stack has (its GPUs cannot be known), or a
            version of a template other than the one the stack defines.
    """
    refs = literal_refs(r)
    if not refs:
        linked = [by_urn[d] for d in r.dependencies if d in by_urn and by_urn[d].type in res.TEMPLATES]
        versions = [ver for _, ver in literal_refs(r, unknown=True)]
        if len(linked) == 1:  # one template, named by an output: the version it names still counts
            for version in versions:
                why = _version_problem(linked[0], version)
                if why:
                    raise ValueError(why)
        return linked
    pool = [t for t in by_urn.values() if t.type in res.TEMPLATES]
    out = []
    for ref, version in refs:
        found = named(ref, pool)
        if not found and allowed(ref):
            continue
        if not found:
            raise ValueError(
                f"it launches from a template that is not in this stack ({ref!r}), so the pack cannot "
                "verify its GPUs. To fix: keep the launch or instance template in this stack (referenced "
                "by its output), or name the instance types on the resource; or, for a template the platform "
                "team has reviewed, allow it in the pack config: gpusizer-no-overprovisioning.allowTemplates: "
                f"[{{template: {ref!r}, reason: ...}}]"
            )
        for t in found:
            why = _version_problem(t, version)
            if why:
                raise ValueError(why)
        out += [t for t in found if t not in out]
    return out
