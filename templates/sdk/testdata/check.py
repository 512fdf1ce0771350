# Parses and compiles Python files and reports syntax errors and any name PWNED in the code
# (outside string literals and comments). Usage: python3 check.py <file>...
import ast
import sys

bad = []
for f in sys.argv[1:]:
    with open(f, encoding="utf-8") as fh:
        src = fh.read()
    try:
        tree = ast.parse(src, f)
        compile(tree, f, "exec")
    except (SyntaxError, ValueError) as e:
        bad.append(f"{f}: {e!r}")
        continue
    for n in ast.walk(tree):
        name = getattr(n, "id", None) or getattr(n, "attr", None) or getattr(n, "arg", None)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = n.name
        if name == "PWNED":
            bad.append(f"{f}: PWNED is code at line {n.lineno}: {ast.get_source_segment(src, n)!r}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
