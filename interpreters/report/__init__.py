"""`ssegrade report` without its command: run folders read (in a process of their own), their
documents folded task by task through `ssegrade.report`, and each format written from spools.

Interpreter layer, output side. It reads run folders alone: nothing here grades, serves or runs
a batch (an import contract says so); the command that drives it is `interpreters.cli.report`.
"""
