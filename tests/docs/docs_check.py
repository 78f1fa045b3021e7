"""Checks that keep the documentation honest (used by tests/docs and tests/jax).

options: docs/options.md against each command's --help, both ways.
links: every relative link in README.md and docs/*.md reaches a file, and
its #anchor a heading of that file.
"""
import os
import re
import subprocess

# An option line of --help: two spaces, an optional short alias, the long
# name; argparse and the C tables both write them so (continuation lines are
# indented further and never start with "--" at column 2).
OPTION_LINE = re.compile(r"^  (?:-\w, )?(--[\w-]+)")
FOR_CLAUSE = re.compile(r"\(for: ([^)]*)\)\s*$")
# A section of docs/options.md: "## `gdn-parity`", "## `gdn-fixture synth`".
DOC_SECTION = re.compile(r"^## `(gdn-[\w-]+(?: [\w-]+)?)`\s*$")
DOC_ROW = re.compile(r"^\| `(--[\w-]+)[^`]*` \|(.*)\|\s*$")


def help_options(text):
    """{option: commands or None} from a --help text; the commands are those
    of a trailing "(for: a, b)" (gdn-parity's table), None where absent."""
    out = {}
    for line in text.split("\n"):
        m = OPTION_LINE.match(line)
        if m:
            f = FOR_CLAUSE.search(line)
            out[m.group(1)] = tuple(c.strip() for c in f.group(1).split(",")) if f else None
    return out


def doc_sections(text):
    """{section: {option: commands or None}} from docs/options.md; the
    commands are the second column of a three-column row ("any": None)."""
    out, cur = {}, None
    for line in text.split("\n"):
        m = DOC_SECTION.match(line)
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        if line.startswith("#"):
            cur = None
            continue
        m = DOC_ROW.match(line)
        if m and cur is not None:
            cells = [c.strip() for c in m.group(2).split(" | ")]
            cmds = None
            if len(cells) >= 2 and cells[0] != "any":
                cmds = tuple(c.strip() for c in cells[0].split(","))
            if m.group(1) in cur:
                raise ValueError(f"docs/options.md: section {section_name(out, cur)}: {m.group(1)} listed twice")
            cur[m.group(1)] = cmds
    return out


def section_name(sections, sec):
    return next(k for k, v in sections.items() if v is sec)


def compare(section, documented, listed):
    """The differences between one section of the page and one --help, as
    messages naming the section and the option (empty: they agree)."""
    errs = []
    for o in sorted(set(listed) - set(documented)):
        errs.append(f"docs/options.md: {section}: {o} is in --help but not documented")
    for o in sorted(set(documented) - set(listed)):
        errs.append(f"docs/options.md: {section}: {o} is documented but --help does not list it")
    for o in sorted(set(listed) & set(documented)):
        if listed[o] is not None and documented[o] != listed[o]:
            errs.append(f"docs/options.md: {section}: {o} is documented for {documented[o]}, --help says {listed[o]}")
    return errs


def run_help(argv, env=None):
    p = subprocess.run(argv + ["--help"], capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} --help exited {p.returncode}: {p.stderr}")
    return p.stdout


def check_options(doc_text, helps):
    """helps: {section: --help text}; every section of the page must be one
    of them and each of them a section."""
    sections = doc_sections(doc_text)
    errs = [f"docs/options.md: no section `{s}`" for s in helps if s not in sections]
    errs += [f"docs/options.md: section `{s}` names no command with a --help" for s in sections if s not in helps]
    for s, text in helps.items():
        if s in sections:
            errs += compare(s, sections[s], help_options(text))
    return errs


# --- links -----------------------------------------------------------------

LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def strip_fences(text):
    out, inside = [], False
    for line in text.split("\n"):
        if FENCE.match(line.strip()):
            inside = not inside
            out.append("")
            continue
        out.append("" if inside else line)
    return out


def anchor_of(heading):
    """GitHub's anchor for a heading's text: lower case, punctuation but '-'
    and '_' dropped, spaces to '-'."""
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for line in strip_fences(open(path, encoding="utf-8").read()):
        m = re.match(r"^#{1,6} (.*?)\s*#*\s*$", line)
        if m:
            a = anchor_of(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
    return out


def check_links(root, files, texts=None):
    """Every relative link of `files` (paths under root): the file exists,
    and a #anchor names a heading of a Markdown target.  texts: {file:
    text} read instead of those files (the negative controls' plants)."""
    errs = []
    for rel in files:
        path = os.path.join(root, rel)
        text = (texts or {}).get(rel)
        if text is None:
            text = open(path, encoding="utf-8").read()
        for ln, line in enumerate(strip_fences(text), 1):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                file_part, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if os.path.commonpath([os.path.abspath(dest), os.path.abspath(root)]) != os.path.abspath(root):
                    errs.append(f"{rel}:{ln}: link {target}: outside the repository")
                elif not os.path.exists(dest):
                    errs.append(f"{rel}:{ln}: link {target}: no file {os.path.relpath(dest, root)}")
                elif frag and dest.endswith(".md") and frag not in anchors(dest):
                    errs.append(f"{rel}:{ln}: link {target}: no heading #{frag} in {os.path.relpath(dest, root)}")
    return errs


# Text that sends a reader outside the repository: the specs the project was
# built from are not part of it, and the docs must stand alone.
OUTSIDE = re.compile(r"shared/specs|\.\./shared/")


def check_outside(root, files, texts=None):
    """Every line of `files` that names a path outside the repository (a
    link or not: `shared/specs/x.md` in backticks sends a reader nowhere)."""
    errs = []
    for rel in files:
        text = (texts or {}).get(rel)
        if text is None:
            text = open(os.path.join(root, rel), encoding="utf-8").read()
        for ln, line in enumerate(text.split("\n"), 1):
            m = OUTSIDE.search(line)
            if m:
                errs.append(f"{rel}:{ln}: names {m.group(0)}..., which is not in the repository")
    return errs


def doc_files(root):
    docs = sorted(f for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    return ["README.md"] + ["docs/" + f for f in docs]
