"""Zip-packaged files built in the tests: PPTX written by python-pptx, ODT/ODP and EPUB put together by hand (their
XML as the specifications lay it out), and the hostile variants of each (padded, with many parts, with a DTD)."""

from __future__ import annotations

import io
import zipfile

ODF_NAMESPACES = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
    ' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    ' xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"'
    ' xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"'
    ' xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"'
    ' xmlns:dc="http://purl.org/dc/elements/1.1/"'
)
ODF_MIMETYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "odp": "application/vnd.oasis.opendocument.presentation",
}
# What a DTD can do to a parser that expands entities: 10**9 "lol"s from a few hundred bytes.
BILLION_LAUGHS = "<!DOCTYPE lolz [<!ENTITY lol0 \"lol\">" + "".join(
    f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
) + "]>"
EXTERNAL_ENTITY = '<!DOCTYPE x [<!ENTITY secret SYSTEM "file:///etc/passwd">]>'


def zip_bytes(parts: dict[str, str | bytes]) -> bytes:
    """A zip of ``parts`` (name -> content), deflated; a ``mimetype`` part first and stored, as ODF and EPUB
    require."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        if "mimetype" in parts:
            archive.writestr("mimetype", parts["mimetype"], compress_type=zipfile.ZIP_STORED)
        for name, content in parts.items():
            if name != "mimetype":
                archive.writestr(name, content)
    return out.getvalue()


def parts_of(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def padded(data: bytes, padding: int = 0, extra_parts: int = 0) -> bytes:
    """``data`` (a zip) with a part of ``padding`` zero bytes (a small file that decompresses to a lot) and
    ``extra_parts`` empty parts."""
    parts: dict[str, str | bytes] = dict(parts_of(data))
    if padding:
        parts["padding.bin"] = b"\0" * padding
    parts.update({f"extra/{i}.txt": b"" for i in range(extra_parts)})
    return zip_bytes(parts)


def pptx_bytes(core_title: str | None = "Deck Title") -> bytes:
    """A three-slide deck: a title slide whose title shape is drawn last and a grouped text box, a slide with
    a title, bullets (one with a line break), a table with merged cells and speaker notes, and an untitled slide."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    deck.core_properties.title = core_title or ""
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Opening"
    first.placeholders[1].text = "A subtitle"
    group = first.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(6), Inches(3), Inches(1)).text_frame.text = "Grouped words"
    title = first.shapes.title._element
    tree = title.getparent()
    tree.remove(title)
    tree.append(title)  # drawn last, read first
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Agenda"
    body = second.placeholders[1].text_frame
    body.text = "First point\vcontinued"
    body.add_paragraph().text = "Second point"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(5), Inches(4), Inches(1)).table
    table.cell(0, 0).text = "Phase"
    table.cell(0, 1).text = "Owner"
    table.cell(1, 0).merge(table.cell(1, 1))
    table.cell(1, 0).text = "Merged cell"
    second.notes_slide.notes_text_frame.text = "Speaker notes here"
    third = deck.slides.add_slide(deck.slide_layouts[6])
    third.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "No title here"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


ODT_BODY = (
    '<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><text:p>DELETED WORDS</text:p>'
    "</text:deletion></text:changed-region></text:tracked-changes>"
    "<text:table-of-content><text:index-body><text:p>Introduction 1</text:p></text:index-body></text:table-of-content>"
    '<text:h text:outline-level="1">Introduction</text:h>'
    "<text:p>First   paragraph\n  with<text:s text:c=\"2\"/>spaces<text:note><text:note-citation>1</text:note-citation>"
    "<text:note-body><text:p>A footnote.</text:p></text:note-body></text:note> and more.</text:p>"
    "<text:list><text:list-item><text:p>Item one</text:p></text:list-item>"
    "<text:list-item><text:p>Item <text:span>two</text:span></text:p></text:list-item></text:list>"
    '<text:h text:outline-level="2">Details <text:span>here</text:span></text:h>'
    "<table:table><table:table-row><table:table-cell><text:p>Cell A</text:p></table:table-cell>"
    "<table:table-cell><text:p>Cell B</text:p></table:table-cell></table:table-row></table:table>"
    "<text:p>Line<text:line-break/>break<office:annotation><dc:creator>Ann</dc:creator><text:p>A COMMENT</text:p>"
    "</office:annotation></text:p>"
    '<text:h text:outline-level="8">Deep</text:h>'
)
ODP_BODY = (
    '<draw:page draw:name="one">'
    '<draw:frame presentation:class="subtitle"><draw:text-box><text:p>Sub one</text:p></draw:text-box></draw:frame>'
    '<draw:frame presentation:class="title"><draw:text-box><text:p>Welcome</text:p></draw:text-box></draw:frame>'
    '<draw:frame presentation:class="page-number"><draw:text-box><text:p>1</text:p></draw:text-box></draw:frame>'
    '<presentation:notes><draw:page-thumbnail/><draw:frame presentation:class="notes"><draw:text-box>'
    "<text:p>Say hello</text:p></draw:text-box></draw:frame></presentation:notes></draw:page>"
    '<draw:page draw:name="two">'
    '<draw:frame presentation:class="title"><draw:text-box><text:p>Plan</text:p></draw:text-box></draw:frame>'
    '<draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item><text:p>Step one</text:p>'
    "</text:list-item></text:list></draw:text-box></draw:frame>"
    "<draw:frame><table:table><table:table-row><table:table-cell><text:p>T1</text:p></table:table-cell>"
    "</table:table-row></table:table></draw:frame></draw:page>"
)


