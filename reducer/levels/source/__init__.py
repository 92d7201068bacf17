"""The source level: the script's AST is shrunk directly; candidates run as scripts in the sandbox."""
