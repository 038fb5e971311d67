// Validate KQL texts with Kusto.Language, Microsoft's own parser and semantic
// checker (npm @kusto/language-service-next, pinned in package.json).
//
// stdin:  {"database": NAME, "tables": {NAME: [{"name", "type"}, ...]},
//          "queries": [{"name": ..., "text": ...}, ...]}
// stdout: [{"name": ..., "errors": [{"code", "message", "line", "text"}]}]
// Only diagnostics of severity Error count: a syntax error, an unknown name
// or a type mismatch are all errors to Kusto.Language.
'use strict';
require('@kusto/language-service-next/bridge.js');
require('@kusto/language-service-next/Kusto.Language.Bridge.js');

const Symbols = Kusto.Language.Symbols;

function readStdin() {
    return require('fs').readFileSync(0, 'utf8');
}

function globalsFor(spec) {
    const tables = Object.entries(spec.tables).map(([name, columns]) => {
        const schema = '(' + columns.map(c => `['${c.name}']:${c.type}`).join(', ') + ')';
        return new Symbols.TableSymbol.$ctor7(name, schema, null);
    });
    const database = new Symbols.DatabaseSymbol.$ctor1(spec.database, tables, false);
    return Kusto.Language.GlobalState.Default.WithDatabase(database);
}

function lineOf(text, offset) {
    return text.slice(0, offset).split('\n').length;
}

function validate(globals, query) {
    const code = Kusto.Language.KustoCode.ParseAndAnalyze(query.text, globals);
    const errors = Bridge.toArray(code.GetDiagnostics())
        .filter(d => d.Severity === 'Error')
        .map(d => ({
            code: d.Code,
            message: d.Message,
            line: lineOf(query.text, d.Start),
            text: query.text.substr(d.Start, Math.max(d.Length, 1)),
        }));
    return {name: query.name, errors};
}

const spec = JSON.parse(readStdin());
const globals = globalsFor(spec);
process.stdout.write(JSON.stringify(spec.queries.map(q => validate(globals, q))));
