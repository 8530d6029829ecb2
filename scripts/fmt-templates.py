#!/usr/bin/env python3
"""Format the Rust templates (templates/**/*.rs.tera) with rustfmt.

Tera tags are not Rust, so each is swapped for a placeholder first: `{{ expr }}` for an
identifier as long as the value it has in the Memcached example (so lines wrap as they will
in the example project), a tag alone on its line for a `// QBLOCK` comment, any other tag for
an identifier. rustfmt runs on the result, and the tags are put back.

Usage: scripts/fmt-templates.py [--check] [FILE...]
"""
import re
import subprocess
import tempfile
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The Memcached example's value lengths, so placeholders take the room the values will.
LENGTHS = {
    "kind": 9, "plural": 10, "singular": 9, "kind_snake": 9, "kind_screaming": 9,
    "kind_kebab": 9, "qualified_group": 17, "group_module": 5, "version": 8,
    "project_name": 18, "crate_name": 18, "port_name": 9, "short_name": 2,
    "operand.image": 27, "operand.containerPort": 5, "operand.runAsUser": 4,
    "leader_election_id": 30, "year": 4, "owner": 10,
}
TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)


def placeholder(i, expr):
    name = expr.strip("{}% -").split("|")[0].strip()
    length = max(LENGTHS.get(name, 6), len(f"Q{i}z"))
    # Same case as the value, so that rustfmt sorts imports the way it will in the example.
    first = "Q" if name in ("kind", "kind_screaming") else "q"
    return f"{first}{i}" + "z" * (length - len(f"Q{i}"))


def encode(text):
    tags = {}
    out_lines = []
    counter = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if TAG.fullmatch(stripped) and stripped.startswith("{%"):
            key = f"// QBLOCK{counter}"
            tags[key] = line
            counter += 1
            out_lines.append(key)
            continue
        m = re.match(r"^(\{%.*?%\})(.*)$", line)
        if m and m.group(1).startswith("{% include"):
            key = f"// QBLOCK{counter}"
            tags[key] = m.group(1) + "\x00"
            counter += 1
            out_lines.append(key)
            line = m.group(2)

        def sub(m):
            nonlocal counter
            tag = m.group(0)
            token = placeholder(counter, tag)
            if "json_encode" in tag:
                token = '"' + token + '"'
            counter += 1
            tags[token] = tag
            return token

        out_lines.append(TAG.sub(sub, line))
    return "\n".join(out_lines), tags


def decode(text, tags):
    lines = []
    for line in text.split("\n"):
        key = line.strip()
        if key in tags and key.startswith("// QBLOCK"):
            lines.append(tags[key])
            continue
        lines.append(line)
    text = "\n".join(lines).replace("\x00\n", "")
    for token, tag in sorted(tags.items(), key=lambda kv: -len(kv[0])):
        if not token.startswith("// QBLOCK"):
            # `{{{` would not parse: keep a space, which a `{{-` tag trims away again.
            text = text.replace("{" + token, "{ " + tag) if tag.startswith("{{-") else text
            text = text.replace(token, tag)
    return text


def main():
    check = "--check" in sys.argv
    files = [Path(a) for a in sys.argv[1:] if a != "--check"] or sorted(ROOT.glob("templates/**/*.rs.tera"))
    bad = 0
    for path in files:
        if "@" in path.name:
            continue  # fragments are formatted where they land
        original = path.read_text()
        # The owner header (`{# owner: … #}`) renders to nothing: set aside, put back.
        header = re.match(r"\{#.*?#\}", original, re.S)
        header = header.group(0) if header else ""
        encoded, tags = encode(original[len(header):])
        # Outside the repository: memop's own rustfmt.toml is not the generated projects'.
        result = subprocess.run(["rustfmt", "--edition", "2024", "--emit", "stdout", "--quiet"],
                                input=encoded, capture_output=True, text=True, cwd=tempfile.gettempdir())
        if result.returncode != 0:
            print(f"{path}: rustfmt failed:\n{result.stderr}", file=sys.stderr)
            bad += 1
            continue
        formatted = header + decode(result.stdout, tags)
        if formatted != original:
            bad += 1
            if check:
                print(f"would reformat {path.relative_to(ROOT)}")
            else:
                path.write_text(formatted)
                print(f"formatted {path.relative_to(ROOT)}")
    sys.exit(1 if (check and bad) else 0)


if __name__ == "__main__":
    main()
