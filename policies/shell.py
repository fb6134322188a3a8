"""Text a shell (or a script) runs, read for what it launches.

policies/evidence.in_text reads the types a command names. A command that
launches capacity can also build its type at run time, where no reader of
the text can see it: `--instance-type "$(printf 'p%d.%dxlarge' 5 48)"`,
`T=$(echo egralx84.5p | rev)`, a value fetched or computed by the script.
The pack guards, so it fails closed: a launch whose type is not a literal
(or a variable the text sets to a literal) is evidence, reported with what
was seen. ANSI-C quoting (`$'\\x70\\x35'`), which bash decodes before the
command sees it, is decoded first so the literal it holds is read as such.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

# Commands and SDK calls that create compute capacity from a type they are given (AWS CLI and SDKs, gcloud, az,
# eksctl, PowerShell, SageMaker's Python SDK, Pulumi and CDK programs). A type built at run time for one of them
# is what the pack cannot read. The AWS API's launch verbs are written once: the CLI spells them with dashes,
# the SDKs with underscores (boto3) or in camel case (JavaScript, Go: `runInstances`, `RunInstancesCommand`);
# `[-_]?` reads all three.
_AWS_VERBS = (
    "run-instances",
    "request-spot-(?:instances|fleet)",
    "create-fleet",
    "create-launch-template(?:-version)?",
    "create-launch-configuration",
    "create-auto-scaling-group",
    "update-auto-scaling-group",
    "create-nodegroup",
    "create-compute-environment",
    "create-endpoint-config",
    "create-training-job",
    "create-notebook-instance",
    "create-capacity-reservation",
    "allocate-hosts",
    "create-instances",
    "run-job-flow",
    "add-instance-groups",
    "create-cluster",
)
_LAUNCH = re.compile(
    r"\b(?:" + "|".join(v.replace("-", "[-_]?") for v in _AWS_VERBS) + r")(?:Command|Request|Input)?|"
    r"\b(?:instances\s+(?:bulk\s+)?create|instance-groups\s+managed\s+(?:create|set-instance-template)|"
    r"instance-templates\s+create|node-pools\s+create|clusters\s+create|"
    r"tpu-vm\s+create|tpus\s+create|vm\s+create|vmss\s+create|aks\s+nodepool\s+add|"
    r"eksctl\s+create\s+(?:nodegroup|cluster)|set-machine-type|queued-resources\s+create|New-EC2Instance|"
    r"instances\(\)\.insert|"
    r"(?:Estimator|HuggingFace|PyTorch|TensorFlow|JumpStartModel|Model)(?=\()|\.deploy(?=\())|"
    r"\b(?:ec2|compute|autoscaling|eks|container|sagemaker|batch)\.(?:Instance|LaunchTemplate|LaunchConfiguration|"
    r"Group|NodeGroup|NodePool|InstanceTemplate|Fleet|SpotFleetRequest|ComputeEnvironment|EndpointConfiguration)"
    r"(?=\()|"  # a Pulumi or CDK program's resource (`aws.ec2.Instance('w', instance_type=...)`)
    r"\bresource\s+\"(?:aws_(?:instance|autoscaling_group|spot_instance_request|spot_fleet_request|ec2_fleet|"
    r"eks_node_group|launch_template)|google_compute_(?:instance(?:_from_template|_group_manager|_template)?|"
    r"region_instance_group_manager)|google_container_node_pool)\"",  # Terraform (HCL)
    re.I,
)
# Launches that name a template they launch from (not the commands that create or describe one).
_CREATES_TEMPLATE = re.compile(
    r"create[-_]?launch[-_]?template|instance-templates\s+create|"
    r"resource\s+\"(?:aws_launch_template|google_compute_instance_template)\"",
    re.I,
)
# The argument that carries the type, in CLI flags, `Key=value` shorthand and SDK keyword arguments.
_TYPE_ARG = re.compile(
    r"(?:--(?:instance|machine|node|vm|accelerator)-types?|--size|--vm-sku|--cli-input-(?:json|yaml)|"
    r"--launch-specification|--node-vm-size|--accelerator(?=[= ]type=)|"
    r"\binstance_?types?|\bmachine_?type|\binstancetype|\bmachinetype|\bvm_?size)"
    r"\\?[\"']?\s*(?:=|:|,|\s|\()\s*\(?\s*(?:type=)?"
    r"(?P<value>\$\([^)]*\)|`[^`]*`|\"[^\"]*\"|'[^']*'|[\w.]+\([^()]*\)|[\w.]+\[[^\]]*\]|[^\s,)]+)"
    r"(?P<more>(?:\s*\+\s*(?:\"[^\"]*\"|'[^']*'|\$?[\w.]+(?:\([^()]*\))?))*)"  # `'p5.' + size`: one value, built
    r"(?P<call>\s*(?:\.\w+\(|%\s*[(\w'\"]))?",  # `'{}.{}'.format(...)`, `'.'.join(...)`, `'p%d' % (5,)`: computed
    re.I,
)
_ASSIGN = re.compile(
    r"(?:^|[\s;(])(?:export\s+|local\s+|declare\s+(?:-\w+\s+)?)?(?P<name>[A-Za-z_]\w*)(?P<py>\s*=\s*)"
    r"(?P<value>\$\([^)]*\)|`[^`]*`|\"[^\"]*\"|'[^']*'|[^\s;]*)",
    re.M,
)
_ASSIGN_DEFAULT = re.compile(r"\$\{(?P<name>[A-Za-z_]\w*):?=(?P<value>[^}]*)\}")  # `: "${T:=t3.small}"`
_FOR = re.compile(r"\bfor\s+(?P<name>[A-Za-z_]\w*)\s+in\s+(?P<words>[^;\n]*)")  # `for t in a b; do`
_REFERENCE = re.compile(r"^\$\{?(?P<name>[A-Za-z_]\w*)(?::?[-=](?P<default>[^}]*))?\}?$")
# Python reading its environment: os.environ["T"], os.environ.get("T", "d"), os.getenv("T", "d")
_PY_ENV = re.compile(
    r"^os\.(?:environ\s*\[\s*|environ\.get\(\s*|getenv\(\s*)[\"'](?P<name>\w+)[\"']\s*"
    r"(?:,\s*(?P<default>\"[^\"]*\"|'[^']*'))?\s*[\])]$"
)
_SDK = re.compile(  # SDK calls (boto3, google-api-python-client, SageMaker, JS, Go, Java, Pulumi): arguments span lines
    r"[a-z_]+_[a-z_]+|instances\(\)\.insert|Estimator|HuggingFace|PyTorch|TensorFlow|JumpStartModel|Model|\.deploy|"
    r"RunInstances|CreateFleet|runInstances|createFleet|(?:ec2|compute|autoscaling|eks|container|sagemaker|batch)\.",
    re.I,
)
_ESCAPED = re.compile(r"\\x([0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})")
_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b", "a": "\a", "0": "\0"}


def _ansi_c(body: str) -> str:
    def one(m: re.Match) -> str:
        s = m.group(0)
        if s[1] in "xX":
            return chr(int(s[2:], 16))
        if s[1] in "uU":
            return chr(int(s[2:], 16))
        if s[1].isdigit() and len(s) > 2:
            return chr(int(s[1:], 8) & 0xFF)
        return _ESCAPES.get(s[1], s)

    return re.sub(r"\\(?:[xX][0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)", one, body)


def decoded(text: str) -> str:
    """`text` with bash's ANSI-C quoting (`$'\\x70\\x35.48xlarge'`) decoded, as bash does before running it,
    and the escapes YAML's double quotes and JSON strings decode (`"nvidia.com\\x2fgpu"`, `"p5\\u002e48xlarge"`),
    as the tool that reads them does."""
    if "$'" in text:
        text = _ANSI_C.sub(lambda m: "'" + _ansi_c(m.group(1)).replace("'", "") + "'", text)
    if "\\x" in text or "\\u" in text:
        text = _ESCAPED.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)
    if "%2" in text:  # a query string's encoding (`InstanceType=p5%2E48xlarge`)
        text = re.sub(r"%2[eE]", ".", text).replace("%2F", "/").replace("%2f", "/")
    return text


# Literals a program joins: with `+`, or adjacent in parentheses as Python (and C) concatenate them.
_CONCATENATED = re.compile(r"([\"'])([^\"'\n]*)\1\s*\+\s*([\"'])([^\"'\n]*)\3")
_ADJACENT = re.compile(r"\(\s*([\"'])([^\"'\n]*)\1\s+([\"'])([^\"'\n]*)\3")


def joined_literals(text: str) -> str:
    """String literals a program concatenates, as one (`'run_' + 'instances'` is `'run_instances'`,
    `('p5' '.48xlarge')` is `('p5.48xlarge')`)."""
    for _ in range(8):  # `'a' + 'b' + 'c'`: one join per pass; eight parts is more than code writes by hand
        joined = _CONCATENATED.sub(lambda m: m.group(1) + m.group(2) + m.group(4) + m.group(1), text)
        joined = _ADJACENT.sub(lambda m: "(" + m.group(1) + m.group(2) + m.group(4) + m.group(1), joined)
        if joined == text:
            break
        text = joined
    return text


_LIT = r"(?:'[^'\n]*'|\"[^\"\n]*\")"
_ARG = _LIT + r"|-?\d+"
_ARGS = rf"(?:{_ARG})(?:\s*,\s*(?:{_ARG}))*"
# Expressions of literals that build a string, in the languages programs launch from: ARM's concat(), Python's
# str.format, %-formatting and str.join, JavaScript's Array.join, Go's fmt.Sprintf, Python's str() of a number.
_EXPRESSIONS = (
    (re.compile(rf"\bconcat\(\s*({_ARGS})\s*\)", re.I), lambda a: "".join(a)),
    (re.compile(rf"({_LIT})\.format\(\s*({_ARGS})\s*\)"), lambda a: _printf(a[0].replace("{}", "%s"), a[1:])),
    (re.compile(rf"({_LIT})\s*%\s*\(\s*({_ARGS})\s*,?\s*\)"), lambda a: _printf(a[0], a[1:])),
    (re.compile(rf"({_LIT})\.join\(\s*\[\s*({_ARGS})\s*\]\s*\)"), lambda a: a[0].join(a[1:])),
    (re.compile(rf"\[\s*({_ARGS})\s*\]\.join\(\s*({_LIT})\s*\)"), lambda a: a[-1].join(a[:-1])),
    (re.compile(rf"\b(?:fmt\.Sprintf|format)\(\s*({_ARGS})\s*\)"), lambda a: _format(a[0], a[1:])),
    (re.compile(r"\bstr\(\s*(-?\d+)\s*\)"), lambda a: a[0]),
)


def _printf(fmt: str, args: list[str]) -> str:
    """A printf-style format of literal arguments (`%s`, `%d`, `%v`), as Python's % and Go's Sprintf fill it."""
    parts = re.split(r"%[sdv]", fmt)
    if len(parts) != len(args) + 1:
        raise ValueError("arguments do not match the format")
    return "".join(p + a for p, a in zip(parts, [*args, ""], strict=True))


def _format(fmt: str, args: list[str]) -> str:
    """Go's and Terraform's `Sprintf`/`format` (`%d`, `%s`), or ARM's `format()` (`{0}`, `{1}`), of literals."""
    if re.search(r"\{\d+\}", fmt):
        return re.sub(r"\{(\d+)\}", lambda m: args[int(m.group(1))], fmt)
    return _printf(fmt, args)


