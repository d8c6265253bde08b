"""Small real documents built in memory for the parser tests (no binary fixtures in git)."""

from __future__ import annotations

import io


def pdf_serialize(objects: list[bytes], *, header: bytes = b"%PDF-1.4\n") -> bytes:
    """A PDF file of these objects (numbered from 1, the first the catalog) with its xref."""
    out = io.BytesIO()
    out.write(header)
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: one Helvetica text line per entry, WinAnsi (latin-1) encoded."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids).encode()
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(pages))
    objects.append(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    for index, lines in enumerate(pages):
        content_id = page_ids[index] + 1
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % content_id
        )
        ops = [b"BT /F1 12 Tf 72 720 Td 14 TL"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(b"(" + escaped.encode("cp1252") + b") Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return pdf_serialize(objects, header=b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Bienvenidos a La Espiga.")
    document.add_heading("Servicios", level=1)
    document.add_paragraph("Horneamos pan todos los días.")
    document.add_heading("Pasteles", level=2)
    document.add_paragraph("Pedidos con 72 horas de anticipación.")
    document.add_paragraph("Tres leches", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Tamaño"
    table.cell(0, 1).text = "Precio"
    table.cell(1, 0).text = "Chico"
    table.cell(1, 1).text = "$480"
    document.add_heading("Contacto", level=1)
    document.add_paragraph("Calle Córdoba 118.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
