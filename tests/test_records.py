"""memlane.records behaves as the standard ``dataclasses`` for what memlane uses: each check runs
against both, so a difference between them fails here."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import typing
from typing import ClassVar

import pytest

from memlane import records

BOTH = pytest.mark.parametrize("dc", [records, dataclasses], ids=["records", "dataclasses"])


def make_classes(dc):
    @dc.dataclass
    class Note:
        name: str
        tags: list = dc.field(default_factory=list)
        weight: float = 1.0
        seen: int = dc.field(default=0, compare=False, hash=False)
        kind: ClassVar[str] = "note"

        def __post_init__(self) -> None:
            self.name = self.name.strip()

    @dc.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        label: str = dc.field(default="", compare=False, hash=False)

    @dc.dataclass
    class Outer:
        point: Point
        notes: list = dc.field(default_factory=list)
        table: dict = dc.field(default_factory=dict)

    return Note, Point, Outer


@BOTH
def test_init_fills_defaults_a_fresh_factory_value_and_runs_post_init(dc):
    Note, _, _ = make_classes(dc)
    a, b = Note("  deploy "), Note(name="ci", tags=["x"], weight=2.0)
    assert (a.name, a.tags, a.weight, a.seen) == ("deploy", [], 1.0, 0)
    assert (b.name, b.tags, b.weight) == ("ci", ["x"], 2.0)
    a.tags.append("y")
    assert Note("other").tags == []  # each record its own list
    assert Note.kind == "note" and [f.name for f in dc.fields(Note)] == ["name", "tags", "weight", "seen"]
    assert Note.weight == 1.0 and "tags" not in Note.__dict__  # as the standard module leaves them


@BOTH
def test_init_refuses_what_the_standard_one_refuses(dc):
    Note, _, _ = make_classes(dc)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        Note()
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Note("a", colour="red")
    with pytest.raises(TypeError, match="takes from 2 to 5 positional arguments but 6 were given"):
        Note("a", [], 1.0, 0, "extra")


@BOTH
def test_repr_and_eq_read_the_fields_and_leave_out_what_does_not_compare(dc):
    Note, Point, _ = make_classes(dc)
    assert repr(Note("a")).endswith("Note(name='a', tags=[], weight=1.0, seen=0)")
    assert Note("a", seen=3) == Note("a", seen=9) and Note("a") != Note("b")
    assert (Note("a") == "a") is False
    assert Point(1, 2, "p") == Point(1, 2, "q") and Point(1) != Point(2)


@BOTH
def test_frozen_records_are_read_only_and_hash_by_their_compared_fields(dc):
    Note, Point, _ = make_classes(dc)
    p = Point(1, 2)
    with pytest.raises(AttributeError):
        p.x = 3
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(AttributeError):
        p.other = 1
    assert hash(Point(1, 2, "a")) == hash(Point(1, 2, "b")) and len({Point(1), Point(1), Point(2)}) == 2

    @dc.dataclass
    class Pair:
        a: int
        b: str = ""

    with pytest.raises(TypeError, match="unhashable type: 'Pair'"):
        hash(Pair(1))  # compares by value and is not frozen: unhashable, as with dataclasses


@BOTH
def test_replace_asdict_and_copies(dc):
    Note, Point, Outer = make_classes(dc)
    note = Note("a", ["t"])
    moved = dc.replace(note, name="  b  ")
    assert (moved.name, moved.tags, note.name) == ("b", ["t"], "a")  # post_init ran again
    with pytest.raises(TypeError):
        dc.replace(note, colour="red")
    outer = Outer(Point(1, 2), [Point(3)], {"k": (Point(4), 5)})
    data = dc.asdict(outer)
    assert data == {"point": {"x": 1, "y": 2, "label": ""}, "notes": [{"x": 3, "y": 0, "label": ""}],
                    "table": {"k": ({"x": 4, "y": 0, "label": ""}, 5)}}
    data["notes"].append(1)
    assert len(outer.notes) == 1  # a copy, not the record's own list
    with pytest.raises(TypeError):
        dc.asdict(Outer)
    assert dc.is_dataclass(outer) and dc.is_dataclass(Outer) and not dc.is_dataclass(object())
    assert copy.deepcopy(outer) == outer


@records.dataclass(frozen=True)
class Stored:
    name: str
    weight: float = 1.0


def test_a_frozen_record_pickles_and_copies():
    record = Stored("a", 2.0)
    assert pickle.loads(pickle.dumps(record)) == record and copy.copy(record) == record


@BOTH
def test_methods_a_class_defines_itself_are_kept(dc):
    @dc.dataclass
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __eq__(self, other):
            return isinstance(other, Named) and other.name.lower() == self.name.lower()

        def __hash__(self):
            return hash(self.name.lower())

    assert repr(Named("A")) == "<A>" and Named("A") == Named("a") and len({Named("A"), Named("a")}) == 1


@BOTH
def test_definitions_the_standard_module_refuses_are_refused(dc):
    with pytest.raises(ValueError, match="mutable default"):
        @dc.dataclass
        class Shared:
            items: list = []  # noqa: RUF012 - the mistake under test
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @dc.dataclass
        class Order:
            a: int = 0
            b: int
    with pytest.raises(ValueError):
        dc.field(default=1, default_factory=int)
    with pytest.raises(TypeError):
        dc.fields(object())


def test_a_record_that_inherits_from_another_is_refused_rather_than_half_supported():
    @records.dataclass
    class Base:
        a: int

    with pytest.raises(TypeError, match="cannot inherit"):
        @records.dataclass
        class Child(Base):
            b: int = 0


def test_every_record_class_of_memlane_is_made_by_memlane_records():
    """One implementation for the package: a stray ``from dataclasses import dataclass`` would bring
    the standard module back into every fresh hook process."""
    import pathlib

    import memlane

    package = pathlib.Path(memlane.__file__).parent
    stray = [str(p.relative_to(package)) for p in package.rglob("*.py")
             if p.name != "records.py" and ("from dataclasses import" in p.read_text(encoding="utf-8")
                                            or "import dataclasses" in p.read_text(encoding="utf-8"))]
    assert stray == []


@BOTH
def test_a_field_may_bear_a_name_the_generated_init_uses_itself(dc):
    """``__init__`` is generated source: a field named ``MISSING`` (the sentinel of a default
    factory) or ``self`` must neither shadow what the source relies on nor fail to compile."""
    @dc.dataclass
    class Marker:
        MISSING: int = 0
        items: list = dc.field(default_factory=list)

    assert Marker().items == [] and Marker(MISSING=5).items == []

    @dc.dataclass(frozen=True)
    class Selfish:
        self: int
        other: str = ""

    assert Selfish(1).self == 1 and Selfish(self=2, other="x").other == "x"


@BOTH
def test_only_a_real_classvar_annotation_is_left_out(dc):
    @dc.dataclass
    class Odd:
        x: ClassVarious = 1  # noqa: F821 - a type that merely starts with "ClassVar"
        y: typing.ClassVar[int] = 2
        z: int = 3

    assert [f.name for f in dc.fields(Odd)] == ["x", "z"]


@BOTH
def test_asdict_converts_the_records_inside_a_named_tuple(dc):
    from typing import NamedTuple

    _, Point, _ = make_classes(dc)

    class Span(NamedTuple):
        start: object
        end: object

    @dc.dataclass
    class Holder:
        span: Span

    data = dc.asdict(Holder(Span(Point(1), Point(2))))
    assert data == {"span": ({"x": 1, "y": 0, "label": ""}, {"x": 2, "y": 0, "label": ""})}
    assert type(data["span"]) is Span


@BOTH
def test_match_args_a_class_sets_itself_are_kept(dc):
    @dc.dataclass
    class Pair:
        __match_args__ = ("b",)
        a: int
        b: int

    assert Pair.__match_args__ == ("b",)


@BOTH
def test_a_record_in_a_module_without_the_future_import_has_its_fields(dc):
    """Python 3.14 evaluates annotations lazily: without ``from __future__ import annotations`` a
    class's ``__dict__`` holds no ``__annotations__``, and a reader of that dict alone finds no
    field (passes on 3.11-3.13 either way; on 3.14 it is the difference)."""
    source = "@dc.dataclass\nclass Plain:\n    a: int\n    b: 'list[str]' = dc.field(default_factory=list)\n"
    scope = {"dc": dc}
    exec(compile(source, "<plain>", "exec", dont_inherit=True), scope)  # noqa: S102 - the module under test
    Plain = scope["Plain"]
    assert [f.name for f in dc.fields(Plain)] == ["a", "b"] and Plain(1).b == []


@BOTH
def test_a_class_s_init_works_however_it_is_first_reached(dc):
    """memlane's compiles a class's ``__init__`` at its first instance (a fresh process builds
    only some of the classes it creates): first through a subclass, from threads at once, with
    bad arguments first — each instance is as the standard module makes it."""
    import threading

    Note, Point, _ = make_classes(dc)

    class Tagged(Note):
        pass

    assert Tagged(" a ").name == "a" and Note(" b ", weight=2.0) == Note("b", [], 2.0)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()
    made, errors = [], []

    def build(n):
        try:
            made.append(Point(n, y=n))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted((p.x, p.y) for p in made) == [(n, n) for n in range(8)]
    if dc is records:  # after the first instance, the class's own compiled __init__ answers
        assert Point.__init__.__code__.co_varnames[:3] == ("self", "x", "y")


@BOTH
def test_asdict_keeps_immutable_leaves_equal_and_copies_mutable_ones(dc):
    """Strings, numbers, enums and paths come back equal (memlane's returns them as they are,
    without ``copy``); anything else is a deep copy, as the standard module makes it."""
    import enum
    from pathlib import Path

    class Colour(enum.Enum):
        RED = 1

    @dc.dataclass
    class Leafy:
        path: Path
        colour: Colour
        blob: bytes
        rows: set

    leafy = Leafy(Path("/tmp/x"), Colour.RED, b"ab", {1, 2})
    data = dc.asdict(leafy)
    assert data == {"path": Path("/tmp/x"), "colour": Colour.RED, "blob": b"ab", "rows": {1, 2}}
    data["rows"].add(3)
    assert leafy.rows == {1, 2}  # a set is mutable: copied