def _arguments(text: str) -> list[str]:
    return [x[1:-1] if x[:1] in "'\"" else x for x in re.findall(_ARG, text)]


def evaluated(text: str) -> str:
    """`text` with each expression of literals that builds a string computed, as the program computes it
    (`'{}.{}'.format('p5', '48xlarge')` is `'p5.48xlarge'`; `[concat('Standard_NC', '24ads_A100_v4')]` is
    `['Standard_NC24ads_A100_v4']`)."""
    if "(" not in text:
        return text  # every expression here is a call
    for pattern, compute in _EXPRESSIONS:

        def one(m: re.Match, compute=compute) -> str:
            try:
                return "'" + compute([a for g in m.groups() for a in _arguments(g)]) + "'"
            except (ValueError, IndexError):
                return m.group(0)

        text = pattern.sub(one, text)
    return text


@functools.lru_cache(maxsize=64)
def plain(text: str) -> str:
    """`text` as the tool that runs it reads it: escapes decoded (`decoded`), concatenated literals joined
    (`joined_literals`) and expressions of literals computed (`evaluated`). Each reader of a string (the types it
    asks for, its requests, its launches) starts here; cached, so a string is decoded once however many read it."""
    return joined_literals(evaluated(joined_literals(decoded(text))))


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value


# Placeholders another engine fills before the command runs: Jinja and Go templates (`{{ x }}`, Ansible, Argo,
# Helm), JSONata (`{% ... %}`), printf-style formats (`%s`, `{}`).
PLACEHOLDER = re.compile(r"\$\{[^}\s]{1,80}\}|\{\{[^}]{1,80}\}\}|\{%.{1,200}?%\}|%[sd]|\{\}")


