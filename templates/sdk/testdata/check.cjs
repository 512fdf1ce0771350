// Parses JavaScript and TypeScript files with TypeScript's parser and reports syntax errors
// and any identifier PWNED in the code (outside string literals and comments).
// Usage: node check.cjs <path of typescript.js> <file>...
const fs = require("fs");
const ts = require(process.argv[2]);
const bad = [];
for (const f of process.argv.slice(3)) {
  const text = fs.readFileSync(f, "utf8");
  const kind = f.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true, kind);
  const at = (pos) => JSON.stringify(text.slice(Math.max(0, pos - 80), pos + 80));
  for (const d of sf.parseDiagnostics) {
    bad.push(`${f}: syntax error: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")} near ${at(d.start)}`);
  }
  const walk = (n) => {
    if ((ts.isIdentifier(n) || ts.isPrivateIdentifier(n)) && n.text === "PWNED") {
      bad.push(`${f}: PWNED is code near ${at(n.getStart())}`);
    }
    ts.forEachChild(n, walk);
  };
  walk(sf);
}
if (bad.length) {
  console.log(bad.join("\n"));
  process.exit(1);
}
