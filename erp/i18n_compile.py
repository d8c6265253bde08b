"""Compiles the translations (locale/*/LC_MESSAGES/*.po -> .mo) with Babel, no GNU gettext.

`python -m erp.i18n_compile` (what `make messages` runs) writes every .mo next to its .po.
`python -m erp.i18n_compile --check` writes nothing and exits 1 when a .mo is missing or holds
other messages than its .po compiles to (the .mo files are committed: a fresh clone and CI must
not need gettext). Extracting new strings with `manage.py makemessages` does need GNU gettext.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

BASE_DIR = Path(__file__).resolve().parent.parent

MessageKey = tuple[object, str | None]


def po_files(base_dir: Path = BASE_DIR) -> list[Path]:
    return sorted((base_dir / "locale").glob("*/LC_MESSAGES/*.po"))


def read_catalog(po_path: Path) -> Catalog:
    with po_path.open("rb") as handle:
        return read_po(handle, locale=po_path.parent.parent.name)


def compile_po(po_path: Path) -> bytes:
    """The .mo a .po compiles to (fuzzy and untranslated entries left out, as msgfmt does)."""
    buffer = io.BytesIO()
    write_mo(buffer, read_catalog(po_path), use_fuzzy=False)
    return buffer.getvalue()


def messages_of(mo_bytes: bytes) -> dict[MessageKey, object]:
    """What a .mo translates, without its header (generator and dates differ by tool)."""
    catalog = read_mo(io.BytesIO(mo_bytes))
    # A plural message's id is a list (singular, plural): a tuple, to be a key.
    return {
        (tuple(m.id) if isinstance(m.id, list | tuple) else m.id, m.context): m.string
        for m in catalog
        if m.id
    }


def compile_all(base_dir: Path = BASE_DIR) -> list[Path]:
    written = []
    for po_path in po_files(base_dir):
        mo_path = po_path.with_suffix(".mo")
        mo_path.write_bytes(compile_po(po_path))
        written.append(mo_path)
    return written


def stale(base_dir: Path = BASE_DIR) -> list[str]:
    """One line per .mo that is missing or differs from what its .po compiles to."""
    problems = []
    for po_path in po_files(base_dir):
        mo_path = po_path.with_suffix(".mo")
        rel = mo_path.relative_to(base_dir)
        if not mo_path.exists():
            problems.append(f"{rel}: missing")
            continue
        expected = messages_of(compile_po(po_path))
        actual = messages_of(mo_path.read_bytes())
        if expected != actual:
            changed = sorted(
                str(key[0])
                for key in expected.keys() | actual.keys()
                if expected.get(key) != actual.get(key)
            )
            problems.append(f"{rel}: out of date ({len(changed)} messages, e.g. {changed[0]!r})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m erp.i18n_compile", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report stale .mo files")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        for problem in problems:
            print(problem)
        if problems:
            print("run `make messages` and commit the .mo files")
            return 1
        print(f"translations: {len(po_files())} catalogs up to date")
        return 0
    for mo_path in compile_all():
        print(f"compiled {mo_path.relative_to(BASE_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