def _literal(value: str) -> bool:
    return not any(c in value for c in "$`(") and not PLACEHOLDER.search(value) and bool(value.strip())


def _resolve(value: str, assigned: Mapping[str, list[str]], seen: frozenset[str] = frozenset()) -> bool:
    """Whether `value` is (or names a variable the text only ever sets to) a literal. A variable set from
    itself (`T="${T:-t3.small}"`) is what it was before, or its default."""
    v = _unquoted(value.strip())
    if _literal(v):
        return True
    m = _REFERENCE.match(v)
    if not m or len(seen) > 8:  # a chain of more variables than a script writes by hand: not read
        return False
    name, default = m.group("name"), m.group("default")
    values = [x for x in assigned.get(name, []) if name not in seen]
    if not values:
        return default is not None and _literal(_unquoted(default))
    return all(_resolve(x, assigned, seen | {name}) for x in values)


_COMMAND_END = re.compile(r"\n|;|&&|\|\|")  # what ends one shell command (a pipe joins two into one line)


def commands(text: str) -> list[str]:
    """The shell commands of `text`, one each: continued lines joined, split where a command ends."""
    return _COMMAND_END.split(re.sub(r"\\\r?\n", " ", text))


def calls_joined(text: str, blocks: bool = False) -> str:
    """`text` with the lines inside each parenthesised call joined, so a call over lines (an SDK call's
    arguments) is one command to the readers that take text a command at a time; with `blocks`, each braced
    block's lines too (a Terraform resource's attributes)."""
    opening, closing = ("({", ")}") if blocks else ("(", ")")
    if "\n" not in text or not any(c in text for c in opening):
        return text  # one line, or no call: nothing to join (most strings)
    out, depth = [], 0
    for c in text:
        depth = max(0, depth + (c in opening) - (c in closing))
        out.append(" " if c == "\n" and depth else c)
    return "".join(out)


