"""The acceptance package's modules import one another without a circle:
each module's imports of its neighbours, wherever in the module they stand
(at its top or inside a function), form no cycle."""
import ast

from tests.support.helpers import REPO

PACKAGE = REPO / 'scripts' / 'acceptance'


def neighbours(path) -> set[str]:
    """The package's modules that *path* imports (`from . import x`,
    `from .x import y`, `from scripts.acceptance.x import y`)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1 and node.module:
            names.add(node.module.split('.')[0])
        elif node.level == 1:
            names.update(alias.name for alias in node.names)
        elif (node.module or '').startswith('scripts.acceptance.'):
            names.add(node.module.split('.')[2])
    return names


def test_the_acceptance_modules_import_one_another_without_a_circle():
    graph = {path.stem: neighbours(path) for path in PACKAGE.glob('*.py')}
    done, path = set(), []

    def visit(module):
        assert module not in path, ' -> '.join(path + [module])
        if module in done or module not in graph:
            return
        path.append(module)
        for imported in sorted(graph[module]):
            visit(imported)
        path.pop()
        done.add(module)
    for module in sorted(graph):
        visit(module)
    assert 'health' in graph['verdicts']       # the graph was read
