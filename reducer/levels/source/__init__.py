"""The source level: the script's AST is shrunk directly; candidates run as scripts in the sandbox
(`level.SourceLevel`, the level in a script's chain; `passes`, `representation`)."""
