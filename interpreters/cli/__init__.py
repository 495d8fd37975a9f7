"""The `ssegrade` command line: the console script (`entry`), the commands (`main` with
`evaluate` and the small ones; `batch`, `daemon`, `report`, `replay` loaded when asked for),
the options they share, and the live display of a check on a terminal.

Interpreter layer, the outermost: only here are arguments parsed, the API's errors mapped to
exit statuses and the verdict or the report printed on stdout.
"""