def changes_template(command: str) -> bool:
    """Whether a command creates (or versions) a launch or instance template rather than launching one."""
    return bool(_CREATES_TEMPLATE.search(command))


def launches_from_template(command: str) -> bool:
    """Whether a command launches capacity (and so launches from a template it names), rather than creating,
    describing or changing the template itself."""
    return bool(_LAUNCH.search(command)) and not changes_template(command)


def _extent(text: str, m: re.Match) -> str:
    """The launch's own arguments: to the call's closing parenthesis for an SDK call (`run_instances(...)`, over
    lines), else to the end of the shell command (continued lines already joined)."""
    rest = text[m.end() :]
    rest = re.sub(r"^[\"']\s*\)", "", rest)  # `getattr(ec2, 'run_instances')(...)`: the call's own arguments follow
    if _SDK.match(m.group(0)):
        depth = 0
        for i, c in enumerate(rest):
            depth += (c == "(") - (c == ")")
            if depth < 0 or (depth == 0 and c == ")" and i):
                return rest[: i + 1]
        return rest
    return _COMMAND_END.split(rest, maxsplit=1)[0]


def _python(value: str) -> str:
    """A Python expression in the shell terms _resolve reads: a string literal stays, a bare name is a variable
    reference, the environment read is one (`os.getenv("T", "d")` is `${T:-d}`), anything else is computed."""
    v = value.strip()
    if v.startswith("$") or re.fullmatch(r"(['\"])[^'\"]*\1", v):  # a literal, whole
        return v
    env = _PY_ENV.match(v)
    if env:
        default = env.group("default")
        return "${" + env.group("name") + (f":-{default[1:-1]}" if default else "") + "}"
    return "${" + v + "}" if re.fullmatch(r"[A-Za-z_]\w*", v) else "$(" + v + ")"


