"""A small HTML reader (stdlib html.parser) for asserting on rendered reports."""

from __future__ import annotations

from html.parser import HTMLParser


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element] = []
        self.text_parts: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.text_parts + [c.text for c in self.children])

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self) -> list[Element]:
        out = [self]
        for c in self.children:
            out += c.iter()
        return out

    def find_all(self, tag: str, cls: str | None = None, **attrs: str) -> list[Element]:
        return [e for e in self.iter() if e.tag == tag and (cls is None or cls in e.classes())
                and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def find(self, tag: str, cls: str | None = None, **attrs: str) -> Element:
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag} class={cls} {attrs}>"
        return found[0]


VOID = {"meta", "br", "img", "link", "input", "hr", "col", "source", "area", "base", "wbr"}


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(el)
        if tag not in VOID:
            self.cur = el

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.cur.children.append(Element(tag, {k: v or "" for k, v in attrs}, self.cur))

    def handle_endtag(self, tag: str) -> None:
        el: Element | None = self.cur
        while el is not None and el.tag != tag:
            el = el.parent
        if el is not None and el.parent is not None:
            self.cur = el.parent

    def handle_data(self, data: str) -> None:
        self.cur.text_parts.append(data)


def parse(html: str) -> Element:
    p = _Parser()
    p.feed(html)
    p.close()
    return p.root
