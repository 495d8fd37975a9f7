"""The application layer: one grading on this machine, from a `Request` to a `Graded` record.

Above the real interpreter (`interpreters.real`), below the commands and the features that
grade (`interpreters.cli`, `interpreters.daemon`, `interpreters.batch`): the one set-up
(`setup/`), the grading entry (`grading.py`: `grade`, and its convenience `grade_patch`) and
trace recording (`trace.py`).
"""
