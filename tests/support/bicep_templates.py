"""The Bicep files read with pycep-parser (no Bicep compiler can be installed
here), and just enough evaluation of their expressions to compare what they
declare with the schema file."""
import json
import re
from functools import cache
from pathlib import Path

from pycep import BicepParser

from tests.support.helpers import REPO

BICEP = REPO / 'bicep'
SCHEMA_FILE = BICEP / 'results_schema.json'


@cache
def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text())


@cache
def template(relative: str) -> 'Template':
    return Template(BICEP / relative)


class Unresolved(Exception):
    pass


class Template:
    """One parsed .bicep file, and just enough evaluation of its expressions
    (variables, loops, property access, string interpolation, loadJsonContent
    and loadTextContent) to compare what it declares with the schema file."""

    def __init__(self, path: Path):
        self.path = path
        self.doc = BicepParser().parse(file_path=path)

    # pycep leaves out the sections a file does not have.
    def section(self, name: str) -> dict:
        return self.doc.get(name, {})

    @property
    def parameters(self) -> dict:
        return self.section('parameters')

    @property
    def variables(self) -> dict:
        return self.section('variables')

    def resources(self, type_: str) -> dict:
        return {name: res for name, res in self.section('resources').items()
                if res['type'] == type_}

    def only(self, type_: str) -> tuple[str, dict]:
        found = self.resources(type_)
        assert len(found) == 1, f'{self.path.name}: {list(found)} of {type_}'
        return next(iter(found.items()))

    def resolve(self, value, scope=None):
        scope = scope or {}
        if isinstance(value, str):
            if value in scope:
                return scope[value]
            if value in self.variables:
                return self.resolve(self.variables[value]['value'], scope)
            return self.interpolate(value, scope)
        if isinstance(value, list):
            return [self.resolve(item, scope) for item in value]
        if not isinstance(value, dict):
            return value
        # An ARM property may be called `operator` too (alert criteria).
        if isinstance(value.get('function'), dict):
            return self.call(value['function'])
        if isinstance(value.get('operator'), dict):
            if value['operator']['type'] != 'property_accessor':
                raise Unresolved(value)
            root, *keys = accessor_path(value)
            found = self.resolve(root, scope)
            for key in keys:
                found = found[key]
            return found
        if 'loop_type' in value:
            detail = value['loop_type']['detail']
            items = self.resolve(detail['array_name'], scope)
            return [self.resolve(value['config'],
                                 {**scope, detail['item_name']: item})
                    for item in items]
        return {self.interpolate(key.strip("'"), scope): self.resolve(v, scope)
                for key, v in value.items()}

    def interpolate(self, text: str, scope: dict) -> str:
        def one(match):
            root, *keys = match.group(1).split('.')
            found = self.resolve(root, scope)
            for key in keys:
                found = found[key]
            if not isinstance(found, str):
                raise Unresolved(match.group(0))
            return found
        unescaped = re.sub(r"\\(['n\\$])",
                           lambda m: '\n' if m.group(1) == 'n' else m.group(1),
                           text)
        return re.sub(r'\$\{([\w.]+)\}', one, unescaped)

    def loaded_file(self, function: dict) -> Path:
        return (self.path.parent /
                function['parameters']['file_path']).resolve()

    def call(self, function: dict):
        if function['type'] == 'load_json_content':
            return json.loads(self.loaded_file(function).read_text())
        if function['type'] == 'load_text_content':
            return self.loaded_file(function).read_text()
        raise Unresolved(function)


def is_accessor(value) -> bool:
    return (isinstance(value, dict) and
            value.get('operator', {}).get('type') == 'property_accessor')


def accessor_path(value) -> list:
    """`a.b.c` as ['a', 'b', 'c'] (pycep nests property access)."""
    operands = value['operator']['operands']
    path = []
    for side in (operands['operand_1'], operands['operand_2']):
        path += accessor_path(side) if is_accessor(side) else [side]
    return path


def body(resource: dict) -> dict:
    """A resource's or module's properties, under any `if (...)`."""
    config = resource['config']
    return config['config'] if 'condition' in config else config


def workbook_content() -> dict:
    tpl = template('modules/workbook.bicep')
    _, workbook = tpl.only('Microsoft.Insights/workbooks')
    serialized = body(workbook)['properties']['serializedData']['function']
    assert serialized['type'] == 'string'
    return tpl.resolve(serialized['parameters']['value_to_convert'])
