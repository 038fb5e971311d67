"""The local query engine (scripts/query) held to the bounds issue 42 set
it: at most 1,500 lines, no module over 400, no import cycle among its
modules (imports inside functions included), and no process or thread
started beside the command, as the Parquet cache's background builder
was. Its one cache folder is asserted where a fresh home is queried
(test_query_index.py)."""
import ast

from tests.support.helpers import REPO

ENGINE = REPO / 'scripts' / 'query'
MODULES = {path.stem: path for path in sorted(ENGINE.glob('*.py'))}
MOST_LINES, MOST_MODULE_LINES = 1500, 400
# What starts a process or a thread, or imports a module by a computed name
# (an import this test could not see).
STARTERS = {'subprocess', 'multiprocessing', 'threading', 'concurrent',
            'pty', '_thread'}
STARTING_CALLS = {'fork', 'forkpty', 'system', 'popen', 'posix_spawn',
                  'posix_spawnp', 'spawnl', 'spawnv', 'spawnlp', 'spawnvp',
                  'execv', 'execvp', 'execve', 'execl', 'import_module',
                  '__import__'}


def tree(name: str) -> ast.AST:
    return ast.parse(MODULES[name].read_text(), str(MODULES[name]))


def engine_imports(name: str) -> set[str]:
    """The engine's modules that module *name* imports, anywhere in it."""
    found = set()
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == 'scripts.query':
                found.update(alias.name for alias in node.names)
            elif node.module.startswith('scripts.query.'):
                found.add(node.module.split('.')[2])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split('.')[2] for alias in node.names
                         if alias.name.startswith('scripts.query.'))
    return found & MODULES.keys()


def test_the_engine_stays_within_its_size():
    sizes = {name: len(path.read_text().splitlines())
             for name, path in MODULES.items()}
    assert sum(sizes.values()) <= MOST_LINES, sizes
    assert max(sizes.values()) <= MOST_MODULE_LINES, sizes


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of *graph* as the modules along it, or None."""
    done, path = set(), []

    def visit(name):
        if name in path:
            return path[path.index(name):] + [name]
        if name in done:
            return None
        path.append(name)
        for imported in sorted(graph[name]):
            found = visit(imported)
            if found:
                return found
        path.pop()
        done.add(name)
        return None
    for name in sorted(graph):
        found = visit(name)
        if found:
            return found
    return None


def test_no_module_of_the_engine_imports_itself_round_a_circle():
    graph = {name: engine_imports(name) for name in MODULES}
    assert graph['runner'] >= {'local', 'cloud'}   # inside a function
    assert cycle(graph) is None, ' -> '.join(cycle(graph))


def test_the_cycle_finder_finds_one():
    assert cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c',
                                                           'a']
    assert cycle({'a': {'b'}, 'b': set()}) is None


def test_the_engine_starts_no_process_and_no_thread():
    for name in MODULES:
        for node in ast.walk(tree(name)):
            if isinstance(node, ast.Import):
                imported = {alias.name.split('.')[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported = {(node.module or '').split('.')[0]} | {
                    alias.name for alias in node.names}
            else:
                imported = set()
            assert not imported & STARTERS, (name, node.lineno)
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(
                    node.func, ast.Attribute) else getattr(node.func, 'id', '')
                assert called not in STARTING_CALLS, (name, node.lineno)