# The AWS CDK's type of two enum constants (`ec2.InstanceType.of(ec2.InstanceClass.M7I, ec2.InstanceSize.LARGE)`;
# aws-cdk-lib aws_ec2, InstanceClass and InstanceSize): a literal, whose class and size evidence._enum_types reads.
CDK_OF = re.compile(
    r"(?:\w+\.)*InstanceType\.of\(\s*(?:\w+\.)*InstanceClass\.([A-Z][A-Z0-9_]*)\s*,\s*"
    r"(?:\w+\.)*InstanceSize\.([A-Z][A-Z0-9_]*)\s*\)"
)


def _readable(value: str, more: str, assigned: Mapping[str, list[str]], sdk: bool) -> bool:
    """Whether a launch's type argument is a literal (or resolves to one); one built by `+` is read only when
    every part is a literal (`'p5.' + '48xlarge'`; `'p5.' + size` is built at run time)."""
    if CDK_OF.fullmatch(value.strip()):
        return True
    if more.strip():
        parts = [value, *re.split(r"\s*\+\s*", more.strip().lstrip("+").strip())]
        return all(re.fullmatch(r"(['\"])[^'\"]*\1", x.strip()) for x in parts)
    return _resolve(_python(value) if sdk else value, assigned)


def unreadable_launches(text: str, env: Mapping[str, str] | None = None) -> list[str]:
    """Each launch in `text` whose type is built at run time (a substitution, or a variable neither the text
    nor `env`, the variables its resource gives it, sets to a literal), as `<flag> <value>`, each once."""
    text = plain(text)
    if not _LAUNCH.search(text):
        return []
    joined = re.sub(r"\\\r?\n", " ", text)
    assigned: dict[str, list[str]] = {k: [val] for k, val in (env or {}).items()}
    for m in _ASSIGN.finditer(joined):  # `name = value` with spaces is Python's (a shell forbids them)
        if m.group("py").strip() != m.group("py"):  # Python: the whole expression (`'egralx84.5p'[::-1]`)
            value = _python(joined[m.start("value") :].split("\n", 1)[0].split("#", 1)[0].strip().rstrip(";"))
        else:
            value = m.group("value")
        assigned.setdefault(m.group("name"), []).append(value)
    for m in _ASSIGN_DEFAULT.finditer(joined):
        assigned.setdefault(m.group("name"), []).append(m.group("value"))
    for m in _FOR.finditer(joined):
        assigned.setdefault(m.group("name"), []).extend(m.group("words").split() or ["$(unknown)"])
    out = []
    for launch in _LAUNCH.finditer(joined):
        sdk = bool(_SDK.match(launch.group(0)))
        args = _extent(joined, launch)
        typed = list(_TYPE_ARG.finditer(args))
        for m in typed:
            if m.group("call") or not _readable(m.group("value"), m.group("more") or "", assigned, sdk):
                out.append(f"{m.group(0).strip()} (a type built at run time: the pack cannot read it)")
        if sdk and not typed and "**" in args:  # `run_instances(**params)`: the type is in a mapping built elsewhere
            out.append(f"{launch.group(0)}(**...) (a type built at run time: the pack cannot read it)")
    return list(dict.fromkeys(out))
