"""Hand-built PDFs for the parser's budgets: every page may point at one shared content stream."""

from __future__ import annotations

import zlib

from ai_agents.tests.knowledge_samples import pdf_serialize


def pdf_shared_stream(*, pages: int, stream_bytes: int, text: str = "Hola mundo") -> bytes:
    """A PDF of `pages` pages that all draw the same content stream of `stream_bytes`
    (Flate-compressed: a few KB on disk however large it is once decoded)."""
    unit = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET\n".encode()
    content = unit * max(1, stream_bytes // len(unit))
    packed = zlib.compress(content, 9)
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages))
    font = 4 + pages
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream",
    ]
    objects += [
        (
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>"
        ).encode()
    ] * pages
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return pdf_serialize(objects)