def odf_bytes(kind: str, body: str, title: str | None = None, prolog: str = "",
              manifest_entry: str = "") -> bytes:
    """An ODF package (``kind`` "odt" or "odp") whose body is ``body``; ``prolog`` goes before content.xml's
    root element (a DTD, say)."""
    element = {"odt": "text", "odp": "presentation"}[kind]
    content = (f'<?xml version="1.0" encoding="UTF-8"?>{prolog}<office:document-content {ODF_NAMESPACES}'
               f' office:version="1.3"><office:body><office:{element}>{body}</office:{element}></office:body>'
               "</office:document-content>")
    meta = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-meta {ODF_NAMESPACES}><office:meta>'
            f"{'' if title is None else f'<dc:title>{title}</dc:title>'}</office:meta></office:document-meta>")
    content_entry = manifest_entry or ('<manifest:file-entry manifest:full-path="content.xml"'
                                       ' manifest:media-type="text/xml"/>')
    manifest = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest'
                ' xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
                f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{ODF_MIMETYPES[kind]}"/>'
                f"{content_entry}"
                '<manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>'
                "</manifest:manifest>")
    return zip_bytes({"mimetype": ODF_MIMETYPES[kind], "META-INF/manifest.xml": manifest, "content.xml": content,
                      "meta.xml": meta})


XHTML_DOCTYPE = ('<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN"'
                 ' "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">')


def xhtml(body: str, doctype: str = XHTML_DOCTYPE) -> str:
    return ('<?xml version="1.0" encoding="utf-8"?>' + doctype + '<html xmlns="http://www.w3.org/1999/xhtml">'
            "<head><title>Running head</title><style>p { margin: 0 }</style></head>"
            f"<body>{body}</body></html>")


EPUB_CHAPTERS = {
    "text/one.xhtml": xhtml("<h1>Chapter One</h1><p>It was a dark&nbsp;night &amp; cold.</p>"
                            "<h2>Part <em>A</em></h2><p>More words.</p><script>var HIDDEN = 1;</script>"),
    "text/chapter two.xhtml": xhtml("<section><h1>Chapter Two</h1><p>The end.</p></section>"),
}


def epub_bytes(title: str | None = "Book Title", chapters: dict[str, str] | None = None,
               extra: dict[str, str] | None = None, opf_prolog: str = "") -> bytes:
    """An EPUB 3 whose manifest lists the chapters in the reverse of their spine order (the spine is what is
    read), one of them under a percent-encoded name, with a style sheet and a nav document outside the spine."""
    chapters = EPUB_CHAPTERS if chapters is None else chapters
    names = list(chapters)
    items = "".join(
        f'<item id="c{i}" href="{name.replace(" ", "%20")}" media-type="application/xhtml+xml"/>'
        for i, name in reversed(list(enumerate(names)))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(names)))
    opf = (f'<?xml version="1.0" encoding="UTF-8"?>{opf_prolog}'
           '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
           '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:x</dc:identifier>'
           f"{'' if title is None else f'<dc:title>{title}</dc:title>'}<dc:language>en</dc:language></metadata>"
           f'<manifest>{items}<item id="css" href="style.css" media-type="text/css"/>'
           '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/></manifest>'
           f"<spine>{spine}</spine></package>")
    container = ('<?xml version="1.0"?><container version="1.0"'
                 ' xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                 '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                 "</rootfiles></container>")
    parts: dict[str, str | bytes] = {"mimetype": "application/epub+zip", "META-INF/container.xml": container,
                                     "OEBPS/content.opf": opf, "OEBPS/style.css": "p { margin: 0 }",
                                     "OEBPS/nav.xhtml": xhtml("<nav><ol><li>NAV ENTRY</li></ol></nav>")}
    parts.update({f"OEBPS/{name}": text for name, text in chapters.items()})
    parts.update(extra or {})
    return zip_bytes(parts)
