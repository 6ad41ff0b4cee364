"""Create forms: the typed fields a page shows to compose a pool, as data.

Rules:
1. A form is data (``FormSpec`` of ``FormField``s) that a page renders; its fields are the
   parameters of the module's create route, and ``apidoc.form_params`` describes them for
   the API document.
2. Building a form reserves nothing: a suggested pool id is only a default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["FormField", "FormSpec", "pool_id_field", "pool_name_field"]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    label: str
    type: str = "text"  # text | select | textarea
    required: bool = False
    default: str = ""
    options: tuple[str, ...] = ()
    placeholder: str = ""
    help: str = ""

    def to_json(self) -> JSON:
        return {
            "name": self.name,
            "label": self.label,
            "type": self.type,
            "required": self.required,
            "default": self.default,
            "options": list(self.options),
            "placeholder": self.placeholder,
            "help": self.help,
        }


@dataclass(frozen=True, slots=True)
class FormSpec:
    mod_name: str
    title: str
    fields: tuple[FormField, ...]
    note: str = ""

    def to_json(self) -> JSON:
        return {
            "mod_name": self.mod_name,
            "title": self.title,
            "fields": [f.to_json() for f in self.fields],
            "note": self.note,
        }


def pool_name_field() -> FormField:
    return FormField("pool_name", "Pool name", required=True)


def pool_id_field(suggestion: str) -> FormField:
    return FormField(
        "pool_id",
        "Pool ID",
        required=True,
        default=suggestion,
        placeholder="800.0",
        help="<major>.<minor>; a free id is suggested",
    )
